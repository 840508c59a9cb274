"""``--live``: a line under a running cell with compiles, executions, syncs and CPU fallbacks
so far, refreshed about twice a second; when the cell ends it is emptied and the normal summary and
charts follow the cell's own output."""

from __future__ import annotations

import html
import threading
import time

from IPython.display import HTML, display

from xlanb.capture.backends.base import Progress
from xlanb.views.summary import format_seconds

INTERVAL_SECONDS = 0.5


def live_html(progress: Progress, elapsed: float) -> str:
    fallback_style = " style='color:#d62728'" if progress.fallbacks else ""
    return (
        f"<div class='xlanb-live' style='font-family:system-ui,sans-serif;font-size:13px'>"
        f"<b>xlanb live</b> {html.escape(format_seconds(elapsed))} · "
        f"<b>compiles</b> {progress.compiles} · <b>executions</b> {progress.executions} · "
        f"<b>syncs</b> {progress.syncs} · "
        f"<span{fallback_style}><b>CPU fallbacks</b> {progress.fallbacks}</span></div>"
    )


class LiveView:
    """Show `recorder.progress()` under the cell until :meth:`stop`."""

    def __init__(self, recorder) -> None:
        self._recorder = recorder
        self._stopped = threading.Event()
        self._started = time.perf_counter()
        self.updates = 0
        self._handle = display(HTML(live_html(Progress(), 0.0)), display_id=True)
        self._thread = threading.Thread(target=self._run, name="xlanb-live", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(INTERVAL_SECONDS):
            elapsed = time.perf_counter() - self._started
            self._handle.update(HTML(live_html(self._recorder.progress(), elapsed)))
            self.updates += 1

    def stop(self) -> None:
        """Stop refreshing and empty the live line: the cell's summary and charts then come
        together under the cell's own output, as without ``--live``."""
        self._stopped.set()
        self._thread.join()
        self._handle.update({"text/plain": "", "text/html": ""}, raw=True)
