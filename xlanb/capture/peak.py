"""The machine's peak compute and memory rates, measured once per process, so that achieved
rates of programs can be read as compute-, memory- or launch-bound.

On the CPU (XLA:CPU) the peak is measured with NumPy: a float32 matrix product and a large
copy, best of a few tries (about 20 ms once). On accelerators the device kind's data-sheet
figure is the peak (:mod:`xlanb.analysis.peaks`); for a part it does not know, a bf16 matrix
product and an elementwise pass are measured on the device once (:func:`jax_device_peak`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(eq=False)
class _PeakState:
    """This module's mutable state, one instance (:data:`_STATE`): the peaks measured so far."""

    #: This CPU's peaks (:func:`cpu_peak`), once measured.
    cpu: dict[str, float] | None = None
    #: JAX's default device's peaks (:func:`jax_device_peak`), once measured.
    device: dict[str, float] | None = None


_STATE = _PeakState()


def cpu_peak() -> dict[str, float]:
    """``{"peak_flops_per_second": ..., "peak_bytes_per_second": ...}`` of this CPU."""
    if _STATE.cpu is None:
        import numpy as np

        size = 512
        a = np.ones((size, size), np.float32)
        b = np.ones((size, size), np.float32)
        flops = []
        for _ in range(5):
            started = time.perf_counter()
            a @ b
            flops.append(2 * size**3 / max(time.perf_counter() - started, 1e-9))
        source = np.ones(8 * 2**20, np.float32)  # 32 MB, well past the caches
        target = np.empty_like(source)
        rates = []
        for _ in range(5):
            started = time.perf_counter()
            np.copyto(target, source)
            rates.append(2 * source.nbytes / max(time.perf_counter() - started, 1e-9))
        _STATE.cpu = {"peak_flops_per_second": max(flops), "peak_bytes_per_second": max(rates)}
    return dict(_STATE.cpu)


def jax_device_peak() -> dict[str, float]:
    """``{"peak_flops_per_second": ..., "peak_bytes_per_second": ...}`` of JAX's default
    device, measured once per process: a 4096x4096 bf16 matrix product and an elementwise
    pass over 256 MB, best of five runs each. For a part whose data sheet xlanb does not
    know; it compiles two small programs and holds about 300 MB while it runs."""
    if _STATE.device is None:
        import jax
        import jax.numpy as jnp

        size = 4096
        square = jnp.ones((size, size), jnp.bfloat16)
        product = jax.jit(lambda a: a @ a)
        flops = [2 * size**3 / _best_seconds(lambda: product(square))]
        vector = jnp.ones(64 * 2**20, jnp.float32)
        add_one = jax.jit(lambda v: v + 1)
        rates = [2 * vector.nbytes / _best_seconds(lambda: add_one(vector))]
        _STATE.device = {
            "peak_flops_per_second": max(flops),
            "peak_bytes_per_second": max(rates),
        }
    return dict(_STATE.device)


def _best_seconds(run) -> float:
    """The shortest of five timed runs of a JAX call (after one untimed run: the compile)."""
    run().block_until_ready()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        run().block_until_ready()
        best = min(best, time.perf_counter() - started)
    return max(best, 1e-9)
