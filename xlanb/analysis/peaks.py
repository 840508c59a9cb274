"""Data-sheet peaks of current accelerators, by JAX's ``device_kind`` and element type.

Dense (not 2:4-sparse) tensor-core / MXU FLOP/s per chip and its memory bandwidth, from the
vendors' data sheets (sources in the README's roofline paragraph). XLA runs ``f32`` matrix
products at its default precision as TF32 on NVIDIA tensor cores and as bf16 passes on TPUs,
so ``f32`` reads those rows there; ``f32_simt`` is the NVIDIA non-tensor FP32 rate.
"""

from __future__ import annotations

#: Part -> (memory bytes/s, {dtype: FLOP/s}).
_T = 1e12
PEAKS: dict[str, tuple[float, dict[str, float]]] = {
    "H100 SXM": (
        3.35e12,
        {"f64": 67 * _T, "f32_simt": 67 * _T, "tf32": 494.7 * _T, "bf16": 989.4 * _T,
         "f16": 989.4 * _T, "f8": 1978.9 * _T, "s8": 1978.9 * _T},
    ),
    "H100 PCIe": (
        2.0e12,
        {"f64": 51 * _T, "f32_simt": 51 * _T, "tf32": 378 * _T, "bf16": 756 * _T,
         "f16": 756 * _T, "f8": 1513 * _T, "s8": 1513 * _T},
    ),
    "H100 NVL": (
        3.9e12,
        {"f64": 60 * _T, "f32_simt": 60 * _T, "tf32": 417.5 * _T, "bf16": 835.5 * _T,
         "f16": 835.5 * _T, "f8": 1670.5 * _T, "s8": 1670.5 * _T},
    ),
    "H200 SXM": (
        4.8e12,
        {"f64": 67 * _T, "f32_simt": 67 * _T, "tf32": 494.7 * _T, "bf16": 989.4 * _T,
         "f16": 989.4 * _T, "f8": 1978.9 * _T, "s8": 1978.9 * _T},
    ),
    "H200 NVL": (
        4.8e12,
        {"f64": 60 * _T, "f32_simt": 60 * _T, "tf32": 417.5 * _T, "bf16": 835.5 * _T,
         "f16": 835.5 * _T, "f8": 1670.5 * _T, "s8": 1670.5 * _T},
    ),
    "B200": (
        8.0e12,
        {"f64": 37 * _T, "f32_simt": 75 * _T, "tf32": 1125 * _T, "bf16": 2250 * _T,
         "f16": 2250 * _T, "f8": 4500 * _T, "s8": 4500 * _T},
    ),
    "A100 SXM 80GB": (
        2.039e12,
        {"f64": 19.5 * _T, "f32_simt": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T,
         "f16": 312 * _T, "s8": 624 * _T},
    ),
    "A100 PCIe 80GB": (
        1.935e12,
        {"f64": 19.5 * _T, "f32_simt": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T,
         "f16": 312 * _T, "s8": 624 * _T},
    ),
    "A100 40GB": (
        1.555e12,
        {"f64": 19.5 * _T, "f32_simt": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T,
         "f16": 312 * _T, "s8": 624 * _T},
    ),
    "L4": (
        0.3e12,
        {"f32_simt": 30.3 * _T, "tf32": 60 * _T, "bf16": 121 * _T, "f16": 121 * _T,
         "f8": 242.5 * _T, "s8": 242.5 * _T},
    ),
    "TPU v4": (1.2e12, {"bf16": 275 * _T, "s8": 275 * _T}),
    "TPU v5e": (0.819e12, {"bf16": 197 * _T, "s8": 394 * _T}),
    "TPU v5p": (2.765e12, {"bf16": 459 * _T, "s8": 918 * _T}),
    "TPU v6e": (1.64e12, {"bf16": 918 * _T, "s8": 1836 * _T}),
}  # fmt: skip

#: (words that must all be in the device kind, part), most specific first. JAX's kinds:
#: ``NVIDIA H100 80GB HBM3`` (SXM), ``NVIDIA H100 PCIe``, ``NVIDIA A100-SXM4-80GB``,
#: ``TPU v5 lite`` (v5e), ``TPU v5`` (v5p), ``TPU v6 lite`` (v6e).
_KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("H100", "NVL"), "H100 NVL"),
    (("H100", "PCIE"), "H100 PCIe"),
    (("H100",), "H100 SXM"),
    (("H200", "NVL"), "H200 NVL"),
    (("H200",), "H200 SXM"),
    (("B200",), "B200"),
    (("A100", "PCIE", "80GB"), "A100 PCIe 80GB"),
    (("A100", "80GB"), "A100 SXM 80GB"),
    (("A100",), "A100 40GB"),
    (("L4",), "L4"),
    (("TPU V6",), "TPU v6e"),
    (("TPU V5 LITE",), "TPU v5e"),
    (("TPU V5E",), "TPU v5e"),
    (("TPU V5",), "TPU v5p"),
    (("TPU V4",), "TPU v4"),
)


def part_of(device_kind: str) -> str | None:
    """The :data:`PEAKS` part a JAX ``device_kind`` names, or None for an unknown part."""
    kind = device_kind.upper()
    for words, part in _KINDS:
        if all(word in kind for word in words):
            if part == "L4" and "L40" in kind:
                return None
            return part
    return None


def peak_for(device_kind: str, dtype: str) -> tuple[float, float] | None:
    """(FLOP/s, bytes/s) of the part for matrix products in `dtype` (an HLO element type:
    ``f32``, ``bf16``, ``f8e4m3fn``, ``s8``); None for an unknown part or a type its data
    sheet gives no rate for."""
    part = part_of(device_kind)
    if part is None:
        return None
    bandwidth, rates = PEAKS[part]
    rate = rates.get(_rate_key(dtype, part.startswith("TPU")))
    return (rate, bandwidth) if rate else None


def _rate_key(dtype: str, tpu: bool) -> str:
    if dtype == "f32":
        return "bf16" if tpu else "tf32"
    if dtype.startswith("f8"):
        return "f8"
    if dtype in ("s8", "u8", "s4", "u4"):
        return "s8"
    return dtype
