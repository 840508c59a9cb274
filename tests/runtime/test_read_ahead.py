"""Reading a compiled program ahead (#27, :mod:`xlanb.capture.backends.jax.ahead`): the
first program a JAX cell compiles is read, and its texts parsed, on the read-ahead thread
while the cell goes on, so that the end of the cell and its display parse nothing; the
frames are the same as when the end of the cell reads it all itself."""

from __future__ import annotations

import sys
import threading

import pandas as pd
import pytest

from xlanb.capture.backends.jax import ahead

jax = pytest.importorskip("jax")

#: A small program of a few layers; {scale} makes each test's texts its own (parsed texts
#: are kept across cells).
CELL = """%%xla_profile -b jax --var {var}
@jax.jit
def ra_step(w, x):
    for _ in range(3):
        x = jnp.tanh(x @ w) * {scale}
    return jnp.sum(x ** 2)
for _ in range(3):
    out = ra_step(wr, xr)
out.block_until_ready()
"""

#: The file name IPython gives a cell's code (it names each run of a cell apart).
CELL_NAME = r"ipython-input-\d+-[0-9a-f]+"

SETUP = "import jax, jax.numpy as jnp\nwr = jnp.ones((16, 16)) * 0.1; xr = jnp.ones((8, 16))"


@pytest.fixture
def parses(monkeypatch) -> list[tuple[str, str]]:
    """(thread name, kind) of each text :func:`xlanb.graphs.parse.parse` parses."""
    found: list[tuple[str, str]] = []
    graph_parse = sys.modules["xlanb.graphs.parse"]
    original = graph_parse.parse

    def recorded(text, kind=None):
        found.append((threading.current_thread().name, str(kind)))
        return original(text, kind)

    monkeypatch.setattr(graph_parse, "parse", recorded)
    return found


def test_the_end_of_a_cell_and_its_display_parse_no_text_of_its_first_program(
    run, shell, parses, monkeypatch
):
    payloads = sys.modules["xlanb.views.graph_viewer.payload"]
    columns_built: list[str] = []  # the thread that built each graph's node columns
    original = payloads._node_columns

    def recorded(*args, **kwargs):
        columns_built.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(payloads, "_node_columns", recorded)
    run(SETUP)
    run(CELL.format(var="ra_first", scale="1.0625"))
    prof = shell.user_ns["ra_first"]
    html = prof._repr_html_()  # as the cell's display: the viewer draws both texts

    # the viewer's payloads found their graphs' node columns built on the worker
    assert columns_built == ["xlanb-read-ahead"] * 2

    assert "Graph viewer" in html
    assert sorted(parses) == [
        ("xlanb-read-ahead", "hlo_optimized"),
        ("xlanb-read-ahead", "stablehlo"),
    ]
    assert prof.graph(0, kind="stablehlo").nodes.shape[0] > 0  # kept: parsed no more
    assert len(parses) == 2


def test_frames_are_the_same_read_ahead_or_at_the_end(run, shell, monkeypatch):
    run(SETUP)
    monkeypatch.setattr(ahead, "PROGRAMS_AHEAD", 0)  # the end of the cell reads it all
    run(CELL.format(var="ra_at_end", scale="1.125"))
    monkeypatch.setattr(ahead, "PROGRAMS_AHEAD", 4)
    run(CELL.format(var="ra_ahead", scale="1.125"))
    at_end, read_ahead = shell.user_ns["ra_at_end"], shell.user_ns["ra_ahead"]

    graph_columns = ["graph", "kind", "text", "nodes", "flops", "bytes_accessed", "signature"]
    graph_columns += ["peak_memory_bytes"]

    # the two cells' texts differ only in where they ran: the name IPython gave each cell's
    # code, and this test's lines in the stack tables that follow an optimized module
    def same_cell(graphs: pd.DataFrame) -> pd.DataFrame:
        named = graphs[graph_columns].reset_index(drop=True)
        program = named["text"].str.split("\nFileNames\n").str[0]
        return named.assign(text=program.str.replace(CELL_NAME, "cell", regex=True))

    pd.testing.assert_frame_equal(same_cell(at_end.graphs), same_cell(read_ahead.graphs))
    memory = [c for c in at_end.compiles.columns if c.endswith("_bytes")]
    assert "peak_bytes" in memory
    pd.testing.assert_frame_equal(
        at_end.compiles[["graph", *memory]].reset_index(drop=True),
        read_ahead.compiles[["graph", *memory]].reset_index(drop=True),
    )
    kept = [c for c in at_end.temporaries.columns if c != "compile_id"]
    assert len(at_end.temporaries) > 0
    pd.testing.assert_frame_equal(
        at_end.temporaries[kept].reset_index(drop=True),
        read_ahead.temporaries[kept].reset_index(drop=True),
    )
    rated = ["op", "flops", "bytes", "bound"]
    assert at_end.ops["flops"].notna().any()
    pd.testing.assert_frame_equal(
        at_end.ops[rated].sort_values("op").reset_index(drop=True),
        read_ahead.ops[rated].sort_values("op").reset_index(drop=True),
    )
    assert not ahead.AHEAD.futures  # nothing held past the cell


def test_a_quiet_cell_parses_nothing_ahead(run, shell, parses):
    run(SETUP)
    run(CELL.format(var="ra_quiet", scale="1.5").replace(" --var", " -q --var"))
    assert len(shell.user_ns["ra_quiet"].graphs) == 2
    assert parses == []


def test_only_the_first_programs_are_read_ahead(run, shell, monkeypatch, parses):
    run(SETUP)
    monkeypatch.setattr(ahead, "PROGRAMS_AHEAD", 1)
    taken: list[bool] = []
    original = ahead.AHEAD.take

    def recorded(executable):
        reads = original(executable)
        taken.append(reads is not None)
        return reads

    monkeypatch.setattr(ahead.AHEAD, "take", recorded)
    cell = CELL.format(var="ra_two", scale="1.25") + "out2 = ra_step(wr[:8, :8], xr[:, :8])\n"
    run(cell)
    prof = shell.user_ns["ra_two"]

    compiled = prof.compiles[~prof.compiles["eager"].eq(True)]
    assert len(compiled) == 2 and taken.count(True) == 1
    assert len(prof.graphs) == 4 and prof.graphs["text"].str.len().gt(0).all()
    # the first program's texts, on the read-ahead thread; nothing else parsed yet
    assert sorted(parses) == [
        ("xlanb-read-ahead", "hlo_optimized"),
        ("xlanb-read-ahead", "stablehlo"),
    ]


def test_the_end_of_a_cell_analyses_no_text_the_worker_read(run, shell, monkeypatch):
    from xlanb.analysis.op_kinds import instruction_categories
    from xlanb.formats.hlo_text import hlo_op_sources

    run(SETUP)
    analyses = (hlo_op_sources, instruction_categories)
    for analysis in analyses:
        analysis.cache_clear()
    after_worker: list[list[int]] = []
    original = ahead.warm

    def recorded(*args, **kwargs):
        original(*args, **kwargs)
        after_worker.append([analysis.cache_info().misses for analysis in analyses])

    monkeypatch.setattr(ahead, "warm", recorded)
    run(CELL.format(var="ra_analysed", scale="1.75"))

    assert len(shell.user_ns["ra_analysed"].ops) > 0  # the trace's ops were categorised
    assert len(after_worker) == 1
    # the worker computed each analysis of the program's text; the end of the cell only
    # found them
    assert min(after_worker[0]) >= 1
    assert [analysis.cache_info().misses for analysis in analyses] == after_worker[0]


def test_a_first_text_clearly_over_the_viewer_budget_is_not_packed(run, shell, monkeypatch):
    """The worker packs the first program's graph part once to know its size: a display whose
    room is clearly under it shows the program's other text without packing this one only to
    drop it, and shows the same as when it packed it."""
    import re

    from xlanb.views import html as html_view
    from xlanb.views.graph_viewer import payload, viewer_assets
    from xlanb.views.graph_viewer.payload import least_packed_size

    graph_html = sys.modules["xlanb.views.graph_viewer.html"]
    run(SETUP)
    run(CELL.format(var="ra_budget", scale="1.875"))
    prof = shell.user_ns["ra_budget"]
    first_kind = prof.graph_kinds(0)[0]
    least = least_packed_size(prof.graph(0, kind=first_kind))
    assert least is not None  # measured on the worker
    room = len(viewer_assets(packed=True)) + int(least * 0.9)
    monkeypatch.setattr(html_view, "VIEWER_BYTES", room)
    packed: list[int] = []
    original = graph_html.packed_for_script

    def recorded(*args, **kwargs):
        sent = original(*args, **kwargs)
        packed.append(len(sent))
        return sent

    monkeypatch.setattr(graph_html, "packed_for_script", recorded)
    skipped = prof._repr_html_()
    packs_skipped = len(packed)
    monkeypatch.setattr(html_view, "LEAST_SIZE_SHARE", 0.0)  # never judged by its part
    packed.clear()
    tried = prof._repr_html_()

    assert packs_skipped == len(packed) - 1  # the first text was packed only to be dropped

    def same_ids(page: str) -> str:
        return re.sub(r"xlanb-graph-\d+", "xlanb-graph-N", page)

    assert same_ids(skipped) == same_ids(tried)
    # the bound holds: the whole payload (measured time included) packs to no less
    for kind in prof.graph_kinds(0):
        graph = prof.graph(0, kind=kind)
        assert graph_html.packed_for_script(payload(graph)) and least_packed_size(graph)
        assert len(original(payload(graph))) >= least_packed_size(graph)


def test_the_first_programs_stablehlo_is_parsed_while_xla_compiles_it(run, shell, monkeypatch):
    """The StableHLO text exists before XLA compiles it: its parse for the viewer starts on
    the worker then, not after the compile (XLA holds no Python lock while it compiles). The
    compile here waits (10 s at most) for that parse to start: it used to start after."""
    from jax._src import compiler

    graph_parse = sys.modules["xlanb.graphs.parse"]
    original_parse, original_compile = graph_parse.parse, compiler.compile_or_get_cached
    started, compiling, seen = threading.Event(), [False], []

    def parse(text, kind=None):
        if str(kind) == "stablehlo":
            seen.append((threading.current_thread().name, compiling[0]))
            started.set()
        return original_parse(text, kind)

    def compile_after_the_parse_started(*args, **kwargs):
        compiling[0] = True
        try:
            started.wait(10.0)
            return original_compile(*args, **kwargs)
        finally:
            compiling[0] = False

    monkeypatch.setattr(graph_parse, "parse", parse)
    monkeypatch.setattr(compiler, "compile_or_get_cached", compile_after_the_parse_started)
    run(SETUP)
    run(CELL.format(var="ra_early", scale="1.375"))
    assert seen == [("xlanb-read-ahead", True)]
    assert shell.user_ns["ra_early"].graph(0, kind="stablehlo").nodes.shape[0] > 0


def test_the_worker_reads_a_drawn_text_once_for_its_costs_and_its_graph(monkeypatch):
    """An optimized HLO text the viewer draws (a recorded H100 program): the worker's costs
    and categories and its graph share one read of it, and the graph is the one a parse of
    its own makes."""
    from pathlib import Path

    from xlanb.graphs import hlo, parse

    folder = Path(__file__).resolve().parent.parent / "data" / "xla_gpu" / "mlp_cmdbuf"
    text = next((folder / "xla_dump").glob("*after_optimizations.txt")).read_text() + "\n\n\n"
    reads: list[int] = []
    read_once = hlo._read_once

    def counted(read_text: str):
        reads.append(len(read_text))
        return read_once(read_text)

    monkeypatch.setattr(hlo, "_read_once", counted)
    ahead.warm(text, None, parse=True)
    assert reads == [len(text)]
    assert not hlo._SHARED_READS  # dropped after the worker's block
    shared = ahead.parse_once(text, "hlo_optimized")
    alone = parse(text, "hlo_optimized")
    pd.testing.assert_frame_equal(shared.nodes, alone.nodes)
    pd.testing.assert_frame_equal(shared.edges, alone.edges)
