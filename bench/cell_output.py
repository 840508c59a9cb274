"""What a real profiled cell costs to show: a 12-layer JAX transformer step (d=256, 4 heads)
compiled for 4 sequence lengths, 5 steps each, under ``%%xla_profile`` in a real IPython shell.
Measures the bytes the front end receives (every display output, as a kernel serialises it),
the time from the cell's last line to the end of ``%%xla_profile`` (the capture's end, then
the display) and the report's size. Targets: output <= 300 kB, report <= 2 MB.

    .venv/bin/python bench/cell_output.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import builtins
import json
import statistics
import tempfile
import time

import results

SETUP = """
import jax, jax.numpy as jnp
L, D, H = 12, 256, 4
def layer(p, x):
    B, T, _ = x.shape
    q, k, v = ((x @ p[n]).reshape(B, T, H, D // H) for n in "qkv")
    a = jax.nn.softmax(jnp.einsum("bthd,bshd->bhts", q, k) / 8.0, axis=-1)
    x = jax.nn.gelu(x + jnp.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D) @ p["o"])
    return x + jax.nn.relu(x @ p["w1"]) @ p["w2"]
def model(params, x):
    for p in params:
        x = layer(p, x)
    return jnp.mean(x ** 2)
shapes = dict(q=(D, D), k=(D, D), v=(D, D), o=(D, D), w1=(D, 4 * D), w2=(4 * D, D))
params = [{n: jax.random.normal(jax.random.key(0), s) * 0.02 for n, s in shapes.items()}
          for _ in range(L)]
"""

CELL = """%%xla_profile --var bench_prof
@jax.jit
def step(params, x):
    loss, g = jax.value_and_grad(model)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, g), loss
for T in (16, 32, 48, 64):
    for i in range(5):
        params, loss = step(params, jnp.ones((4, T, D)))
loss.block_until_ready()
import builtins, time; builtins.bench_cell_end = time.perf_counter()
"""

TARGET_BYTES, TARGET_REPORT_BYTES = 300_000, 2_000_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    results.add_check_option(parser)
    args = parser.parse_args()

    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython()
    shell.display_formatter.active_types = shell.display_formatter.format_types
    shell.run_line_magic("load_ext", "xlanb")
    shell.run_cell(SETUP)
    ends, sizes = [], []
    for _ in range(args.repeats):
        with capture_output() as captured:
            shell.run_cell(CELL)
            ends.append(time.perf_counter() - builtins.bench_cell_end)  # type: ignore[attr-defined]
        sizes.append(sum(len(json.dumps(o.data, default=str)) for o in captured.outputs))
    profile = shell.user_ns["bench_prof"]
    with tempfile.TemporaryDirectory() as folder:
        report_bytes = len(profile.to_html(f"{folder}/report.html").encode())
    figures = {
        "compiles": int(len(profile.compiles)),
        "output_bytes": max(sizes),
        "end_of_cell_s": statistics.median(ends),
        "report_bytes": report_bytes,
        "target_output_bytes": TARGET_BYTES,
        "target_report_bytes": TARGET_REPORT_BYTES,
    }
    print(f"{'compiles':>8} {'output kB':>9} {'end of cell s':>13} {'report kB':>9}")
    print(
        f"{figures['compiles']:>8} {figures['output_bytes'] / 1e3:>9.0f} "
        f"{figures['end_of_cell_s']:>13.2f} {report_bytes / 1e3:>9.0f}"
    )
    results.write("cell_output", figures)
    failures = []
    if figures["output_bytes"] > TARGET_BYTES:
        failures.append(f"cell output {figures['output_bytes']} B > {TARGET_BYTES}")
    if report_bytes > TARGET_REPORT_BYTES:
        failures.append(f"report {report_bytes} B > {TARGET_REPORT_BYTES}")
    return results.check(failures, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
