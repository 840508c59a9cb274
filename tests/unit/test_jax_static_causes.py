"""The cause of a JAX 0.12 recompile that JAX explains only as ``cache miss explanation
unavailable`` (the keys differ in a static argument, which its explanation no longer names):
xlanb names it from the static arguments of the call that compiled, as JAX 0.10 did. The
explanation text below is JAX 0.12.0.1's, as logged for ``f(x, 3)`` after ``f(x, 2)`` with
``static_argnums=1``. No runtime."""

from __future__ import annotations

from xlanb.formats.jax_text import (
    IDENTITY_HASHED,
    JAX_UNEXPLAINED,
    STATIC_CHANGED,
    explanation_cause,
    static_change_cause,
)

JAX_012_STATIC_MISS = """TRACING CACHE MISS at /tmp/explain.py:7:19 (<module>):
  for f defined at /tmp/explain.py:5
  all previously seen cache keys differ. For the closest previous key:
  cache miss explanation unavailable"""


def test_jax_012_leaves_a_static_change_unexplained():
    assert explanation_cause(JAX_012_STATIC_MISS) == JAX_UNEXPLAINED


def test_a_changed_value_reads_as_jax_010_wrote_it():
    now = (("args[1]", "3", ""),)
    assert static_change_cause(now, {"args[1]": "2"}) == f"{STATIC_CHANGED}: 2 -> 3"


def test_an_object_hashed_by_identity_is_named_with_its_place():
    now = (("args[1]", "<__main__.JtConfig object at 0x7f00>", "JtConfig"),)
    assert static_change_cause(now, None) == (
        f"{STATIC_CHANGED}: a new JtConfig object at args[1] ({IDENTITY_HASHED})"
    )


def test_without_the_previous_compile_the_new_value_is_named():
    now = (("args[1]", "3", ""), ("keyword mode", "'fast'", ""))
    assert static_change_cause(now, None) == (
        f"{STATIC_CHANGED}: args[1] is 3, keyword mode is 'fast'"
    )
    # only the arguments that changed are named; none changed: the plain cause
    before = {"args[1]": "3", "keyword mode": "'slow'"}
    assert static_change_cause(now, before) == f"{STATIC_CHANGED}: 'slow' -> 'fast'"
    assert static_change_cause(now, {"args[1]": "3", "keyword mode": "'fast'"}) == STATIC_CHANGED
