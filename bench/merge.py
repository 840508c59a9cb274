"""How long ``xlanb.ranks.load_ranks`` takes to merge the rank files of a large run.

One real profile is captured (a transformer-encoder training loop: PyTorch/XLA when it is
installed, run with ``PJRT_DEVICE=CPU``, else JAX), or read with ``--base``. It is saved as the
profile of each of ``--ranks`` ranks (64 by default) with that rank's identity, its timings
jittered and one rank made slow, then ``load_ranks`` is timed (median of ``--repeat``) and the
per-rank display rendered once. Prints a markdown table.

    PJRT_DEVICE=CPU .venv-xla/bin/python bench/merge.py
    .venv/bin/python bench/merge.py
    .venv/bin/python bench/merge.py --base saved.xlanb.json --ranks 128
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import results

import xlanb
from xlanb.core.profile import Profile
from xlanb.formats.profile_json import load_profile
from xlanb.ranks import RankIdentity, load_ranks, save_rank
from xlanb.views.html import profile_html

TARGET_SECONDS = 2.0


def capture_torch_xla(steps: int) -> Profile:
    xlanb.enable()
    import torch
    import torch_xla

    device = torch_xla.device()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = torch.randn(8, 64, 256).to(device)
    with xlanb.profile(backend="torch_xla", name="train") as prof:
        for step in range(steps):
            optimizer.zero_grad()
            loss = model(batch).pow(2).mean()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
            if step % 50 == 49:
                print(f"step {step}: loss {loss.item():.4f}")  # a fallback now and then
    return prof


def capture_jax(steps: int) -> Profile:
    import jax

    keys = jax.random.split(jax.random.PRNGKey(0), 6)
    params = {f"w{i}": jax.random.normal(k, (256, 256)) * 0.02 for i, k in enumerate(keys)}
    batch = jax.random.normal(keys[0], (8, 64, 256))

    def block(params, x):
        for layer in range(2):
            q, k, v = (x @ params[f"w{3 * layer + i}"] for i in range(3))
            attention = jax.nn.softmax(q @ k.transpose(0, 2, 1) / 16.0, axis=-1)
            x = jax.nn.gelu(x + attention @ v)
        return (x**2).mean()

    @jax.jit
    def train_step(params, x):
        loss, grads = jax.value_and_grad(block)(params, x)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss

    with xlanb.profile(backend="jax", name="train") as prof:
        for _ in range(steps):
            params, loss = train_step(params, batch)
        loss.block_until_ready()
    return prof


def capture(steps: int) -> Profile:
    if importlib.util.find_spec("torch_xla") is None:
        return capture_jax(steps)
    return capture_torch_xla(steps)


def write_ranks(base: Profile, directory: Path, ranks: int, slow_rank: int) -> None:
    """Save `base` as every rank of one run, with jittered timings and one slow rank."""
    generator = np.random.default_rng(0)
    for rank in range(ranks):
        profile = Profile.from_dict(base.to_dict())
        factor = generator.uniform(0.95, 1.05) * (2.0 if rank == slow_rank else 1.0)
        profile.executions["seconds"] = profile.executions["seconds"] * factor
        profile.samples["value"] = profile.samples["value"] * factor
        profile.wall_seconds = base.wall_seconds * factor
        save_rank(
            profile,
            directory,
            identity=RankIdentity(
                run_id="bench",
                rank=rank,
                world_size=ranks,
                host=f"host-{rank // 8}",
                pid=10_000 + rank,
                device=f"xla:{rank % 8}",
            ),
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a saved profile to use instead of capturing one")
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    results.add_check_option(parser)
    args = parser.parse_args()

    base = load_profile(args.base) if args.base else capture(args.steps)
    with tempfile.TemporaryDirectory(prefix="xlanb-bench-merge-") as temporary:
        directory = Path(temporary)
        write_ranks(base, directory, args.ranks, slow_rank=args.ranks // 3)
        files = sorted(directory.glob("*.xlanb.json"))
        size = sum(f.stat().st_size for f in files)
        parse_seconds, load_seconds = [], []
        merged = None
        for _ in range(args.repeat):
            started = time.perf_counter()
            for file in files:
                json.loads(file.read_text(encoding="utf-8"))
            parse_seconds.append(time.perf_counter() - started)
            started = time.perf_counter()
            merged = load_ranks(directory)
            load_seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        page = profile_html(merged, graph_viewers=False)
        html_seconds = time.perf_counter() - started

    rows = {name: len(frame) for name, frame in base.frames().items() if len(frame)}
    print(
        f"base profile: {', '.join(base.backends)}; rows per rank: "
        + ", ".join(f"{name} {count}" for name, count in rows.items())
    )
    print(f"findings of the merged profile: {list(merged.findings['title'][:3])}")
    print()
    print(
        "| ranks | file per rank | all files | json.loads alone s | load_ranks s "
        f"(median of {args.repeat}) | target s | rows merged | cell display s (HTML) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    merged_rows = sum(len(frame) for frame in merged.frames().values())
    print(
        f"| {args.ranks} | {size / len(files) / 1e6:.2f} MB | {size / 1e6:.1f} MB "
        f"| {statistics.median(parse_seconds):.3f} | {statistics.median(load_seconds):.3f} "
        f"| ≤ {TARGET_SECONDS:g} | {merged_rows:,} | {html_seconds:.3f} "
        f"({len(page) / 1e6:.1f} MB) |"
    )
    load_s = statistics.median(load_seconds)
    results.write(
        "merge",
        {
            "ranks": args.ranks,
            "bytes": size,
            "load_ranks_s": load_s,
            "target_s": TARGET_SECONDS,
            "html_s": html_seconds,
        },
    )
    return results.check(
        [f"load_ranks {load_s:.3f} s > {TARGET_SECONDS} s"] if load_s > TARGET_SECONDS else [],
        args.check,
    )


if __name__ == "__main__":
    raise SystemExit(main())
