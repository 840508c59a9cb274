"""Late-bound methods: the upper layers' implementations of the data objects' user methods.

``Profile.graph``, ``Profile.to_html``, ``Graph.html`` ... are defined down here and call the
implementation that :mod:`xlanb.analysis.programs`, :mod:`xlanb.formats.profile_json` and
:mod:`xlanb.views.methods` register under a name when they are imported (``xlanb.api`` imports
them all), so the data layers never import the layers above them. Where none is registered
yet (a script that imported ``xlanb.graphs`` alone), :data:`PROVIDERS` are imported by name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

PROVIDERS = (
    "xlanb.formats.profile_json",
    "xlanb.analysis.programs",
    "xlanb.analysis.shown",
    "xlanb.views.methods",
)

_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}
Implementation = TypeVar("Implementation", bound=Callable[..., Any])


def provides(name: str) -> Callable[[Implementation], Implementation]:
    """Register the decorated function as the implementation of method `name`."""

    def register(function: Implementation) -> Implementation:
        _IMPLEMENTATIONS[name] = function
        return function

    return register


def implementation(name: str) -> Callable[..., Any]:
    """The function registered for method `name` (importing the providers when none is)."""
    if name not in _IMPLEMENTATIONS:
        for module in PROVIDERS:
            importlib.import_module(module)
    return _IMPLEMENTATIONS[name]
