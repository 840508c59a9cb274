"""Who this process is in a multi-process run: rank, world size, host, device and run id.

Nothing here starts a runtime: a runtime is asked only when the process has imported it and
it is already initialised.

The rules that pick the rank and world size, and the run id, are on
:func:`_rank_and_world` and :func:`_run_id`.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

RUN_ID_ENV = "XLANB_RUN_ID"
#: Key under which rank 0 publishes the run id in the coordinator's store.
STORE_KEY = "xlanb/run_id"
STORE_TIMEOUT_SECONDS = 60.0


@dataclass(eq=False)
class _RankState:
    """This module's mutable state, one instance (:data:`_STATE`)."""

    #: The run id exchanged through each kind of store: one exchange per process.
    store_run_ids: dict[str, str] = field(default_factory=dict)


_STATE = _RankState()


@dataclass(frozen=True)
class RankIdentity:
    """One process of a run, as recorded in ``Profile.environment["rank"]``."""

    run_id: str
    rank: int
    world_size: int
    host: str
    pid: int
    device: str
    local_rank: int | None = None
    #: Which rule gave rank and world size (``torch_xla``, ``env RANK/WORLD_SIZE``, ...).
    rank_source: str = "default"
    #: Which rule gave the run id (``XLANB_RUN_ID``, ``jax.distributed``, ``launcher``, ...).
    run_id_source: str = "launcher"
    #: World size the XLA runtime itself sees (None when no runtime was initialised).
    runtime_world_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def identify(
    rank: int | None = None, world_size: int | None = None, run_id: str | None = None
) -> RankIdentity:
    """This process's identity by the rules in this module's docstring; arguments win."""
    found_rank, found_world, rank_source = _rank_and_world()
    if rank is not None or world_size is not None:
        rank_source = "argument"
    rank = found_rank if rank is None else rank
    world_size = found_world if world_size is None else world_size
    if not 0 <= rank < max(world_size, 1):
        raise ValueError(f"rank {rank} is not within a world of {world_size}")
    if run_id is not None:
        chosen_run_id, run_id_source = str(run_id), "argument"
    else:
        chosen_run_id, run_id_source = _run_id()
    return RankIdentity(
        run_id=chosen_run_id,
        rank=int(rank),
        world_size=int(world_size),
        host=socket.gethostname(),
        pid=os.getpid(),
        device=_device(),
        local_rank=_local_rank(),
        rank_source=rank_source,
        run_id_source=run_id_source,
        runtime_world_size=_torch_xla_world_size(),
    )


def publish_run_id() -> None:
    """On rank 0 of a run with a coordinator store, publish the run id now (``record()``
    calls this on entry so that the other ranks need not wait for rank 0's exit)."""
    if os.environ.get(RUN_ID_ENV) or _elastic_run_id():
        return
    try:
        store = _coordinator_store()
        if store is not None and store.leader:
            _exchange(store)
    except Exception:  # never fail the user's block; identify() says what went wrong
        pass


# -- rank and world size --------------------------------------------------------------------
def _rank_and_world() -> tuple[int, int, str]:
    """Rank and world size, the first rule that applies:

    1. the ``rank=`` / ``world_size=`` arguments;
    2. PyTorch/XLA's runtime, when initialised and it spans more than one device:
       ``torch_xla.runtime.global_ordinal()`` / ``world_size()``;
    3. ``jax.distributed``, when initialised: its process index / process count;
    4. ``torch.distributed``, when initialised: ``get_rank()`` / ``get_world_size()``;
    5. the environment: ``RANK`` / ``WORLD_SIZE`` (torchrun and most launchers), else
       ``LOCAL_RANK`` / ``LOCAL_WORLD_SIZE``;
    6. rank 0 of 1.

    (PJRT on the CPU is single-process: under torchrun each process's runtime sees a world of one
    device, so rule 2 does not apply and the launcher's ``RANK`` / ``WORLD_SIZE`` are used.)
    """
    for source, probe in (
        ("torch_xla", _torch_xla_rank),
        ("jax.distributed", _jax_rank),
        ("torch.distributed", _torch_distributed_rank),
    ):
        try:
            found = probe()
        except Exception:  # a runtime mid-teardown must not stop the profile being written
            found = None
        if found is not None:
            return found[0], found[1], source
    for rank_name, world_name in (("RANK", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_WORLD_SIZE")):
        rank, world = _int_env(rank_name), _int_env(world_name)
        if rank is not None and world is not None and rank < world:
            return rank, world, f"env {rank_name}/{world_name}"
    return 0, 1, "default"


def _int_env(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _local_rank() -> int | None:
    for name in ("LOCAL_RANK", "PJRT_LOCAL_PROCESS_RANK"):
        value = _int_env(name)
        if value is not None:
            return value
    return None


def _torch_xla_initialised() -> bool:
    torch_xla = sys.modules.get("torch_xla")
    if torch_xla is None:
        return False
    try:
        return bool(torch_xla._XLAC._xla_runtime_is_initialized())
    except Exception:
        return False


def _torch_xla_world_size() -> int | None:
    if not _torch_xla_initialised():
        return None
    try:
        import torch_xla.runtime as xr

        return int(xr.world_size())
    except Exception:
        return None


def _torch_xla_rank() -> tuple[int, int] | None:
    world = _torch_xla_world_size()
    if world is None or world <= 1:
        return None
    import torch_xla.runtime as xr

    return int(xr.global_ordinal()), world


def _jax_state() -> Any:
    if "jax" not in sys.modules:
        return None
    from jax._src import distributed

    state = distributed.global_state
    return state if state.client is not None else None


def _jax_rank() -> tuple[int, int] | None:
    state = _jax_state()
    if state is None:
        return None
    return int(state.process_id), int(state.num_processes)


def _torch_distributed() -> Any:
    if "torch.distributed" not in sys.modules:
        return None
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def _torch_distributed_rank() -> tuple[int, int] | None:
    dist = _torch_distributed()
    if dist is None:
        return None
    return int(dist.get_rank()), int(dist.get_world_size())


# -- device ---------------------------------------------------------------------------------
def _device() -> str:
    """The device(s) this process computes on, as the initialised runtimes name them."""
    names = []
    if _torch_xla_initialised():
        try:
            import torch_xla
            import torch_xla.runtime as xr

            names.append(f"{torch_xla.device()} ({xr.device_type()})")
        except Exception:
            pass
    if "jax" in sys.modules:
        try:
            import jax
            from jax._src import xla_bridge

            if xla_bridge.backends_are_initialized():
                local = jax.local_devices()
                names.append(
                    ", ".join(str(d) for d in local[:4])
                    + (f" (+{len(local) - 4})" if len(local) > 4 else "")
                )
        except Exception:
            pass
    return "; ".join(names)


# -- run id ---------------------------------------------------------------------------------
def _elastic_run_id() -> str | None:
    value = os.environ.get("TORCHELASTIC_RUN_ID", "")
    return value if value and value != "none" else None


def _run_id() -> tuple[str, str]:
    """Run id, shared by every rank of one run, the first rule that applies:

    1. the ``run_id=`` argument;
    2. ``$XLANB_RUN_ID``;
    3. ``$TORCHELASTIC_RUN_ID`` (torchrun's ``--rdzv-id``; a fresh id with ``--standalone``),
       unless it is ``none``, torchrun's default;
    4. the run's coordinator: ``jax.distributed``'s key-value store, else ``torch.distributed``'s
       default store: rank 0 writes a fresh id under ``xlanb/run_id`` and the other ranks read it
       (waiting up to ``STORE_TIMEOUT_SECONDS``);
    5. the launching process: host name, parent pid and the parent's start time, which every
       process started by one launcher on one host shares (torchrun's agent, ``xmp.spawn``, a
       script that starts the ranks with ``&``).
    """
    if os.environ.get(RUN_ID_ENV):
        return os.environ[RUN_ID_ENV], RUN_ID_ENV
    elastic = _elastic_run_id()
    if elastic:
        return elastic, "TORCHELASTIC_RUN_ID"
    store = _coordinator_store()
    if store is not None:
        try:
            return _exchange(store), store.kind
        except Exception as error:
            warnings.warn(
                f"xlanb: could not share a run id through {store.kind} ({error}); "
                f"using the launching process's instead (set {RUN_ID_ENV} to choose "
                "one)",
                stacklevel=3,
            )
    return _launcher_run_id(), "launcher"


@dataclass
class _Store:
    kind: str
    leader: bool
    put: Callable[[str, str], None]
    get: Callable[[str, float], str]


def _coordinator_store() -> _Store | None:
    try:
        state = _jax_state()
    except Exception:
        state = None
    if state is not None and state.num_processes > 1:
        client = state.client
        return _Store(
            "jax.distributed",
            state.process_id == 0,
            lambda key, value: client.key_value_set(key, value, allow_overwrite=True),
            lambda key, seconds: client.blocking_key_value_get(key, int(seconds * 1000)),
        )
    try:
        dist = _torch_distributed()
    except Exception:
        dist = None
    if dist is not None and dist.get_world_size() > 1:
        store = dist.distributed_c10d._get_default_store()

        def get(key: str, seconds: float) -> str:
            store.wait([key], timedelta(seconds=seconds))
            return store.get(key).decode()

        return _Store(
            "torch.distributed", dist.get_rank() == 0, lambda key, value: store.set(key, value), get
        )
    return None


def _exchange(store: _Store) -> str:
    """Rank 0 writes a fresh id into the store; the others read it. Once per process."""
    cached = _STATE.store_run_ids.get(store.kind)
    if cached is not None:
        return cached
    if store.leader:
        run_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        store.put(STORE_KEY, run_id)
    else:
        run_id = store.get(STORE_KEY, STORE_TIMEOUT_SECONDS)
    _STATE.store_run_ids[store.kind] = run_id
    return run_id


def _launcher_run_id() -> str:
    parent = os.getppid()
    return f"{socket.gethostname()}-ppid{parent}-{_start_time(parent)}"


def _start_time(pid: int) -> str:
    """When process `pid` started, in clock ticks since boot (Linux ``/proc``); '' elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""
