"""The xlanb Jupyter kernel: a kernel spec (from ``kernel_ext/``) that starts this Python with
ipykernel and, before the first cell, sets the runtimes' debug switches and loads xlanb.

``xlanb kernel install|list|uninstall`` manage the specs; :func:`start` runs inside the kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

DEFAULT_NAME = "xlanb"
RUNTIMES_ENV = "XLANB_KERNEL_RUNTIMES"  # runtimes installed when the spec was made
PROFILE_ALL_ENV = "XLANB_PROFILE_ALL"
DEEP_ENV = "XLANB_DEEP"  # xlanb.capture.switches.DEEP_ENV (not imported: a light module)


def _template_dir() -> Path:
    return Path(str(resources.files("xlanb") / "kernel_ext"))


def kernel_spec(display_name: str, env: dict[str, str], profile_all: bool) -> dict[str, Any]:
    """The kernel.json for this Python: kernel_ext/kernel.json with its placeholders filled."""
    from xlanb.capture.backends import BACKENDS  # noqa: PLC0415 - loaded when used

    template = json.loads((_template_dir() / "kernel.json").read_text())
    bootstrap = (_template_dir() / "bootstrap.py").read_text()
    filled = {"{python}": sys.executable, "{bootstrap}": bootstrap, "{display_name}": display_name}

    def fill(value: str) -> str:
        for placeholder, text in filled.items():
            if placeholder in value:
                return value.replace(placeholder, text)
        return value

    spec = dict(template)
    spec["argv"] = [fill(arg) for arg in template["argv"]]
    spec["display_name"] = fill(template["display_name"])
    installed = [name for name, backend in BACKENDS.items() if backend.is_installed()]
    spec["env"] = {RUNTIMES_ENV: ",".join(installed), **env}
    if profile_all:
        spec["env"][PROFILE_ALL_ENV] = "1"
    spec["metadata"] = {
        **template.get("metadata", {}),
        "xlanb": {"runtimes": installed, "profile_all": profile_all},
    }
    return spec


def install(
    name: str = DEFAULT_NAME,
    display_name: str | None = None,
    env: dict[str, str] | None = None,
    profile_all: bool = False,
    user: bool = False,
    prefix: str | None = None,
) -> str:
    """Install the kernel spec; returns the directory it was installed to."""
    display_name = (
        display_name or f"Python {sys.version_info.major}.{sys.version_info.minor} (xlanb)"
    )
    spec = kernel_spec(display_name, env or {}, profile_all)
    with tempfile.TemporaryDirectory() as staging:
        (Path(staging) / "kernel.json").write_text(json.dumps(spec, indent=1))
        return KernelSpecManager().install_kernel_spec(
            staging, kernel_name=name, user=user, prefix=prefix
        )


def installed_specs() -> dict[str, str]:
    """xlanb kernel specs visible to Jupyter: name -> resource directory."""
    manager = KernelSpecManager()
    found = {}
    for name, directory in manager.find_kernel_specs().items():
        try:
            spec = manager.get_kernel_spec(name)
        except (NoSuchKernel, ValueError, OSError):
            continue
        if "xlanb" in spec.metadata:
            found[name] = directory
    return found


def uninstall(name: str) -> None:
    if name not in installed_specs():
        raise SystemExit(f"xlanb: no xlanb kernel named {name!r} (see `xlanb kernel list`)")
    KernelSpecManager().remove_kernel_spec(name)


def start(shell) -> str:
    """Inside a starting kernel: set the debug switches, load xlanb, switch on auto-profiling
    if asked. Returns a one-line message for the user ('' when all is well)."""
    from xlanb import enable  # noqa: PLC0415 - loaded when used
    from xlanb.capture.backends import BACKENDS  # noqa: PLC0415 - loaded when used
    from xlanb.frontends.extension import load_ipython_extension  # noqa: PLC0415 - loaded when used

    missing = [
        name
        for name in os.environ.get(RUNTIMES_ENV, "").split(",")
        if name in BACKENDS and not BACKENDS[name].is_installed()
    ]
    notes = enable()
    # not through the extension manager: the notebook's own `%load_ext xlanb` then shows
    # xlanb's ready line rather than IPython's "already loaded"
    load_ipython_extension(shell, announce=False)
    if os.environ.get(PROFILE_ALL_ENV):
        shell.run_line_magic("xla_profile", "on")
    messages = notes
    if missing:
        hints = " ".join(BACKENDS[name].INSTALL_HINT for name in missing)
        messages = [
            f"xlanb kernel: {', '.join(missing)} no longer installed in {sys.executable}. {hints}",
            *notes,
        ]
    return " ".join(messages)


def main(argv: list[str]) -> int:
    """``xlanb kernel install|list|uninstall``."""
    parser = argparse.ArgumentParser(prog="xlanb kernel", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("install", help="install the xlanb kernel spec for this Python")
    add.add_argument("--name", default=DEFAULT_NAME)
    add.add_argument("--display-name", default=None)
    where = add.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="into the user's Jupyter dir")
    where.add_argument("--sys-prefix", action="store_true", help=f"into {sys.prefix}")
    where.add_argument("--prefix", default=None, help="into PREFIX/share/jupyter/kernels")
    add.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment for the kernel; overrides any debug switch",
    )
    add.add_argument("--profile-all", action="store_true", help="profile every cell")
    add.add_argument(
        "--deep",
        action="store_true",
        help="also the costly debug switches: the source line of every torch_xla HLO op "
        "(XLA_IR_DEBUG/XLA_HLO_DEBUG slow the user's tracing; see bench/switches.py)",
    )
    commands.add_parser("list", help="list installed xlanb kernels")
    remove = commands.add_parser("uninstall", help="remove an xlanb kernel spec")
    remove.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "install":
        env = {}
        for item in args.env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                parser.error(f"--env takes KEY=VALUE, not {item!r}")
            env[key] = value
        if args.deep:
            env.setdefault(DEEP_ENV, "1")
        prefix = sys.prefix if args.sys_prefix else args.prefix
        directory = install(
            args.name, args.display_name, env, args.profile_all, user=args.user, prefix=prefix
        )
        print(f"installed kernel {args.name!r} in {directory}")
    elif args.command == "list":
        for name, directory in sorted(installed_specs().items()):
            print(f"{name}\t{directory}")
    else:
        uninstall(args.name)
        print(f"removed kernel {args.name!r}")
    return 0
