"""Bad inputs to ``xlanb.load`` give a clear error at once: never a hang on a FIFO, never
reading an endless device until memory runs out, never a leaked directory iterator."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import xlanb
from xlanb.formats.text import unquote
from xlanb.ranks import RankFileWarning

DATA = Path(__file__).parent.parent / "data"


def load_in_child(path: str) -> str:
    """``xlanb.load(path)`` in a child with a memory cap and a time limit (a regression must
    fail the test, not hang it or exhaust the machine)."""
    code = (
        "import resource, xlanb\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        f"try:\n    xlanb.load({path!r})\n"
        "except BaseException as e:\n    print(type(e).__name__, e)"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    return done.stdout


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = load_in_child(str(fifo))
    assert "FormatError" in out and "not a regular file" in out and str(fifo) in out


def test_an_endless_device_is_refused():
    out = load_in_child("/dev/zero")
    assert "FormatError" in out and "/dev/zero" in out and "not a regular file" in out


def test_loading_a_ranks_dir_leaks_no_directory_iterator(tmp_path):
    from xlanb.offline.ranks import is_ranks_dir

    for rank in range(3):  # any() stops at the first rank file: the listing must still close
        (tmp_path / f"run.rank{rank:05d}.xlanb.json").write_text("{}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert is_ranks_dir(tmp_path)
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_xla_octal_escapes_in_names_are_decoded():
    # XLA prints non-ASCII bytes of names as octal escapes: "größe" -> gr\303\266\303\237e
    assert unquote('"gr\\303\\266\\303\\237e"') == "größe"
    assert unquote('"a\\"b"') == 'a"b'
    assert unquote('"back\\\\slash"') == "back\\slash"


def test_bytes_that_are_not_utf8_are_reported_with_file_and_line(tmp_path):
    from xlanb.core.errors import NotUtf8Warning

    saved = (DATA / "torch_xla" / "live.xlanb.json").read_bytes()
    # a profile name written by a tool that did not use UTF-8 (Latin-1 "é")
    assert saved.count(b'"name": "') >= 1
    broken = saved.replace(b'"name": "', b'"name": "caf\xe9 ', 1)
    line = broken[: broken.index(b"\xe9")].count(b"\n") + 1
    path = tmp_path / "latin1.xlanb.json"
    path.write_bytes(broken)
    with pytest.warns(NotUtf8Warning, match=rf"{path}, line {line}: not UTF-8"):
        prof = xlanb.load(path)
    assert prof.name.startswith("caf\ufffd ")  # the rest still loads


def test_op_sources_decode_escaped_names_like_the_graph_parser():
    from xlanb.formats.hlo_text import count_hlo_instructions, hlo_op_sources

    text = (
        "HloModule m\n\nENTRY %e (p: f32[2]) -> f32[2] {\n"
        "  %p = f32[2]{0} parameter(0)\n"
        '  ROOT %sin.1 = f32[2]{0} sine(%p), metadata={op_name="gr\\303\\266\\303\\237e/sin" '
        'source_file="/tmp/caf\\303\\251.py" source_line=7}\n}\n'
    )
    assert count_hlo_instructions(text) == 2
    assert hlo_op_sources(text)["sin.1"] == ("/tmp/café.py", 7, "größe/sin", None)


def _saved_profile_document() -> dict:
    from xlanb.core.profile import Profile
    from xlanb.core.schema import make_frame

    profile = Profile(name="dtypes", backends=["torch_xla"], started_at=1.7e9, wall_seconds=1.0)
    profile.samples = make_frame(
        "samples",
        [
            {"backend": "torch_xla", "metric": "ExecuteTime", "time": 1.7e9 + i, "value": 0.01}
            for i in range(30)
        ],
    )
    profile.compiles = make_frame(
        "compiles",
        [
            {
                "backend": "torch_xla",
                "graph": "g",
                "cause": "new graph",
                "seconds": 1.5,
                "time": 1.7e9,
            }
        ],
    )
    return profile.to_dict()


@pytest.mark.parametrize(
    ("frame", "column", "change", "message"),
    [
        ("samples", "time", {"dtype": "datetime64[ns]"}, "samples.time has dtype datetime64[ns]"),
        ("compiles", "seconds", {"dtype": "category"}, "compiles.seconds has dtype category"),
        ("samples", "value", {"dtype": "complex128"}, "samples.value has dtype complex128"),
        ("compiles", "seconds", {"dtype": "bool"}, "compiles.seconds has dtype bool"),
        ("samples", "value", {"dtype": "object", "value": "abc"}, "samples.value holds 'abc'"),
        ("samples", "value", {"value": float("nan")}, "samples.value holds NaN"),
    ],
)
def test_saved_profiles_with_columns_of_the_wrong_type_are_refused(
    tmp_path, frame, column, change, message
):
    """A column the schema declares numeric (or text) must hold that: a datetime, category,
    complex or bool dtype, text in a number column or NaN samples are a FormatError naming
    the file, frame and column, not a profile that breaks when shown (or shows `True` as
    compile seconds)."""
    import json

    document = _saved_profile_document()
    spec = document["frames"][frame]
    if "dtype" in change:
        spec["dtypes"][column] = change["dtype"]
    if "value" in change:
        spec["data"][column][1] = change["value"]
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(document))
    with pytest.raises(xlanb.FormatError) as raised:
        xlanb.load(path)
    assert str(path) in str(raised.value) and message in str(raised.value)


def test_saved_profiles_with_numbers_stored_as_other_number_types_load_as_the_schema_says(
    tmp_path,
):
    import json

    document = _saved_profile_document()
    spec = document["frames"]["compiles"]
    spec["dtypes"]["seconds"] = "int64"
    spec["data"]["seconds"] = [2]
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(document))
    loaded = xlanb.load(path)
    assert str(loaded.compiles["seconds"].dtype) == "float64"
    assert loaded.compiles["seconds"].tolist() == [2.0]
    assert "compiles" in loaded.to_html()


def test_workdirs_of_dead_processes_are_swept_when_a_new_one_is_made(tmp_path):
    """A killed kernel never runs its atexit cleanup: the next process's workdir sweeps the
    directories of processes that are gone, and keeps those of live ones."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"xlanb-{dead.pid}-abc123"
    (stale / "xla_dump").mkdir(parents=True)
    (stale / "xla_dump" / "module.txt").write_text("x" * 1000)
    live = tmp_path / f"xlanb-{os.getpid()}-def456"
    live.mkdir()
    other = tmp_path / "xlanb-notours"
    other.mkdir()
    code = "from xlanb.capture import workdir; print(workdir.path())"
    env = {**os.environ, "XLANB_WORKDIR_ROOT": str(tmp_path)}
    env.pop("XLANB_WORKDIR", None)
    made = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    assert not stale.exists()
    assert live.exists() and other.exists()


def _rank_document(rank, world_size=2, run_id="run-a") -> dict:
    document = _saved_profile_document()
    document["meta"]["environment"] = {
        "rank": {"rank": rank, "world_size": world_size, "run_id": run_id}
    }
    return document


@pytest.mark.parametrize(
    ("identity", "reason"),
    [
        ({"rank": "abc"}, "rank 'abc' is not a whole number"),
        ({"rank": None}, "rank None is not a whole number"),
        ({"rank": -5}, "rank -5 is negative"),
        ({"rank": 7}, "rank 7 is not below the world size 2"),
        ({"world_size": 10**12}, "world size 1000000000000 is not between 1 and"),
        ({"world_size": "2"}, "world size '2' is not a whole number"),
        ({"run_id": ["x"]}, "run id ['x'] is not text"),
    ],
)
def test_rank_files_with_a_bad_identity_are_skipped_naming_the_file(tmp_path, identity, reason):
    import json

    for rank in (0, 1):
        (tmp_path / f"run.rank{rank:05d}.xlanb.json").write_text(json.dumps(_rank_document(rank)))
    bad = _rank_document(**{"rank": 1, **identity})
    bad_path = tmp_path / "run.rank00009.xlanb.json"
    bad_path.write_text(json.dumps(bad))
    with pytest.warns(RankFileWarning) as warned:
        merged = xlanb.load(tmp_path)
    messages = [str(w.message) for w in warned]
    assert any(str(bad_path) in m and reason in m for m in messages), messages
    assert sorted(set(merged.compiles["rank"])) == [0, 1]


def test_rank_files_with_ragged_or_mistyped_columns_are_skipped(tmp_path):
    import json

    for rank in (0, 1):
        (tmp_path / f"run.rank{rank:05d}.xlanb.json").write_text(json.dumps(_rank_document(rank)))
    ragged = _rank_document(1)
    ragged["frames"]["compiles"]["data"]["seconds"] = [1.0, 2.0]
    (tmp_path / "ragged.rank00001.xlanb.json").write_text(json.dumps(ragged))
    typed = _rank_document(0)
    typed["frames"]["compiles"]["data"]["seconds"] = ["slow"]
    (tmp_path / "typed.rank00000.xlanb.json").write_text(json.dumps(typed))
    with pytest.warns(RankFileWarning) as warned:
        merged = xlanb.load(tmp_path)
    messages = " ".join(str(w.message) for w in warned)
    assert "ragged.rank00001" in messages and "typed.rank00000" in messages
    assert merged.compiles["seconds"].tolist() == [1.5, 1.5]
