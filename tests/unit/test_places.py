"""Places in the user's code as people know them: the profiled cell's lines, other notebook
cells by their In[n], installed libraries from their install directory."""

from __future__ import annotations

import contextlib
import os
import sysconfig

from xlanb.formats.python_frames import (
    is_library_place,
    place_name,
    read_place,
    user_code_frame,
)

KERNEL_CELL = "/tmp/ipykernel_4242/1234567.py"
OTHER_CELL = "/tmp/ipykernel_4242/7654321.py"
NUMBERS = {KERNEL_CELL: 5, OTHER_CELL: 3}


def test_place_names_say_cell_in_n_or_the_librarys_file():
    assert place_name(KERNEL_CELL, 11, KERNEL_CELL, 1, NUMBERS) == "cell line 12"
    assert place_name(OTHER_CELL, 4, KERNEL_CELL, 1, NUMBERS) == "In[3] line 4"
    assert place_name("<ipython-input-9-abc>", 4) == "another cell, line 4"
    linear = os.path.join(sysconfig.get_paths()["purelib"], "torch", "nn", "modules", "linear.py")
    assert place_name(linear, 134) == "torch/nn/modules/linear.py:134"
    assert place_name("/home/me/train.py", 7) == "/home/me/train.py:7"


def test_a_read_in_another_cells_function_names_that_cell():
    frames = [("rd_read", OTHER_CELL, 2), ("<module>", KERNEL_CELL, 4)]
    assert read_place(frames, KERNEL_CELL, 1, NUMBERS) == "In[3] line 2 (rd_read)"
    # the profiled cell's top level stays a file place: its reader names it by its cell line
    own = [("<module>", KERNEL_CELL, 4)]
    assert read_place(own, KERNEL_CELL, 1, NUMBERS) == f"{KERNEL_CELL}:4 (<module>)"
    # a function the profiled cell defines is named by its cell line
    inner = [("helper", KERNEL_CELL, 2), ("<module>", KERNEL_CELL, 4)]
    assert read_place(inner, KERNEL_CELL, 1, NUMBERS) == "cell line 3 (helper)"
    for place in ("In[3] line 2 (rd_read)", "cell line 3 (helper)", "/home/me/t.py:3 (f)"):
        assert not is_library_place(place)
    assert is_library_place("torch/nn/utils/clip_grad.py:40 (clip_grad_norm_)")


def test_the_standard_library_is_not_the_users_code():
    # torch_xla.compile syncs in a `with` block's exit: its stack starts in contextlib
    torch_xla = os.path.join(sysconfig.get_paths()["purelib"], "torch_xla", "torch_xla.py")
    frames = [
        ("__exit__", contextlib.__file__, 144),
        ("compile", torch_xla, 80),
        ("<module>", KERNEL_CELL, 3),
    ]
    assert user_code_frame(frames) == ("<module>", KERNEL_CELL, 3)
    assert place_name(contextlib.__file__, 144) == "contextlib.py:144"
