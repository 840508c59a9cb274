"""Every place where the JAX backend reaches into JAX beyond its public API, in one package.

Each touch point is checked once, at first use, by a capability check (:mod:`.checks`:
an import, ``hasattr``, a signature or layout check), cached with :func:`functools.cache`.
A touch point this JAX lacks turns its feature off: :func:`switch_on` hands back a one-line
note per missing one (shown once per session), and nothing raises into the user's cell.
Above the checks sits the version gate (:mod:`xlanb.capture.versions`): outside the
supported range only the public API is used. Names were checked in ``jax/_src`` of JAX
0.12.0.1, 0.10.2 and 0.6.1. The modules, by job: :mod:`.compiles` (duration events,
cache-miss explanations, the compile wrapper), :mod:`.counting` (the dispatch counter, host
transfers and copies), :mod:`.reads` (values read back), :mod:`.donation` (unused donations),
:mod:`.live` (live arrays), :mod:`.executables` (what a loaded executable says),
:mod:`.names` (program names and stacks). Only this package imports JAX's internals
(``.importlinter``).
"""

from __future__ import annotations

import logging

from xlanb.capture import versions
from xlanb.capture.backends.jax.hooks.checks import EXPLAIN_LOGGER as EXPLAIN_LOGGER
from xlanb.capture.backends.jax.hooks.checks import EXPLAIN_LOGGERS as EXPLAIN_LOGGERS
from xlanb.capture.backends.jax.hooks.checks import Check as Check
from xlanb.capture.backends.jax.hooks.checks import CompileEntry as CompileEntry
from xlanb.capture.backends.jax.hooks.checks import DispatchTarget as DispatchTarget
from xlanb.capture.backends.jax.hooks.checks import compile_entry as compile_entry
from xlanb.capture.backends.jax.hooks.checks import dispatch_target as dispatch_target
from xlanb.capture.backends.jax.hooks.checks import environment_readers as environment_readers
from xlanb.capture.backends.jax.hooks.checks import explain_option as explain_option
from xlanb.capture.backends.jax.hooks.checks import profiler_session as profiler_session
from xlanb.capture.backends.jax.hooks.checks import source_exclusion as source_exclusion
from xlanb.capture.backends.jax.hooks.checks import traceback_exclusion as traceback_exclusion
from xlanb.capture.backends.jax.hooks.compiles import CACHE_HIT_EVENT as CACHE_HIT_EVENT
from xlanb.capture.backends.jax.hooks.compiles import COMPILE_EVENT as COMPILE_EVENT
from xlanb.capture.backends.jax.hooks.compiles import FILTER as FILTER
from xlanb.capture.backends.jax.hooks.compiles import LOWER_EVENT as LOWER_EVENT
from xlanb.capture.backends.jax.hooks.compiles import TRACE_EVENT as TRACE_EVENT
from xlanb.capture.backends.jax.hooks.compiles import _compile_hook_on as _compile_hook_on
from xlanb.capture.backends.jax.hooks.compiles import _explain_on as _explain_on
from xlanb.capture.backends.jax.hooks.compiles import compile_hook as compile_hook
from xlanb.capture.backends.jax.hooks.compiles import duration_listener as duration_listener
from xlanb.capture.backends.jax.hooks.compiles import explain_enter as explain_enter
from xlanb.capture.backends.jax.hooks.compiles import explain_exit as explain_exit
from xlanb.capture.backends.jax.hooks.compiles import log_filters as log_filters
from xlanb.capture.backends.jax.hooks.compiles import on_duration as on_duration
from xlanb.capture.backends.jax.hooks.compiles import user_explains as user_explains
from xlanb.capture.backends.jax.hooks.counting import STATIC_REPR_CHARS as STATIC_REPR_CHARS
from xlanb.capture.backends.jax.hooks.counting import _device_put_off as _device_put_off
from xlanb.capture.backends.jax.hooks.counting import _device_put_on as _device_put_on
from xlanb.capture.backends.jax.hooks.counting import _dispatch_counter as _dispatch_counter
from xlanb.capture.backends.jax.hooks.counting import _dispatch_off as _dispatch_off
from xlanb.capture.backends.jax.hooks.counting import _dispatch_on as _dispatch_on
from xlanb.capture.backends.jax.hooks.counting import static_arguments as static_arguments
from xlanb.capture.backends.jax.hooks.donation import DONATION_WARNING as DONATION_WARNING
from xlanb.capture.backends.jax.hooks.donation import _donation_off as _donation_off
from xlanb.capture.backends.jax.hooks.donation import _donation_on as _donation_on
from xlanb.capture.backends.jax.hooks.donation import lowering_module as lowering_module
from xlanb.capture.backends.jax.hooks.executables import block_until_ready as block_until_ready
from xlanb.capture.backends.jax.hooks.executables import costs as costs
from xlanb.capture.backends.jax.hooks.executables import environment as environment
from xlanb.capture.backends.jax.hooks.executables import memory as memory
from xlanb.capture.backends.jax.hooks.executables import module_proto as module_proto
from xlanb.capture.backends.jax.hooks.executables import output_probe as output_probe
from xlanb.capture.backends.jax.hooks.executables import probe_ran as probe_ran
from xlanb.capture.backends.jax.hooks.executables import program_id as program_id
from xlanb.capture.backends.jax.hooks.executables import still_running as still_running
from xlanb.capture.backends.jax.hooks.executables import temporaries as temporaries
from xlanb.capture.backends.jax.hooks.live import CREATION_SAMPLES as CREATION_SAMPLES
from xlanb.capture.backends.jax.hooks.live import HOLDER_ITEMS as HOLDER_ITEMS
from xlanb.capture.backends.jax.hooks.live import LEFT_ALIVE_GROUPS as LEFT_ALIVE_GROUPS
from xlanb.capture.backends.jax.hooks.live import NEWEST_KEPT as NEWEST_KEPT
from xlanb.capture.backends.jax.hooks.live import LiveSnapshot as LiveSnapshot
from xlanb.capture.backends.jax.hooks.live import device_memory as device_memory
from xlanb.capture.backends.jax.hooks.live import left_alive as left_alive
from xlanb.capture.backends.jax.hooks.live import live_arrays as live_arrays
from xlanb.capture.backends.jax.hooks.live import live_at_failure as live_at_failure
from xlanb.capture.backends.jax.hooks.live import made_since as made_since
from xlanb.capture.backends.jax.hooks.names import function_name as function_name
from xlanb.capture.backends.jax.hooks.names import hlo_text as hlo_text
from xlanb.capture.backends.jax.hooks.names import module_name as module_name
from xlanb.capture.backends.jax.hooks.names import python_stack as python_stack
from xlanb.capture.backends.jax.hooks.names import static_positions as static_positions
from xlanb.capture.backends.jax.hooks.reads import _reads_off as _reads_off
from xlanb.capture.backends.jax.hooks.reads import _reads_on as _reads_on
from xlanb.capture.backends.jax.state import STATE, Restore


# -- switching on and off --------------------------------------------------------------------
def switch_on() -> list[str]:
    """Switch the hooks on for the first active capture; returns a note per feature this JAX
    does not offer (then left out, rather than failing the user's cell), each said once per
    session."""
    checks = (
        source_exclusion(),
        traceback_exclusion(),
        duration_listener(),
        log_filters(),
        environment_readers(),
    )
    # the gate's own line first: a release newer than tested, or below the range
    notes = [versions.gate("jax").note] + [check.note for check in checks if check.note]
    restore = Restore()
    _explain_on(restore, notes)
    _compile_hook_on(restore, notes)
    _dispatch_on(restore, notes)
    _device_put_on(restore, notes)
    _reads_on(restore, notes)
    _donation_on(restore, notes)
    STATE.restore = restore
    STATE.listening = True
    return versions.tell_once(notes)


def switch_off() -> None:
    """Put back everything :func:`switch_on` changed (when the last capture ends)."""
    STATE.listening = False
    restore, STATE.restore = STATE.restore, None
    if restore is None:
        return
    _dispatch_off(restore)
    _device_put_off(restore)
    _reads_off(restore)
    _donation_off(restore)
    if restore.compile_fn is not None:
        compiler = compile_entry().found.compiler
        if compiler.compile_or_get_cached is compile_hook:
            compiler.compile_or_get_cached = restore.compile_fn
    for name, level in restore.logger_levels.items():
        logging.getLogger(name).setLevel(level)
