"""Which cell line ran a CPU-fallback op (the rule behind the fallbacks' cell_line)."""

from xlanb.analysis.attribution import fallback_line
from xlanb.formats.compile_causes import CompileHistory

CELL = """%%xla_profile
mask = (torch.arange(32) < rows).float().unsqueeze(1).to(dev)
print("loss", loss.item())  # .item() here
idx = torch.nonzero(w > 0)
n = int(total)
x = torch.nn.functional.mse_loss(a, b)"""


def test_item_is_the_line_reading_a_value_not_a_dtype_cast():
    assert fallback_line("aten::_local_scalar_dense", CELL, set()) == 3
    # A forced sync reported by the runtime picks among the candidate lines.
    assert fallback_line("aten::_local_scalar_dense", CELL, {5}) == 5


def test_ops_named_in_the_code():
    assert fallback_line("aten::nonzero", CELL, set()) == 4
    assert fallback_line("aten::mse_loss", CELL, set()) == 6
    assert fallback_line("aten::median", CELL, set()) is None


def test_comments_do_not_count():
    assert fallback_line("aten::_local_scalar_dense", "x = 1  # call .item() later", set()) is None


def test_compile_cause_compares_with_every_graph_seen_at_the_line():
    history = CompileHistory()
    step_one = "ENTRY %g (p0: f32[32,16]) {\n  %p0 = f32[32,16] parameter(0)\n  %a = add\n}"
    step_two = "ENTRY %g (p0: f32[32,16]) {\n  %p0 = f32[32,16] parameter(0)\n  %b = mul\n}"
    new_size = step_one.replace("32,16", "24,16")
    assert history.cause("cell:3", step_one, forced=False) == "new graph"
    assert history.cause("cell:3", step_two, forced=False) == "new graph (the traced code changed)"
    # Same program as step one, new input shape: found although step two came in between.
    assert history.cause("cell:3", new_size, forced=False) == "new shape: f32[32,16] -> f32[24,16]"
    assert history.cause("cell:3", new_size, forced=True).startswith("forced sync")


def test_item_wins_over_an_earlier_print():
    cell = "print('start')\nfor i in range(3):\n    value = loss.item()"
    assert fallback_line("aten::_local_scalar_dense", cell, set()) == 3
