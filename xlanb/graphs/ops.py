"""What kind of operation an op is, for every graph format (HLO, StableHLO, the torch IRs,
DOT): the one taxonomy behind cost estimates (:mod:`xlanb.graphs.cost`) and the viewer's node
colours (:func:`op_category`)."""

from __future__ import annotations

import functools
import re

#: Graph inputs.
PARAMETERS = frozenset({"parameter", "input", "device_data", "Parameter"})
CONSTANTS = frozenset({"constant", "Constant"})
#: Matrix products (2*M*N*K FLOPs).
CONTRACTIONS = frozenset(
    {"dot", "dot_general", "mm", "addmm", "bmm", "matmul", "linear", "baddbmm", "einsum"}
)
CONVOLUTIONS = frozenset({"convolution", "conv", "conv2d", "conv1d", "conv3d", "_convolution"})
#: Ops that reduce their input (one FLOP per input element); collectives excluded.
REDUCTIONS = frozenset(
    {
        "reduce",
        "reduce-window",
        "reduce_window",
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "prod",
        "argmax",
        "argmin",
        "var",
        "std",
        "norm",
        "softmax",
        "_softmax",
        "log_softmax",
        "_log_softmax",
    }
)
#: Collectives that reduce as well as communicate.
REDUCING_COLLECTIVES = frozenset({"all-reduce", "all_reduce", "reduce-scatter"})
#: Op name prefixes of collectives (``all-reduce-start`` included).
COLLECTIVE_PREFIXES = (
    "all-reduce",
    "all-gather",
    "all-to-all",
    "reduce-scatter",
    "collective-permute",
    "all_reduce",
    "all_gather",
    "all_to_all",
    "reduce_scatter",
    "collective_permute",
)
#: Control flow and calls (matched on the bare op and on the op as written).
CONTROL = frozenset({"while", "conditional", "case", "if", "If", "Loop", "call", "func.call"})
CUSTOM_CALLS = frozenset({"custom-call", "custom_call"})
#: Ops that move, view or convert data without arithmetic.
DATA_MOVEMENT = frozenset(
    {
        "reshape",
        "transpose",
        "broadcast",
        "broadcast_in_dim",
        "copy",
        "slice",
        "dynamic-slice",
        "dynamic_slice",
        "dynamic-update-slice",
        "dynamic_update_slice",
        "concatenate",
        "pad",
        "gather",
        "scatter",
        "bitcast",
        "tuple",
        "get-tuple-element",
        "get_tuple_element",
        "permute",
        "view",
        "expand",
        "t_copy",
        "detach_copy",
        "permute_copy",
        "view_copy",
        "expand_copy",
        "select",
        "convert",
        "bitcast-convert",
        "iota",
        "clone",
        "_to_copy",
        "squeeze",
        "unsqueeze",
        "cat",
        "stack",
    }
)
#: Ops that cost no FLOPs: inputs, views and copies, control flow and calls (their bodies are
#: costed where they are), runtime bookkeeping.
FREE = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "reshape",
        "transpose",
        "broadcast",
        "broadcast_in_dim",
        "copy",
        "slice",
        "dynamic-slice",
        "concatenate",
        "pad",
        "iota",
        "device_data",
        "detach_copy",
        "t_copy",
        "view",
        "view_copy",
        "expand",
        "expand_copy",
        "permute",
        "permute_copy",
        "input",
        "return",
        "get_tuple_element",
        "convert",
        "copy-start",
        "copy-done",
        "after-all",
        "partition-id",
        "replica-id",
        "opt-barrier",
        "optimization_barrier",
        "fusion",
        "call",
        "while",
        "conditional",
        "case",
        "if",
        "constant_tensor",
        "_to_copy",
        "clone",
        "Constant",
        "ListConstruct",
        "ScalarImplicit",
        "TupleConstruct",
        "TupleUnpack",
        "ListUnpack",
    }
)

#: The categories of :func:`op_category`, in the viewer's palette order.
CATEGORIES = (
    "op",
    "parameter",
    "constant",
    "contraction",
    "call",
    "reduction",
    "control",
    "custom_call",
    "collective",
    "data_movement",
)


@functools.lru_cache(maxsize=4096)
def base_op(op: str) -> str:
    """``stablehlo.dot_general`` / ``aten::addmm`` / ``xla::device_data`` -> the bare op name."""
    op = op.rsplit("::", 1)[-1]
    if "." in op and not op[0].isdigit():
        op = op.rsplit(".", 1)[-1]
    return op.strip('"')


def op_category(op: str, anchors_scope: bool = False) -> str:
    """The category (one of :data:`CATEGORIES`) of `op`; `anchors_scope`: the node stands
    for a nested scope, the computation it calls (it is then a ``call`` unless it is control
    flow, a contraction, a parameter or a constant)."""
    bare = base_op(op)
    if bare in PARAMETERS or bare.startswith("Parameter"):
        return "parameter"
    if bare in CONSTANTS or bare.startswith("constant"):
        return "constant"
    if bare in CONTRACTIONS or bare in CONVOLUTIONS:
        return "contraction"
    if bare in CONTROL or op in CONTROL:
        return "control"
    if anchors_scope or bare == "fusion":
        return "call"
    if bare in REDUCTIONS:
        return "reduction"
    if bare in CUSTOM_CALLS:
        return "custom_call"
    if bare.startswith(COLLECTIVE_PREFIXES):
        return "collective"
    if bare in DATA_MOVEMENT:
        return "data_movement"
    return "op"


#: A half of an async op as the trace names it: its start launches a copy or collective, its
#: done waits for what is left of it (``copy-start.4``, ``all-reduce-done.3``,
#: ``collective-permute-done_2``, ``send-done``, ``async-done``).
ASYNC_HALF = re.compile(r"^(?P<kind>[a-z\-]+?)-(?P<half>start|done)(?:[._]\d+)?$")


#: First match wins: collectives first (``all-reduce`` and ``reduce-scatter`` hold "reduce").
_THUNK_CATEGORIES = (
    ("all-reduce", "collective"),
    ("all-gather", "collective"),
    ("reduce-scatter", "collective"),
    ("all-to-all", "collective"),
    ("collective-permute", "collective"),
    ("collective-broadcast", "collective"),
    ("fusion", "fusion"),
    ("dot", "matmul"),
    ("convolution", "convolution"),
    ("sort", "sort"),
    ("reduce", "reduction"),
    ("copy", "copy"),
    ("transpose", "copy"),
    ("custom-call", "custom call"),
    ("call", "call"),
    ("while", "control flow"),
    ("conditional", "control flow"),
)


def thunk_category(op: str) -> str:
    """A coarse category of an executed op from its *instruction* name as the profiler's
    trace names it (``dot.3`` -> ``matmul``, ``add_reduce_fusion`` -> ``fusion``, ``sort.0`` ->
    ``sort``): the trace carries no opcode, so the name is all there is (``ops.category``)."""
    name = op.lower().replace("_", "-")
    for marker, category in _THUNK_CATEGORIES:
        if marker in name:
            return category
    return "elementwise"
