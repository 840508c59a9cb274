"""What a loaded executable says (touch point 12), the environment (11), and arrays.

Static memory, the HLO module proto and its id, temporaries, costs (``cost_analysis()``,
``get_compiled_memory_stats()``; NaN or {} where JAX does not say), and what tells when a
call's run has ended, for the device trace's window.
"""

from __future__ import annotations

from typing import Any

from xlanb.capture.backends.jax.hooks.checks import environment_readers
from xlanb.capture.backends.jax.state import RAN
from xlanb.formats.buffer_assignment import Temporary, hlo_module_id, temporaries_from_proto


def memory(executable) -> dict[str, float]:
    """A loaded executable's static memory (``get_compiled_memory_stats()``, touch point 12)
    in the ``compiles`` columns the torch_xla debug file fills, each one device's, and the
    number of its devices (``devices``); {} where JAX does not say."""
    try:
        stats = executable.get_compiled_memory_stats()
        sizes = {
            "input_bytes": float(stats.argument_size_in_bytes),
            "output_bytes": float(stats.output_size_in_bytes),
            "aliased_bytes": float(stats.alias_size_in_bytes),
            "intermediate_bytes": float(stats.temp_size_in_bytes),
            "program_bytes": float(stats.generated_code_size_in_bytes),
        }
    except Exception:
        return {}
    peak = float(getattr(stats, "peak_memory_in_bytes", 0) or 0)
    if not peak:
        peak = (
            sizes["input_bytes"]
            + sizes["output_bytes"]
            + sizes["intermediate_bytes"]
            - sizes["aliased_bytes"]
        )
    return {**sizes, "peak_bytes": peak, **_devices(executable)}


def _devices(executable) -> dict[str, int]:
    """``{"devices": N}``: the devices a loaded executable runs on in this process, whose
    compiled memory stats are each one device's; {} where JAX does not say."""
    try:
        return {"devices": len(executable.local_devices())}
    except Exception:
        return {}


def module_proto(executable) -> bytes | None:
    """The serialized ``HloModuleProto`` of a loaded executable (touch point 12), or None."""
    try:
        return executable.hlo_modules()[0].as_serialized_hlo_module_proto()
    except Exception:
        return None


def program_id(module: bytes | None) -> int | None:
    """The program id the device trace gives the runs of the module `module_proto` returned."""
    return hlo_module_id(module) if module else None


def temporaries(executable, module: bytes | None) -> list[Temporary]:
    """The largest temporary buffers of a loaded executable, from the buffer assignment its
    compiled memory stats carry, named through its HLO module's proto (`module_proto`; touch
    point 12); [] where JAX does not hand them over."""
    if not module:
        return []
    try:
        assignment = executable.get_compiled_memory_stats().serialized_buffer_assignment_proto
    except Exception:
        return []
    return temporaries_from_proto(assignment, module) if assignment else []


def costs(executable) -> dict[str, float]:
    """``flops``, ``bytes_accessed`` and ``peak_memory_bytes`` of a loaded executable (NaN
    where it does not say; touch point 12)."""
    flops = bytes_accessed = peak = float("nan")
    try:
        analysis = executable.cost_analysis()
        if isinstance(analysis, list | tuple):
            analysis = analysis[0] if analysis else {}
        flops = float(analysis.get("flops", float("nan")))
        bytes_accessed = float(analysis.get("bytes accessed", float("nan")))
    except Exception:
        pass
    try:
        stats = executable.get_compiled_memory_stats()
        peak = float(getattr(stats, "peak_memory_in_bytes", 0) or 0)
        if not peak:
            peak = float(
                stats.argument_size_in_bytes
                + stats.output_size_in_bytes
                + stats.temp_size_in_bytes
                - stats.alias_size_in_bytes
            )
    except Exception:
        pass
    return {"flops": flops, "bytes_accessed": bytes_accessed, "peak_memory_bytes": peak}


def environment() -> dict[str, Any]:
    """JAX's and jaxlib's versions and the platform, when JAX's backends are up (touch point
    11)."""
    import jax

    found: dict[str, Any] = {"jax": jax.__version__}
    readers = environment_readers().found
    if readers is None:
        return found
    backends_are_initialized, version_str = readers
    try:
        found["jaxlib"] = version_str
        if backends_are_initialized():
            found["jax_platform"] = jax.default_backend()
    except Exception:
        pass
    return found


# -- arrays ----------------------------------------------------------------------------------
def output_probe(value: Any) -> Any:
    """What tells when the run of a call with result `value` (a pytree) has ended: its
    smallest array while that run goes on (a run's outputs are ready together; a loss rather
    than the parameters, which the next call may donate), else :data:`RAN`. xlanb holds it
    only until its run ends (:func:`probe_ran`): a weak reference died as soon as the cell
    dropped the array (``x = step(x)``), long before its run ended."""
    try:
        import jax

        leaves = [leaf for leaf in jax.tree_util.tree_leaves(value) if hasattr(leaf, "is_ready")]
        smallest = min(leaves, key=lambda leaf: getattr(leaf, "size", 0), default=None)
    except Exception:  # nothing to wait on
        return RAN
    return RAN if smallest is None or probe_ran(smallest) else smallest


def probe_ran(probe: Any) -> bool:
    """Whether the run of an :func:`output_probe` has ended; never waits."""
    try:
        return probe is RAN or probe.is_ready()
    except Exception:
        return True  # deleted or donated meanwhile: nothing to say


def still_running(value: Any) -> bool:
    """Whether an array of `value` (a pytree) is still being computed; never waits."""
    try:
        import jax

        leaves = jax.tree_util.tree_leaves(value)
        return any(hasattr(leaf, "is_ready") and not leaf.is_ready() for leaf in leaves)
    except Exception:
        return False  # an array deleted or donated meanwhile: nothing to say


def block_until_ready(value: Any) -> None:
    """Wait until the device has computed `value` (a pytree of arrays)."""
    import jax

    jax.block_until_ready(value)
