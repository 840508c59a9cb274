"""The runtime's own noise on file descriptor 2, kept out of the user's cell.

Some releases write a line to the process's stderr (C++, not Python logging) whenever the XLA
profiler starts or stops: jaxlib 0.6 prints ``python_hooks.cc:412] Can't import
tensorflow.python.profiler.trace`` at each start and stop of a trace xlanb started, which JAX
alone would never have printed into the cell. Around xlanb's own profiler calls, fd 2 is
pointed at a temporary file; afterwards the known noise is dropped and every other line
(anything the user's threads or the runtime wrote meanwhile) is written back to fd 2.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from collections.abc import Iterator

#: Lines the XLA profiler writes at start or stop that say nothing to the user.
NOISE = (re.compile(rb"python_hooks\.cc:\d+\] Can't import tensorflow\.python\.profiler\.trace"),)

_lock = threading.Lock()


def is_noise(line: bytes) -> bool:
    return any(pattern.search(line) for pattern in NOISE)


@contextlib.contextmanager
def runtime_noise_dropped() -> Iterator[None]:
    """Drop the profiler's known lines on fd 2 while the block runs; pass on the rest."""
    with _lock:
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 (a closed stderr): nothing to drop either
            yield
            return
        scratch = tempfile.TemporaryFile()
        try:
            os.dup2(scratch.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            try:
                scratch.seek(0)
                kept = [line for line in scratch.read().splitlines(True) if not is_noise(line)]
                if kept:
                    os.write(2, b"".join(kept))
            except OSError:
                pass
            finally:
                scratch.close()
