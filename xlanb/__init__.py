"""xlanb: a Jupyter-native profiler for lazy-tensor and XLA workloads.

In a notebook, ``%load_ext xlanb`` then ``%%xla_profile`` on a cell; in a script::

    xlanb.enable()           # before importing torch_xla / starting torch._lazy
    with xlanb.profile() as prof:
        train_step()

A plain ``import xlanb`` changes nothing in the process. The package is layered (each layer
imports only the ones below it; ``make lint`` checks it): ``frontends`` > ``api`` > ``views``
> ``capture`` | ``offline`` > ``analysis`` > ``graphs`` > ``formats`` > ``core``; this module
re-exports the public API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xlanb.api import enable, history, last, load, profile, record
    from xlanb.core.errors import (
        BackendUnavailable,
        CompileBudgetExceeded,
        FormatError,
        XlanbError,
    )
    from xlanb.core.profile import Profile
    from xlanb.core.schema import FRAME_COLUMNS

__all__ = [
    "FRAME_COLUMNS",
    "BackendUnavailable",
    "CompileBudgetExceeded",
    "FormatError",
    "Profile",
    "XlanbError",
    "clear_history",
    "enable",
    "history",
    "last",
    "load",
    "load_ipython_extension",
    "profile",
    "record",
    "set_history_limit",
    "unload_ipython_extension",
]
__version__ = "0.1.0"

#: Public names and the module that defines each. Everything is imported on first use, so
#: ``import xlanb`` (or ``import xlanb.graphs``, a text parser) loads nothing else.
_EXPORTS = {
    "clear_history": "xlanb.api",
    "set_history_limit": "xlanb.api",
    "enable": "xlanb.api",
    "history": "xlanb.api",
    "last": "xlanb.api",
    "load": "xlanb.api",
    "profile": "xlanb.api",
    "record": "xlanb.api",
    "BackendUnavailable": "xlanb.core.errors",
    "CompileBudgetExceeded": "xlanb.core.errors",
    "FormatError": "xlanb.core.errors",
    "XlanbError": "xlanb.core.errors",
    "Profile": "xlanb.core.profile",
    "FRAME_COLUMNS": "xlanb.core.schema",
}
#: Public subpackages, imported on first use.
_LAZY_SUBMODULES = ("compare", "graphs", "offline", "ranks", "views")


def load_ipython_extension(ipython) -> None:
    """``%load_ext xlanb`` (see :mod:`xlanb.frontends.extension`)."""
    from xlanb.frontends.extension import load_ipython_extension as load_extension  # noqa: PLC0415 - loaded when used

    load_extension(ipython)


def unload_ipython_extension(ipython) -> None:
    from xlanb.frontends.extension import unload_ipython_extension as unload_extension  # noqa: PLC0415 - loaded when used

    unload_extension(ipython)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"xlanb.{name}")
    raise AttributeError(f"module 'xlanb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, *_LAZY_SUBMODULES])
