"""Out-of-memory errors as the runtimes word them (measured on this machine, and GPU/TPU
clients' wordings), and errors that are not out of memory."""

from __future__ import annotations

import math

import pytest

from xlanb.formats.oom_text import out_of_memory


@pytest.mark.parametrize(
    ("error", "requested"),
    [
        ("JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 2147483648 bytes.", 2**31),
        (
            "JaxRuntimeError: INTERNAL: Error dispatching computation: Out of memory allocating "
            "402653184 bytes.",
            402653184,
        ),
        ("RuntimeError: Out of memory allocating 1073741824 bytes.", 2**30),
        (
            "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.50GiB.",
            1.5 * 2**30,
        ),
        ("RuntimeError: Failed to allocate request for 1.00GiB (1073741824B) on device", 2**30),
        ("MemoryError: ", math.nan),
    ],
)
def test_out_of_memory_errors_and_the_bytes_they_asked_for(error, requested):
    found = out_of_memory(error)
    assert found is not None
    if math.isnan(requested):
        assert math.isnan(found.requested_bytes)
    else:
        assert found.requested_bytes == requested


@pytest.mark.parametrize(
    "error", [None, "", "ValueError: shapes do not match", "KeyError: 'memory'"]
)
def test_other_errors_are_not_out_of_memory(error):
    assert out_of_memory(error) is None
