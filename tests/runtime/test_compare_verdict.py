"""Comparing two real JAX profiles says first whether the second is faster or slower, and
where a slower one's time grew (a "fix" that was slower said nothing of it)."""

from __future__ import annotations

import html

import pytest

import xlanb
from xlanb.analysis.compare import compare
from xlanb.views.compare import verdict
from xlanb.views.summary import account_parts

jax = pytest.importorskip("jax")
jnp = jax.numpy


def step(w, x):
    return w - 0.01 * jax.grad(lambda w: ((x @ w) ** 2).sum())(w)


@pytest.fixture(scope="module")
def warm_and_recompiling():
    jitted = jax.jit(step)
    w = jnp.ones((16, 16))
    jitted(w, jnp.ones((8, 16))).block_until_ready()
    with xlanb.profile(backend="jax", name="warm") as warm:
        for _ in range(5):
            w = jitted(w, jnp.ones((8, 16)))
        w.block_until_ready()
    batches = [jnp.ones((rows, 16)) for rows in (3, 5, 7, 9, 11)]
    with xlanb.profile(backend="jax", name="recompiling") as recompiling:
        jax.clear_caches()
        for x in batches:
            w = jitted(w, x)
        w.block_until_ready()
    return warm, recompiling


def test_a_slower_after_is_said_first_with_where_its_time_grew(warm_and_recompiling):
    warm, recompiling = warm_and_recompiling
    assert warm.summary()["compiles"] == 0 and recompiling.summary()["compiles"] == 5
    for a, b in ((warm, recompiling), (recompiling, warm)):
        comparison = compare(a, b)
        line, slower = verdict(comparison)
        assert slower == (b.wall_seconds > a.wall_seconds)
        word = "slower" if slower else "faster"
        assert line.startswith(f"{b.name} is {word} than {a.name}: wall "), line
        assert repr(comparison).splitlines()[1] == line
        assert html.escape(line, quote=False) in comparison._repr_html_().replace("&#x27;", "'")
        if not slower:
            assert "grew" not in line
            continue
        before = {bucket: seconds for bucket, seconds, _ in account_parts(a)}
        growth = {bucket: s - before.get(bucket, 0.0) for bucket, s, _ in account_parts(b)}
        largest = max(growth, key=growth.__getitem__)
        assert f"; the time account grew in {largest} +" in line, (line, growth)
        assert "(compiles 0 → 5)" in line
    # five compiles inside the recompiling cell took longer than the whole warm cell: slower
    if float(recompiling.compiles["seconds"].sum()) > warm.wall_seconds:
        assert verdict(compare(warm, recompiling))[1]


def test_offline_files_have_no_verdict():
    from pathlib import Path

    files = Path(__file__).parent.parent / "data" / "torch_xla"
    comparison = compare(xlanb.load(files / "report.txt"), xlanb.load(files / "metrics.txt"))
    assert verdict(comparison) == ("", False)
    assert "faster" not in repr(comparison) and "slower" not in repr(comparison)
