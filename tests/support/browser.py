"""Driving Debian's Chromium with Playwright (never a downloaded browser), offline."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.support.helpers import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def browser_page(
    allowed_prefixes: tuple[str, ...] = ("file://", "data:", "blob:"),
    width: int = 1300,
    height: int = 1000,
) -> Iterator[tuple[object, list[str]]]:
    """A page in headless Chromium whose requests outside `allowed_prefixes` are aborted and
    recorded in the list yielded with it."""
    from playwright.sync_api import sync_playwright

    blocked: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})

            def route(request_route):
                url = request_route.request.url
                if url.startswith(allowed_prefixes):
                    request_route.continue_()
                else:
                    blocked.append(url)
                    request_route.abort()

            page.route("**/*", route)
            yield page, blocked
        finally:
            browser.close()


@contextlib.contextmanager
def checked_page() -> Iterator[tuple[object, list[str], list[str]]]:
    """:func:`browser_page` that also records the page's uncaught errors and console errors
    in the list yielded third, and at its end asserts that there were none and that no
    request left the machine."""
    with browser_page() as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        yield page, blocked, errors
        assert not blocked, f"the page tried the network: {blocked}"
        assert not errors, errors


@contextlib.contextmanager
def jupyter_lab(root: Path, token: str = "xlanb-test", app: str = "lab") -> Iterator[str]:
    """A JupyterLab (`app="lab"`) or Notebook 7 (`app="notebook"`) server on localhost serving
    `root`; yields its base URL with the token."""
    import os

    port = free_port()
    log = (root / "jupyter-lab.log").open("w")
    # Fresh settings every time: a theme chosen in an earlier run must not leak in.
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(root / ".lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(root / ".lab-workspaces"),
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            app,
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            *(
                [
                    "--LabApp.expose_app_in_browser=True",
                    "--LabApp.news_url=",
                    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                ]
                if app == "lab"
                else ["--JupyterNotebookApp.expose_app_in_browser=True"]
            ),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError((root / "jupyter-lab.log").read_text()) from None
                time.sleep(0.25)
        yield f"{base}?token={token}"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
