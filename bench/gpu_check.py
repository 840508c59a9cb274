"""The GPU check, prepared for a lent GPU machine: one run, every figure the GPU section claims.

Usage (on the GPU machine, with xlanb importable)::

    python bench/gpu_check.py [--model mlp|transformer] [--steps 60] [--out DIR]

It trains a real step (``mlp``: 5-layer MLP 2048-4096x4-1000, batch 2048, f32; ``transformer``:
4-layer bf16 decoder LM with AdamW, as in the H100 recordings) and prints, as JSON lines:

- ``per_op``: xlanb's per-op device time under XLA's default command buffers against the same
  program run in a child process with command buffers off (``--xla_gpu_enable_command_buffer=``,
  per-``hlo_op`` seconds from JAX's own trace): share of time matched, worst op >= 1%;
- ``device``: the steady cell's device bucket against the GPU's busy time (union of kernel
  intervals in JAX's own trace of the same steps);
- ``first_cell``: a first (compiling) cell's device bucket against its programs' own kernels;
- ``overhead``: profiled / bare wall of the steady cell, medians of alternating runs.

On a machine without a GPU it runs the same steps on XLA:CPU (a smoke run: ``--small``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRUTH_FLAG = "--xla_gpu_enable_command_buffer="


#: The recordings' MLP: 2048 inputs, four hidden layers of 4096, 1000 classes.
MLP_SIZES = [2048, 4096, 4096, 4096, 4096, 1000]


def mlp_loss(params: Any, x: Any, y: Any) -> Any:
    """GELU MLP, softmax cross-entropy (the recordings' ``mlp`` case)."""
    import jax
    import jax.numpy as jnp

    h = x
    for w, b in params[:-1]:
        h = jax.nn.gelu(h @ w + b)
    w, b = params[-1]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w + b) * y, axis=-1))


def mlp_train_step(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """One SGD step of :func:`mlp_loss` (not jitted)."""
    import jax

    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


def build(model: str, small: bool) -> tuple[Any, Any, tuple[Any, ...]]:
    """(a fresh jitted step, its state, its batch)."""
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    if model == "mlp":
        sizes = [64, 128, 128, 10] if small else MLP_SIZES
        batch = 64 if small else 2048
        params = []
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            key, k = jax.random.split(key)
            params.append((jax.random.normal(k, (a, b)) / a**0.5, jnp.zeros((b,))))
        x = jax.random.normal(key, (batch, sizes[0]))
        y = jax.nn.one_hot(jax.random.randint(key, (batch,), 0, sizes[-1]), sizes[-1])

        def make():
            return jax.jit(mlp_train_step)

        return make, params, (x, y)
    import optax

    vocab, width, heads, seq, batch, layers = (
        (512, 64, 4, 32, 4, 2) if small else (8192, 512, 8, 256, 16, 4)
    )

    def dense(k, a, b):
        return jax.random.normal(k, (a, b), jnp.float32) / a**0.5

    keys = iter(jax.random.split(key, 8 * layers + 2))
    params = {
        "embed": dense(next(keys), vocab, width),
        "layers": [
            {
                n: dense(next(keys), *s)
                for n, s in (
                    ("qkv", (width, 3 * width)),
                    ("o", (width, width)),
                    ("w1", (width, 4 * width)),
                    ("w2", (4 * width, width)),
                )
            }
            for _ in range(layers)
        ],
    }
    tokens = jax.random.randint(next(keys), (batch, seq + 1), 0, vocab)
    optimizer = optax.adamw(1e-4)

    def loss_fn(params, tokens):
        x = params["embed"][tokens[:, :-1]].astype(jnp.bfloat16)
        for layer in params["layers"]:
            with jax.named_scope("attention"):
                h = jax.nn.standardize(x.astype(jnp.float32)).astype(jnp.bfloat16)
                q, k, v = jnp.split(h @ layer["qkv"].astype(jnp.bfloat16), 3, axis=-1)
                q, k, v = (t.reshape(batch, seq, heads, width // heads) for t in (q, k, v))
                a = jax.nn.dot_product_attention(q, k, v, is_causal=True)
                x = x + a.reshape(batch, seq, width) @ layer["o"].astype(jnp.bfloat16)
            with jax.named_scope("mlp"):
                h = jax.nn.standardize(x.astype(jnp.float32)).astype(jnp.bfloat16)
                h = jax.nn.gelu(h @ layer["w1"].astype(jnp.bfloat16))
                x = x + h @ layer["w2"].astype(jnp.bfloat16)
        logits = (x @ params["embed"].T.astype(jnp.bfloat16)).astype(jnp.float32)
        return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

    def make():
        @jax.jit
        def train_step(state, tokens):
            params, opt = state
            loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
            updates, opt = optimizer.update(grads, opt, params)
            return (optax.apply_updates(params, updates), opt), loss

        return train_step

    return make, (params, optimizer.init(params)), (tokens,)


def loop(step: Any, state: Any, batch: tuple[Any, ...], steps: int) -> Any:
    import jax

    loss = None
    for _ in range(steps):
        state, loss = step(state, *batch)
    jax.block_until_ready(loss)
    return state


def traced_kernels(
    step: Any, state: Any, batch: tuple[Any, ...], steps: int, keep: Path | None = None
) -> dict[str, Any]:
    """JAX's own trace of `steps` steps: the GPU's busy time (union of kernel intervals) and
    seconds per ``hlo_op`` (per thunk on XLA:CPU). `keep`: where to copy the recording."""
    import shutil

    import jax

    from xlanb.formats.xspace import read_xspace

    folder = tempfile.mkdtemp()
    jax.profiler.start_trace(folder)
    loop(step, state, batch, steps)
    jax.profiler.stop_trace()
    recording = next(Path(folder).rglob("*.xplane.pb"))
    if keep is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(recording, keep)
    events = read_xspace(recording).events
    gpu = events["plane"].astype(str).str.startswith("/device:GPU")
    kernels = events[gpu] if gpu.any() else events[events["hlo_op"].notna()]
    spans = sorted(
        zip(kernels["start_ns"], kernels["start_ns"] + kernels["duration_ns"], strict=True)
    )
    busy, end = 0.0, -1.0
    for start, stop in spans:
        busy += max(0.0, stop - max(start, end))
        end = max(end, stop)
    per_op = kernels.groupby(kernels["hlo_op"].astype(str))["duration_ns"].sum() / 1e9
    return {"busy_seconds": busy / 1e9, "kernels": len(kernels), "per_op": per_op.to_dict()}


def compare(ops: Any, truth: dict[str, float]) -> dict[str, Any]:
    """xlanb's per-op seconds against the truth's: share matched, worst op >= 1% of the time."""
    mine = ops.groupby("op")["seconds"].sum().to_dict()
    total = sum(truth.values()) or 1.0
    matched = sum(min(mine.get(op, 0.0), seconds) for op, seconds in truth.items())
    errors = {
        op: abs(mine.get(op, 0.0) - seconds) / seconds
        for op, seconds in truth.items()
        if seconds >= 0.01 * total
    }
    worst = max(errors, key=errors.__getitem__) if errors else None
    return {
        "matched_share": matched / total,
        "ops_over_1pct": len(errors),
        "within_15pct": sum(error <= 0.15 for error in errors.values()),
        "worst_op": worst,
        "worst_error": errors.get(worst) if worst else None,
        "unattributed_seconds": sum(s for op, s in mine.items() if "unattributed" in op),
    }


def truth_child(args: argparse.Namespace) -> dict[str, Any]:
    """The same program, command buffers off, in a child process (XLA reads its flags once)."""
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {TRUTH_FLAG}".strip())
    command = [sys.executable, __file__, "--truth-only", "--model", args.model]
    command += ["--steps", str(args.truth_steps), "--out", args.out]
    command += ["--small"] if args.small else []
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(name: str, figures: dict[str, Any]) -> None:
    print(json.dumps({"check": name, **figures}, default=float), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("mlp", "transformer"), default="mlp")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--truth-steps", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    parser.add_argument("--truth-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.truth_only:
        import xlanb

        xlanb.enable()  # what %load_ext does: the XLA dump, before JAX starts its backend
    import jax

    make, state, batch = build(args.model, args.small)
    step = make()
    state = loop(step, state, batch, 2)
    if args.truth_only:
        keep = Path(args.out) / f"truth_{args.model}.xplane.pb"
        print(json.dumps(traced_kernels(step, state, batch, args.truth_steps, keep=keep)))
        return
    import xlanb

    on_gpu = jax.devices()[0].platform == "gpu"
    report("setup", {"jax": jax.__version__, "device": str(jax.devices()[0]), "on_gpu": on_gpu})
    # first cell: a fresh jit compiles inside the capture
    first_step = make()
    with xlanb.profile(name="first") as first:
        state = loop(first_step, state, batch, args.steps)
    own = first.ops["seconds"].sum() if not first.ops.empty else float("nan")
    device = float(first.breakdown.set_index("bucket").loc["device", "seconds"])
    report(
        "first_cell",
        {
            "device_bucket": device,
            "programs_kernels": own,
            "steps": len(first.step_times),
            "wall": first.wall_seconds,
        },
    )
    # steady: overhead, alternating bare and profiled
    bare, profiled = [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        state = loop(first_step, state, batch, args.steps)
        bare.append(time.perf_counter() - started)
        with xlanb.profile(name="steady") as steady:
            state = loop(first_step, state, batch, args.steps)
        profiled.append(steady.wall_seconds)
    report(
        "overhead",
        {
            "ratio": statistics.median(profiled) / statistics.median(bare),
            "bare": bare,
            "profiled": profiled,
        },
    )
    with xlanb.profile(name="whole", trace_runs=None) as whole:
        state = loop(first_step, state, batch, args.truth_steps)
    recording = Path(args.out) / f"trace_{args.model}.xplane.pb"
    truth = traced_kernels(first_step, state, batch, args.truth_steps, keep=recording)
    bucket = float(whole.breakdown.set_index("bucket").loc["device", "seconds"])
    report(
        "device",
        {"device_bucket": bucket, "gpu_busy": truth["busy_seconds"], "steps": args.truth_steps},
    )
    # on XLA:CPU (a smoke run) there are no command buffers: the truth is the trace above
    reference = truth_child(args)["per_op"] if on_gpu else truth["per_op"]
    report("per_op", compare(whole.ops, reference))
    out = Path(args.out)
    graphs = whole.graphs if not whole.graphs.empty else first.graphs
    report(
        "programs",
        {
            "graphs": graphs.drop(columns=["text"], errors="ignore").astype(str).to_dict("records"),
            "ops_sample": whole.ops["op"].astype(str).head(5).tolist(),
        },
    )
    text = first_step.lower(state, *batch).compile().as_text()
    (out / f"hlo_{args.model}.txt").write_text(text)
    out.mkdir(parents=True, exist_ok=True)
    whole.to_html(out / f"gpu_check_{args.model}.html")
    report("done", {"report": str(out / f"gpu_check_{args.model}.html")})


if __name__ == "__main__":
    main()
