"""Does profiling leave the GPU usable? One child process per way of tracing a real step.

Usage (on the GPU machine)::

    python bench/gpu_safety.py [--model transformer] [--steps 60]

Each child compiles a fresh step, runs `steps` steps under one way of tracing (none, JAX's own
profiler around a synced loop, JAX's profiler stopped while steps are queued, xlanb), then runs
`steps` more steps bare and syncs. Prints one JSON line per way: its exit code and last line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

WAYS = ("bare", "xlanb", "xlanb", "xlanb")


def child(way: str, model: str, steps: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    if way.startswith("xlanb"):
        import xlanb

        xlanb.enable()
    import jax
    from gpu_check import build, loop

    make, state, batch = build(model, small=os.environ.get("SMALL") == "1")
    state = loop(make(), state, batch, 2)
    step = make()  # a fresh jit: it compiles inside the traced part, as a first cell does
    folder = tempfile.mkdtemp()
    if way == "bare":
        state = loop(step, state, batch, steps)
    elif way == "jax_trace_synced":
        with jax.profiler.trace(folder):
            state = loop(step, state, batch, steps)
    elif way == "jax_trace_queued":
        jax.profiler.start_trace(folder)
        for _ in range(steps):
            state, loss = step(state, *batch)
        jax.profiler.stop_trace()
    else:
        with xlanb.profile(name=way):
            state = loop(step, state, batch, steps)
    state = loop(step, state, batch, steps)
    print("ok", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="transformer")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--way", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.way:
        child(args.way, args.model, args.steps)
        return
    for way in WAYS:
        env = dict(os.environ)
        if way.endswith("no_cmdbuf"):
            env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_gpu_enable_command_buffer="
        command = [sys.executable, __file__, "--way", way, "--model", args.model]
        done = subprocess.run(
            command + ["--steps", str(args.steps)], env=env, capture_output=True, text=True
        )
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "error" in line]
        print(
            json.dumps(
                {
                    "way": way,
                    "rc": done.returncode,
                    "last": lines[-1][:300] if lines else "",
                    "first_error": errors[0][:300] if errors else None,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
