"""XLA:GPU traces recorded on an H100 and an H200 (``h200_*``: bench/gpu_check.py; JAX 0.11.2,
``tests/data/xla_gpu``): per-op time through
command buffers, what ops compute, and device time that is the program's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlanb.analysis import command_buffers, device_time
from xlanb.analysis.command_buffers import COMMAND_BUFFER, UNATTRIBUTED
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "data" / "xla_gpu"
WHOLE = (0.0, 1e12)


def _graphs(folder: Path) -> list[dict]:
    return [
        {
            "graph": "jit(train_step)",
            "kind": "hlo_optimized",
            "module_id": int(path.name.split(".")[0].removeprefix("module_")),
            "text": path.read_text(),
        }
        for path in sorted((folder / "xla_dump").glob("*gpu_after_optimizations.txt"))
    ]


def _ops(folder: str, name: str = "steady5.xplane.pb") -> tuple[list[dict], list[dict], object]:
    events = read_xspace(DATA / folder / name, markers=False)
    ops, spans = device_time.rows("jax", events, WHOLE, _graphs(DATA / folder))
    return ops, spans, events


@pytest.mark.parametrize("case", ["mlp", "transformer", "h200_mlp"])
def test_kernels_in_command_buffers_are_placed_on_their_instructions(case):
    ops, _, events = _ops(f"{case}_cmdbuf")
    frame = events.events
    kernels = frame[frame["plane"].str.startswith("/device:GPU") & frame["hlo_op"].notna()]
    assert set(kernels["hlo_op"]) == {"command_buffer_1"}  # what the trace says
    assert not any(row["op"].startswith(COMMAND_BUFFER) for row in ops)
    # every kernel's time is on one row, once
    assert sum(row["seconds"] for row in ops) == pytest.approx(kernels["duration_ns"].sum() / 1e9)
    # 5 steady runs: each instruction ran once a run
    assert {row["count"] for row in ops} == {5}


def test_the_mlp_places_each_kernel_where_the_run_without_command_buffers_has_it():
    # the same program (the mlp compiles alike with and without command buffers): the run
    # without them names each kernel's instruction
    placed, _, _ = _ops("mlp_cmdbuf")
    truth, _, _ = _ops("mlp_nocmdbuf")
    assert {row["op"] for row in placed} == {row["op"] for row in truth}
    assert not any(row["op"].endswith(UNATTRIBUTED) for row in placed)


def test_gpu_ops_say_what_they_compute_and_which_jax_op_they_are():
    ops, _, _ = _ops("mlp_nocmdbuf")
    by_op = {row["op"]: row for row in ops}
    assert by_op["cublas-lt-matmul.1"]["category"] == "matmul"
    assert by_op["custom-call.0"]["category"] == "matmul"
    assert by_op["custom-call.0"]["op_name"] == "jit(train_step)/transpose(jvp())/transpose"
    assert by_op["input_reduce_fusion.4"]["category"] == "reduction"
    assert by_op["copy.8"]["category"] == "data movement"
    assert by_op["loop_multiply_fusion"]["category"] == "elementwise"
    assert by_op["cublas-lt-matmul.1"]["source_file"] is not None


def test_compiling_kernels_are_not_the_programs_device_time():
    # a first cell: the autotuner ran thousands of kernels while compiling, of the fusions
    # it tuned and of none; 15 runs of the step program launched the program's own
    ops, spans, events = _ops("mlp_first15", "first15.xplane.pb")
    frame = events.events
    on_gpu = frame[frame["plane"].str.startswith("/device:GPU")]
    own = on_gpu[on_gpu["hlo_module"] == "jit_train_step"]
    assert (on_gpu["hlo_module"] != "jit_train_step").sum() > 1000
    assert {row["module"] for row in ops} == {"jit_train_step"}
    assert sum(row["seconds"] for row in ops) == pytest.approx(own["duration_ns"].sum() / 1e9)
    runs = [span for span in spans if span["lane"] == "device"]
    assert len(runs) == 15 and {span["graph"] for span in runs} == {"jit(train_step)"}


def test_load_reads_a_trace_folder_with_its_dump_into_the_frames_of_a_capture():
    import xlanb

    profile = xlanb.load(DATA / "mlp_first15")
    events = read_xspace(DATA / "mlp_first15" / "first15.xplane.pb", markers=False).events
    own = events[events["hlo_module"] == "jit_train_step"]["duration_ns"].sum() / 1e9
    # 12 runs of the full batch, 3 of the half: the two compiles of jit(train_step), one step
    steps = profile.step_times
    assert len(steps) == 15 and steps["graph"].nunique() == 1
    assert list(steps.loc[steps["phase"] == "warm-up", "step"]) == [0, 12]
    # the device bucket is the runs' own kernels' span, never the autotuner's
    device = profile.breakdown.set_index("bucket").loc["device", "seconds"]
    assert own <= device <= float(steps["seconds"].sum())
    assert set(profile.ops["module"]) == {"jit_train_step"}
    matmuls = profile.ops[profile.ops["category"] == "matmul"]
    assert len(matmuls) >= 14 and matmuls["op_name"].notna().all()  # its 14 matmuls
    assert len(profile.compiles) == 2 and len(profile.executions) == 15
    # the dump's GPU file names hold the compute capability (``sm_9.0a_gpu_after_...``)
    assert set(profile.compiles["graph"]) == set(profile.executions["graph"]) == {"jit_train_step"}
    assert not profile.temporaries.empty and not profile.samples.empty


def test_the_main_threads_wait_is_sync_wait_on_a_gpu_trace():
    # JAX 0.11's host plane names the main thread after the process (``python3``): the
    # steady loop's block_until_ready is the cell waiting for the GPU
    _, spans, events = _ops("mlp_cmdbuf")
    frame = events.events
    wait = frame[frame["name"].str.endswith("block_until_ready")]
    assert set(wait["line"]) == {"python3"}
    waits = [span for span in spans if span["lane"] == "sync_wait"]
    # to float64's resolution of epoch nanoseconds (a span's end is start + duration)
    assert sum(span["seconds"] for span in waits) >= wait["duration_ns"].sum() / 1e9 - 1e-6


def test_a_run_the_window_closed_in_is_not_a_traced_run_on_gpu():
    # the recorded steady trace as the profiler would have left it, stopped in its last run
    # (kernels that had not ended are not recorded)
    events = read_xspace(DATA / "mlp_cmdbuf" / "steady5.xplane.pb", markers=False)
    frame = events.events
    kernels = frame[frame["plane"].str.startswith("/device:GPU")].sort_values("start_ns")
    stop = float(kernels["start_ns"].iloc[-10])  # 40 of the last run's 50 kernels ran
    ends = frame["start_ns"] + frame["duration_ns"]
    events.events = frame[~frame["plane"].str.startswith("/device:GPU") | (ends <= stop)]
    ops, spans = device_time.rows("jax", events, WHOLE, _graphs(DATA / "mlp_cmdbuf"))
    assert len([span for span in spans if span["lane"] == "device"]) == 4
    assert {row["count"] for row in ops} == {4}


def test_a_tensorboard_log_dir_with_its_dump_loads_and_reports(tmp_path):
    import shutil

    import xlanb
    from xlanb.frontends import cli

    run = tmp_path / "logs" / "plugins" / "profile" / "2026_11_26_18_59_00"
    run.mkdir(parents=True)
    shutil.copy(DATA / "mlp_cmdbuf" / "steady5.xplane.pb", run / "gpu-host.xplane.pb")
    shutil.copytree(DATA / "mlp_cmdbuf" / "xla_dump", tmp_path / "dump")
    profile = xlanb.load(tmp_path / "logs", dump=tmp_path / "dump")
    assert len(profile.step_times) == 5 and not profile.ops["op"].str.startswith("command").any()
    out = tmp_path / "report.html"
    assert cli.main(["report", str(tmp_path), "-o", str(out)]) == 0
    assert "loop_multiply_fusion" in out.read_text()


@pytest.mark.parametrize("case", ["mlp", "transformer"])
def test_a_program_compiled_before_the_capture_is_placed_from_the_dump(case):
    """A program compiled in an unprofiled cell: the capture has no graph of it, so the live
    path reads its optimized HLO from the dump xlanb set, and its kernels inside command
    buffers are placed on their instructions (not all on ``command_buffer_1``)."""
    from xlanb.capture.backends.jax.rows import remember_dumped_programs
    from xlanb.capture.backends.jax.state import Session

    session = Session()
    remember_dumped_programs(session, str(DATA / f"{case}_cmdbuf" / "xla_dump"))
    (module_id,) = [key for key in session.programs if isinstance(key, int)]
    assert session.programs["jit_train_step"] is session.programs[module_id]
    events = read_xspace(DATA / f"{case}_cmdbuf" / "steady5.xplane.pb", markers=False)
    known = dict(session.programs)
    ops, _ = device_time.rows(
        "jax",
        events,
        WHOLE,
        known_modules={key: graph for key, (graph, _, _) in known.items()},
        known_sources={key: sources for key, (_, sources, _) in known.items()},
        known_texts={key: text for key, (_, _, text) in known.items()},
    )
    assert ops and not any(row["op"].startswith(COMMAND_BUFFER) for row in ops)
    assert {row["count"] for row in ops} == {5}
    # and without the dump, what a capture of such a program had: one command buffer
    bare, _ = device_time.rows("jax", events, WHOLE)
    assert {row["op"] for row in bare} == {"command_buffer_1"}


def _runs_and_text(case: str) -> tuple[object, str]:
    events = device_time.program_events(
        read_xspace(DATA / case / "steady5.xplane.pb", markers=False).events
    )
    kernels = events[events["hlo_op"].notna()].sort_values("start_ns")
    text = next((DATA / case / "xla_dump").glob("*after_optimizations.txt")).read_text()
    return kernels, text


def test_a_steady_cells_runs_reuse_an_earlier_captures_alignment():
    """A steady cell launches the kernels an earlier capture's runs of the program did: their
    placement is looked up, not aligned again (on an H100 a 12-layer transformer's cell spent
    0.8 s of its end aligning)."""
    kernels, text = _runs_and_text("transformer_cmdbuf")
    first = command_buffers.attribute(kernels, text)
    before = command_buffers._aligned.cache_info()
    again = command_buffers.attribute(kernels, text)
    after = command_buffers._aligned.cache_info()
    assert again.equals(first)
    assert after.misses == before.misses and after.hits > before.hits


@pytest.mark.parametrize("case", ["mlp_cmdbuf", "transformer_cmdbuf", "h200_mlp_cmdbuf"])
def test_a_run_too_long_for_the_tables_is_placed_alike_in_order(case, monkeypatch):
    """Past ALIGN_CELLS (a program of 10^5 kernels a run) kernels are placed greedily in
    order: on the recorded runs, every kernel where the full alignment puts it."""
    kernels, text = _runs_and_text(case)
    aligned = command_buffers.attribute(kernels, text)
    monkeypatch.setattr(command_buffers, "ALIGN_CELLS", 0)
    greedy = command_buffers.attribute(kernels, text)
    assert greedy.equals(aligned)
    assert not greedy.astype(str).str.endswith(UNATTRIBUTED).any()
