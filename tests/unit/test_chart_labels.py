"""Row labels of the offline timeline: hashes cut, names kept whole."""

from __future__ import annotations

from xlanb.views.charts import _short_graph


def test_hashes_are_cut_and_names_are_kept():
    assert _short_graph("c12ab82fb2c7c51d390aac6c82225070") == "c12ab82fb2c7"
    assert _short_graph("jit(train_step)") == "jit(train_step)"
    long_name = "jit(" + "a" * 60 + ")"
    assert _short_graph(long_name) == long_name[:39] + "…"
