"""Benchmark of the graph viewer on real HLO: a JAX transformer training step (attention, MLP,
layer norm; forward, backward and SGD update; one ``jax.named_scope`` per layer), unrolled to
about 2,000, 10,000 and 20,000 optimized-HLO instructions, rendered in headless Chromium.
Sizes above 25,000 take the step's HLO as lowered, before XLA's passes (an optimizing CPU
compile of that many layers takes too long here): 350000 gives about 348,000 instructions.

    .venv/bin/python bench/graph_viewer.py [--sizes 2000,10000,20000,350000] [--screenshots DIR]

Prints, per module: instructions, parse time (Python; wall clock and, in parentheses, CPU),
HTML build time (the same two), HTML size, time from navigation to
``data-ready`` (first paint of the collapsed overview), visible boxes at first, expand-all time
(layout + paint of every node) and the time of one redraw with everything expanded. Compiled
modules are cached in the temp directory, so a rerun skips the XLA compiles.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import results

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
CACHE = Path(tempfile.gettempdir()) / "xlanb-bench-graph-viewer"

READY_PROBE = """
window.__xlanbReady = null;
new MutationObserver((changes, observer) => {
  for (const change of changes) {
    if (change.target.getAttribute && change.target.getAttribute("data-ready") === "true") {
      window.__xlanbReady = performance.now(); observer.disconnect(); return;
    }
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-ready"]});
"""

EXPAND_ALL = """async () => {
  const viewer = document.querySelector(".xlanb-graph").xlanbViewer;
  const frame = () => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const start = performance.now();
  viewer.expandAll();
  viewer.draw();
  await frame();
  const expand = performance.now() - start;
  const before = performance.now();
  viewer.draw();
  const redraw = performance.now() - before;
  return {expand, redraw, nodes: Number(viewer.el.getAttribute("data-visible-nodes"))};
}"""


#: Above this many instructions the module is the lowered (unoptimized) step.
OPTIMIZED_UP_TO = 25_000
#: Instructions per layer of the step, optimized and as lowered.
PER_LAYER = {True: 2100, False: 290}


def transformer_step_hlo(layers: int, optimized: bool = True) -> str:
    """HLO text of a transformer training step with ``layers`` layers: optimized by XLA's CPU
    compiler, or as lowered (``optimized=False``)."""
    import jax
    import jax.numpy as jnp

    d_model, d_ff, heads = 64, 128, 4

    def init(key):
        params = []
        for i in range(layers):
            k = jax.random.split(jax.random.fold_in(key, i), 6)
            params.append(
                {
                    "wq": jax.random.normal(k[0], (d_model, d_model)) * 0.02,
                    "wk": jax.random.normal(k[1], (d_model, d_model)) * 0.02,
                    "wv": jax.random.normal(k[2], (d_model, d_model)) * 0.02,
                    "wo": jax.random.normal(k[3], (d_model, d_model)) * 0.02,
                    "w1": jax.random.normal(k[4], (d_model, d_ff)) * 0.02,
                    "w2": jax.random.normal(k[5], (d_ff, d_model)) * 0.02,
                    "g1": jnp.ones(d_model),
                    "g2": jnp.ones(d_model),
                }
            )
        return params

    def norm(x, gain):
        mean = x.mean(-1, keepdims=True)
        return gain * (x - mean) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)

    def block(p, x):
        batch, seq, d = x.shape
        h = norm(x, p["g1"])
        q = (h @ p["wq"]).reshape(batch, seq, heads, d // heads)
        k = (h @ p["wk"]).reshape(batch, seq, heads, d // heads)
        v = (h @ p["wv"]).reshape(batch, seq, heads, d // heads)
        scores = jnp.einsum("bshd,bthd->bhst", q, k) / (d // heads) ** 0.5
        attention = jax.nn.softmax(scores, axis=-1)
        x = x + jnp.einsum("bhst,bthd->bshd", attention, v).reshape(batch, seq, d) @ p["wo"]
        h = norm(x, p["g2"])
        return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]

    def loss(params, x, y):
        for i, p in enumerate(params):
            with jax.named_scope(f"layer_{i}"):
                x = block(p, x)
        return jnp.mean((x - y) ** 2)

    @jax.jit
    def train_step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree_util.tree_map(lambda w, g: w - 1e-3 * g, params, grads)

    x = jnp.ones((2, 16, d_model))
    lowered = train_step.lower(init(jax.random.PRNGKey(0)), x, jnp.zeros_like(x))
    if optimized:
        return lowered.compile().as_text()
    return lowered.compiler_ir("hlo").as_hlo_module().to_string()  # with metadata


def instructions(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("  ") and " = " in line)


def module_of_size(target: int) -> str:
    """The smallest unrolled step with at least ``target`` instructions (cached on disk)."""
    CACHE.mkdir(exist_ok=True)
    optimized = target <= OPTIMIZED_UP_TO
    cached = CACHE / f"transformer_step_{target}{'' if optimized else '_lowered'}.hlo.txt"
    if cached.exists():
        return cached.read_text()
    layers = max(1, round(target / PER_LAYER[optimized]))
    while True:
        text = transformer_step_hlo(layers, optimized)
        if instructions(text) >= target * 0.95:
            cached.write_text(text)
            return text
        layers += 1


def run(sizes: list[int], screenshots: Path | None) -> list[dict]:
    from playwright.sync_api import sync_playwright

    from xlanb.graphs import parse
    from xlanb.views.graph_viewer import graph_page

    rows = []
    workdir = Path(tempfile.mkdtemp(prefix="xlanb-bench-"))
    # every module parsed and built before the browser starts: its processes share the cores
    # (and their caches) with this one, which made the parse's CPU time vary by a quarter
    for size in sizes:
        text = module_of_size(size)
        started, cpu = time.perf_counter(), time.process_time()
        graph = parse(text)
        parse_seconds = time.perf_counter() - started
        parse_cpu = time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        page_html = graph_page(graph, height=800)
        html_seconds = time.perf_counter() - started
        html_cpu = time.process_time() - cpu
        path = workdir / f"graph_{size}.html"
        path.write_text(page_html, encoding="utf-8")
        rows.append(
            {
                "instructions": len(graph.nodes),
                "parse_s": parse_seconds,
                "parse_cpu_s": parse_cpu,
                "html_s": html_seconds,
                "html_cpu_s": html_cpu,
                "html_mb": len(page_html.encode()) / 1e6,
                "path": path,
            }
        )
        del text, graph, page_html
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for size, row in zip(sizes, rows, strict=True):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(("file:", "data:"))
                    else route.abort()
                ),
            )
            page.add_init_script(READY_PROBE)
            page.goto(row.pop("path").as_uri())
            page.wait_for_selector(".xlanb-graph[data-ready=true]", timeout=60_000)
            ready_ms = page.evaluate("window.__xlanbReady")
            visible = int(page.get_attribute(".xlanb-graph", "data-visible-items") or 0)
            if screenshots:
                page.screenshot(path=str(screenshots / f"graph_{size}_overview.png"))
            expanded = page.evaluate(EXPAND_ALL)
            if screenshots:
                page.screenshot(path=str(screenshots / f"graph_{size}_expanded.png"))
            page.close()
            row.update(
                {
                    "ready_ms": ready_ms,
                    "visible": visible,
                    "expand_all_ms": expanded["expand"],
                    "redraw_ms": expanded["redraw"],
                    "expanded_nodes": expanded["nodes"],
                }
            )
        browser.close()
    return rows


def table(rows: list[dict]) -> str:
    header = (
        "| instructions | parse (Python; CPU) | HTML build (CPU) | HTML size | data-ready "
        "| boxes at first | expand all | redraw, all expanded |"
    )
    lines = [header, "|" + "---|" * 8]
    for row in rows:
        lines.append(
            f"| {row['instructions']:,} | {row['parse_s']:.2f} s ({row['parse_cpu_s']:.2f} s) | "
            f"{row['html_s']:.2f} s ({row['html_cpu_s']:.2f} s) | "
            f"{row['html_mb']:.1f} MB | {row['ready_ms']:.0f} ms | {row['visible']} | "
            f"{row['expand_all_ms']:.0f} ms ({row['expanded_nodes']:,} nodes) | "
            f"{row['redraw_ms']:.0f} ms |"
        )
    return "\n".join(lines)


#: Time to a drawn, interactive viewer, up to 20,000 instructions.
TARGET_READY_MS = 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="2000,10000,20000", help="instruction counts, comma-separated"
    )
    parser.add_argument("--screenshots", type=Path, help="write overview/expanded PNGs here")
    results.add_check_option(parser)
    args = parser.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        print(f"needs Chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    rows = run([int(s) for s in args.sizes.split(",")], args.screenshots)
    print(table(rows))
    results.write("graph_viewer", {str(row["instructions"]): row for row in rows})
    slow = [
        f"data-ready {row['ready_ms']:.0f} ms > {TARGET_READY_MS} ms at "
        f"{row['instructions']:,} instructions"
        for row in rows
        if row["instructions"] <= 25000 and row["ready_ms"] > TARGET_READY_MS
    ]
    return results.check(slow, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
