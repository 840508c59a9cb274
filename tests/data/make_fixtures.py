"""Regenerate the fixtures of this directory from the real runtimes.

    .venv/bin/python tests/data/make_fixtures.py                    # torch._lazy, JAX
    PJRT_DEVICE=CPU .venv-xla/bin/python tests/xla/test_offline_xla.py   # torch_xla/

The workloads are the ones the tests run (tests/runtime/test_offline.py,
tests/xla/test_offline_xla.py); only small text files are kept.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.runtime.test_offline import JAX_WORKLOAD, LAZY_WORKLOAD  # noqa: E402
from tests.support.helpers import clean_env  # noqa: E402


def main() -> None:
    scratch = Path(tempfile.mkdtemp())
    (scratch / "lazy.py").write_text(LAZY_WORKLOAD)
    subprocess.run(
        [sys.executable, str(scratch / "lazy.py"), str(HERE / "torch_lazy_report.txt")],
        env=clean_env(),
        check=True,
    )
    (scratch / "jax_workload.py").write_text(JAX_WORKLOAD)
    subprocess.run(
        [sys.executable, str(scratch / "jax_workload.py")],
        check=True,
        env={
            **clean_env(),
            "XLA_FLAGS": f"--xla_dump_to={scratch / 'dump'}",
            "JAX_PLATFORMS": "cpu",
        },
    )
    target = HERE / "jax_dump"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for path in sorted((scratch / "dump").iterdir()):
        if path.is_file() and path.name.endswith(
            ("optimizations.txt", "-memory-usage-report.txt", "-buffer-assignment.txt")
        ):
            shutil.copy(path, target / path.name)


if __name__ == "__main__":
    main()
