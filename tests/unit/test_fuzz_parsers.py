"""Every offline parser on mutated real files: lines deleted, duplicated or swapped, text cut
off, bytes flipped, junk inserted. The only acceptable outcomes are a Profile (with the
documented frames, summary and trace) or :class:`xlanb.FormatError`, with warnings allowed;
any other exception is a bug. Inputs: ``tests/data`` (real files, see its README).

About 2,200 examples in all; the metrics-file test also checks that the fast parser agrees
with the strict one wherever the strict one accepts the file.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xlanb.core.errors import FormatError
from xlanb.core.profile import FRAME_COLUMNS, Profile
from xlanb.formats import metrics_report
from xlanb.offline import from_text, step_table
from xlanb.offline import metrics_file as metrics_file_module
from xlanb.offline.xla_dump import load_dump_dir

DATA = Path(__file__).parent.parent / "data"
XLA = DATA / "torch_xla"


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        # CI runs the same examples every time (a red CI blocks everything); locally each run
        # explores new ones
        derandomize=bool(os.environ.get("CI")),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# -- mutations ---------------------------------------------------------------------------------
_OPERATIONS = ("delete", "duplicate", "swap", "truncate", "flip", "insert", "digit", "blank")
mutations = st.lists(
    st.tuples(
        st.sampled_from(_OPERATIONS),
        st.floats(0, 1),
        st.floats(0, 1),
        st.integers(1, 255),
        st.text(max_size=40),
    ),
    min_size=1,
    max_size=4,
)


def mutate(data: bytes, operations: list[tuple[str, float, float, int, str]]) -> bytes:
    """Apply line- and byte-level damage, positions given as fractions of the input."""
    for kind, where, other, byte, junk in operations:
        lines = data.split(b"\n")
        line, second = int(where * (len(lines) - 1)), int(other * (len(lines) - 1))
        position = int(where * max(len(data) - 1, 0))
        if kind == "delete":
            del lines[line]
        elif kind == "duplicate":
            lines.insert(line, lines[line])
        elif kind == "swap":
            lines[line], lines[second] = lines[second], lines[line]
        elif kind == "insert":
            lines.insert(line, junk.encode("utf-8", errors="surrogatepass"))
        elif kind == "blank":
            lines.insert(line, b"")
        if kind in ("delete", "duplicate", "swap", "insert", "blank"):
            data = b"\n".join(lines)
        elif kind == "truncate":
            data = data[:position]
        elif kind == "flip" and data:
            data = data[:position] + bytes([data[position] ^ byte]) + data[position + 1 :]
        elif kind == "digit" and data:
            digits = [i for i, b in enumerate(data) if 48 <= b <= 57]
            if digits:
                at = digits[int(other * (len(digits) - 1))]
                data = data[:at] + str(byte % 10).encode() + data[at + 1 :]
    return data


def check_profile(profile: Profile) -> None:
    """What a caller relies on: documented frames, a summary, a JSON trace."""
    for name, columns in FRAME_COLUMNS.items():
        assert list(getattr(profile, name).columns[: len(columns)]) == columns, name
    profile.summary()
    json.dumps(profile.to_chrome_trace(), allow_nan=False)


def parse(data: bytes, name: str) -> Profile | None:
    """from_text on decoded bytes: a Profile, or None for a FormatError."""
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            profile = from_text(text, name)
        except FormatError as error:
            assert error.path == name and isinstance(error.line, int)
            return None
    check_profile(profile)
    return profile


# -- one test per parser -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "fixture, examples",
    [
        (XLA / "report.txt", 300),
        (DATA / "torch_lazy_report.txt", 150),
        (DATA / "troubleshooting_report.txt", 150),
    ],
)
def test_metrics_reports(fixture, examples):
    data = fixture.read_bytes()

    @fuzz(examples)
    @given(mutations)
    def run(operations):
        parse(mutate(data, operations), "report.txt")

    run()


@fuzz(400)
@given(mutations)
def test_xla_metrics_file(operations):
    text = mutate((XLA / "metrics.txt").read_bytes(), operations)
    profile = parse(text, "metrics.txt")
    if profile is None or profile.environment.get("format") != "xla_metrics_file":
        return  # refused, or (its header cut away) read as another format: nothing to compare
    step_table(profile)
    decoded = text.decode("utf-8", errors="replace").replace("\r\n", "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        complete = metrics_report.complete_records(decoded, "m")
    try:
        strict, _ = metrics_report.strict_columns(complete, "m")
    except FormatError as error:
        # the fast parser checks only the place of lines it does not read per step
        assert complete.split("\n")[error.line - 1].startswith(
            ("  ValueRate:", "  Rate:", "  Percentiles:")
        ), error
        return
    fast = metrics_file_module.steps_frame(strict)
    assert fast["value"].tolist() == profile.steps["value"].tolist()
    assert fast["name"].astype(str).tolist() == profile.steps["name"].astype(str).tolist()


@fuzz(400)
@given(mutations)
def test_pt_xla_debug_file(operations):
    parse(mutate((XLA / "debug.txt").read_bytes(), operations), "debug.txt")


@fuzz(300)
@given(mutations)
def test_saved_profile(operations):
    parse(mutate((XLA / "live.xlanb.json").read_bytes(), operations), "profile.json")


@fuzz(200)
@given(mutations)
def test_hlo_module_file(operations):
    path = DATA / "jax_dump" / "module_0006.jit_step.cpu_after_optimizations.txt"
    parse(mutate(path.read_bytes(), operations), path.name)


@pytest.fixture(scope="module")
def dump_copy():
    directory = Path(tempfile.mkdtemp(prefix="xlanb-fuzz-"))
    for source in (XLA / "dump", DATA / "jax_dump"):
        shutil.copytree(source, directory / source.name)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_dump_directories(dump_copy):
    files = sorted(dump_copy.glob("*/*.txt"))

    @fuzz(200)
    @given(st.sampled_from(files), mutations)
    def run(victim, operations):
        original = victim.read_bytes()
        victim.write_bytes(mutate(original, operations))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                profile = load_dump_dir(victim.parent)
            check_profile(profile)
        except FormatError as error:
            assert error.path in (str(victim), str(victim.parent))
        finally:
            victim.write_bytes(original)

    run()


@fuzz(200)
@given(
    st.one_of(
        st.text(max_size=300),
        st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace")),
    )
)
def test_arbitrary_text(text):
    parse(text.encode("utf-8", errors="surrogatepass"), "any.txt")


def test_mutations_do_damage():
    """The fuzzer must be able to make a file fail: a guard against a no-op mutator."""
    data = (XLA / "report.txt").read_bytes()
    assert mutate(data, [("insert", 0.5, 0.0, 1, "junk line")]) != data
    assert parse(mutate(data, [("insert", 0.5, 0.0, 1, "junk line")]), "r") is None
    assert parse(data, "r") is not None
