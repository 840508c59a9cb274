"""Where the JAX call hook's time goes: a jitted call with device arrays (and, for the
counters, a NumPy argument and an eager op) under the pass-through ``__call__`` (the floor),
the floor with each piece of the dispatch counter added one at a time, and the counter itself
(this checkout's, and with ``--old DIR`` an older checkout's, side by side in one process).

Two measures: alternating blocks of `--block` calls, `--rounds` times, each arm's fastest
block and median (µs a call, minus the arm without a hook); or, with ``--callgrind``, the
instructions a call, under valgrind (each arm's calls run inside one ``deque.extend``, which
callgrind collects alone and dumps after: ``--toggle-collect=deque_extend
--dump-after=deque_extend``; the load does not change them):

    .venv/bin/python bench/jax_call_pieces.py [--old /tmp/old/xlanb]
    .venv/bin/python bench/jax_call_pieces.py --callgrind [--old ...]
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import results


@dataclass(eq=False, slots=True)
class PieceState:
    """What the pieces use of ``JaxState`` as it was (a list of sample tuples)."""

    current: Any = None
    old_samples: list[tuple[float, float, Any]] = field(default_factory=list)
    calls: dict[Any, Any] = field(default_factory=dict)
    first_probe_at: int = -1
    first_probe: Any = None
    probe_at: int = -1
    probe: Any = None
    last_result: Any = None


def piece_hooks(
    original: Any, state: PieceState, array_type: type
) -> dict[str, Callable[..., Any]]:
    """The floor, then the floor with the counter's pieces added one at a time (the device-
    array path of ``_dispatch_counter`` as it was)."""
    from xlanb.capture.backends.jax.state import CallStats

    perf, limit, calls = time.perf_counter, 10_000, state.calls
    samples: list[tuple[float, float, Any]] = state.old_samples

    def floor(self, *args, **kwargs):
        return original(self, *args, **kwargs)

    def guard(self, *args, **kwargs):
        if state.current is not None:
            return original(self, *args, **kwargs)
        state.current = self
        try:
            result = original(self, *args, **kwargs)
        finally:
            state.current = None
        return result

    def clocks(self, *args, **kwargs):
        if state.current is not None:
            return original(self, *args, **kwargs)
        state.current = self
        started = perf()
        try:
            result = original(self, *args, **kwargs)
        finally:
            state.current = None
        elapsed = perf() - started
        return result if elapsed else result

    def sample(self, *args, **kwargs):
        if state.current is not None:
            return original(self, *args, **kwargs)
        state.current = self
        started = perf()
        try:
            result = original(self, *args, **kwargs)
        finally:
            state.current = None
        elapsed = perf() - started
        if len(samples) < limit:
            samples.append((started, elapsed, self))
            if len(samples) == state.first_probe_at:
                state.first_probe = result
            if len(samples) == state.probe_at:
                state.probe = result
        return result

    def last(self, *args, **kwargs):
        if state.current is not None:
            return original(self, *args, **kwargs)
        state.current = self
        started = perf()
        try:
            result = original(self, *args, **kwargs)
        finally:
            state.current = None
        elapsed = perf() - started
        if len(samples) < limit:
            samples.append((started, elapsed, self))
            if len(samples) == state.first_probe_at:
                state.first_probe = result
            if len(samples) == state.probe_at:
                state.probe = result
        state.last_result = result
        return result

    def totals(self, *args, **kwargs):
        if state.current is not None:
            return original(self, *args, **kwargs)
        state.current = self
        started = perf()
        try:
            result = original(self, *args, **kwargs)
        finally:
            state.current = None
        elapsed = perf() - started
        if len(samples) < limit:
            samples.append((started, elapsed, self))
            if len(samples) == state.first_probe_at:
                state.first_probe = result
            if len(samples) == state.probe_at:
                state.probe = result
        state.last_result = result
        entry = calls.get(self)
        if entry is None:
            entry = calls[self] = CallStats(self, 1, elapsed, 0.0, None, False, ())
        else:
            entry.count += 1
            entry.seconds += elapsed
        return result

    def arguments(self, *args, **kwargs):
        if state.current is not None:
            return original(self, *args, **kwargs)
        state.current = self
        started = perf()
        try:
            result = original(self, *args, **kwargs)
        finally:
            state.current = None
        elapsed = perf() - started
        if len(samples) < limit:
            samples.append((started, elapsed, self))
            if len(samples) == state.first_probe_at:
                state.first_probe = result
            if len(samples) == state.probe_at:
                state.probe = result
        state.last_result = result
        entry = calls.get(self)
        if entry is None:
            entry = calls[self] = CallStats(self, 1, elapsed, 0.0, None, False, ())
        else:
            entry.count += 1
            entry.seconds += elapsed
        if entry.eager:
            return result
        for arg in args:
            if type(arg) is not array_type:
                return result
        if kwargs:
            return result
        return result

    def floor_star(*args, **kwargs):
        return original(*args, **kwargs) if kwargs else original(*args)

    return {
        "floor": floor,
        "+ guard (state.current)": guard,
        "+ 2 perf_counter reads": clocks,
        "+ sample append, probe checks": sample,
        "+ state.last_result": last,
        "+ per-function totals": totals,
        "+ argument type loop": arguments,
        "floor, (*args) passed on whole": floor_star,
    }


def load_hooks(xlanb_dir: str, name: str) -> Any:
    """Another checkout's JAX ``hooks`` module (with its own ``state`` module), loaded beside
    this one."""
    modules = {}
    for part in ("state", "hooks"):
        path = os.path.join(xlanb_dir, "capture", "backends", "jax", f"{part}.py")
        spec = importlib.util.spec_from_file_location(f"{name}_{part}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        modules[part] = module
    hooks, state = modules["hooks"], modules["state"]
    for attribute in ("STATE", "CallStats", "SAMPLE_LIMIT"):
        setattr(hooks, attribute, getattr(state, attribute))
    return hooks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="an older checkout's xlanb directory, timed beside")
    parser.add_argument("--block", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--calls", type=int, default=1000, help="calls an arm (callgrind)")
    parser.add_argument("--keep", help="a directory to keep callgrind's dumps in")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.callgrind and not args.inside:
        return run_callgrind(args)

    import jax
    import jax.numpy as jnp
    import numpy as np

    from xlanb.capture.backends.jax import hooks
    from xlanb.capture.backends.jax.dispatch import hook_call, unhook_call, vectorcall_flag

    jitted = jax.jit(lambda x: x + 1)
    function_type = type(jitted)
    original = function_type.__dict__["__call__"]
    address, vectorcall = vectorcall_flag(function_type)
    device_arg, host_arg = jnp.ones(4), np.ones(4, np.float32)
    target = hooks.dispatch_target().found
    counters = {"counter (new)": hooks}
    if args.old:
        counters["counter (old)"] = load_hooks(args.old, "old")

    def reset(module: Any) -> None:
        state = module.STATE
        state.calls.clear(), state.transfers.clear()
        if hasattr(state, "samples"):  # a checkout before the preallocated samples
            state.samples.clear()
        else:
            state.sample_count = 0
        state.current = state.last_result = None

    arms: dict[str, tuple[Callable[[], Any] | None, Callable[[], None]]] = {"off": (None, list)}
    piece_state = PieceState()
    for name, hook in piece_hooks(original, piece_state, target.array_type).items():
        arms[name] = ((lambda hook=hook: hook), piece_state.old_samples.clear)
    for name, module in counters.items():
        arms[name] = (
            lambda module=module: module._dispatch_counter(original, target),
            lambda module=module: reset(module),
        )
    cases: dict[str, tuple[Callable[..., Any], list[Any], list[str]]] = {
        "jit, device arrays": (jitted, [device_arg], list(arms)),
        "jit, NumPy argument": (jitted, [host_arg], ["off", "floor", *counters]),
        "eager op": (lambda x: x + 1, [device_arg], ["off", "floor", *counters]),
    }
    for call, call_args, _ in cases.values():
        call(*call_args)

    def block(make: Callable[[], Any] | None, call: Callable[..., Any], call_args: list) -> Any:
        if make is not None:
            hook_call(function_type, make(), address)
        try:
            call(*call_args)  # a first call (the function's entry, the place's stack)
            if args.callgrind:
                deque(maxlen=0).extend(
                    map(call, *map(itertools.repeat, call_args, [args.calls] * len(call_args)))
                )
                return None
            started = time.perf_counter()
            for _ in range(args.block):
                call(*call_args)
            return (time.perf_counter() - started) / args.block * 1e6
        finally:
            if make is not None:
                unhook_call(function_type, original, address, vectorcall)

    if args.callgrind:
        for case, (call, call_args, names) in cases.items():
            for name in names:
                make, clear = arms[name]
                clear()
                block(make, call, call_args)
                print(f"ARM\t{case}\t{name}", flush=True)
        return 0

    timings: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for case, (call, call_args, names) in cases.items():
            for name in names:
                make, clear = arms[name]
                clear()
                timings.setdefault((case, name), []).append(block(make, call, call_args))
    load = os.getloadavg()[0]
    print(f"load average {load:.1f}; {args.rounds} alternating blocks of {args.block} calls")
    print(f"{'case / arm':<56} {'fastest':>8} {'added':>6} {'median':>7} {'added':>6}")
    figures: dict[str, float] = {"load_average": load}
    for case, (_call, _args, names) in cases.items():
        off = timings[case, "off"]
        for name in names:
            fast, middle = min(timings[case, name]), statistics.median(timings[case, name])
            print(
                f"{case + ': ' + name:<56} {fast:>8.2f} {fast - min(off):>6.2f} "
                f"{middle:>7.2f} {middle - statistics.median(off):>6.2f}"
            )
            if name != "off":
                figures[f"{case}: {name}: added_us_fastest"] = round(fast - min(off), 2)
    results.write("jax_call_pieces", figures)
    return 0


def run_callgrind(args: argparse.Namespace) -> int:
    """This script under callgrind; instructions a call of each arm minus the arm without a
    hook."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or scratch
        os.makedirs(directory, exist_ok=True)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=deque_extend",
            "--dump-after=deque_extend",
            f"--callgrind-out-file={directory}/cg.out",
            sys.executable,
            os.path.abspath(__file__),
            "--callgrind",
            "--inside",
            f"--calls={args.calls}",
            *([f"--old={args.old}"] if args.old else []),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode:
            print(done.stderr[-3000:])
            return 1
        arms = [line.split("\t")[1:] for line in done.stdout.splitlines() if line.startswith("ARM")]
        dumps = sorted(glob.glob(f"{directory}/cg.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        counts = []
        for path in dumps:
            with open(path, encoding="utf-8") as handle:
                found = re.search(r"^totals:\s+(\d+)", handle.read(), re.MULTILINE)
            counts.append(int(found.group(1)) if found else 0)
    # deque.extend also runs while modules are imported: the arms' dumps are the last ones
    measured = counts[-len(arms) :]
    if len(measured) != len(arms) or min(measured) < 1000 * args.calls:
        print(f"{len(measured)} dumps for {len(arms)} arms: {counts}")
        return 1
    per_call = {tuple(arm): count / args.calls for arm, count in zip(arms, measured, strict=True)}
    figures: dict[str, float] = {}
    print(f"instructions a call ({args.calls} calls an arm), added over the arm without a hook")
    for (case, name), count in per_call.items():
        added = count - per_call[case, "off"]
        print(f"{case + ': ' + name:<56} {count:>9.0f} {added:>8.0f}")
        if name != "off":
            figures[f"{case}: {name}: added_instructions"] = round(added)
    results.write("jax_call_pieces", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
