"""The number IPython shows for the running cell (``In[n]``), which profiles are named after.

IPython adds 1 to ``shell.execution_count`` before it runs a cell whose input it stores (every
notebook and terminal cell), so while such a cell runs the counter is one ahead of its In[n].
"""

from __future__ import annotations

#: Whether the cell now running stores its input (from the last pre_run_cell event).
_stored = {"history": True}


def note_cell(info) -> None:
    """pre_run_cell handler: remember whether the cell about to run stores its input."""
    _stored["history"] = bool(getattr(info, "store_history", True))


def cell_number(shell, info=None) -> int:
    """The running cell's In[n] (`info`: its ExecutionInfo, else the last one noted)."""
    stored = _stored["history"] if info is None else bool(getattr(info, "store_history", True))
    count = int(shell.execution_count or 0)
    return count - 1 if stored and count > 1 else count


def cell_numbers(shell) -> dict[str, int]:
    """IPython's file name of each cell run so far -> its In[n] (the number IPython's own
    tracebacks name it by); empty where the shell's compiler keeps none."""
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", None)
    return dict(numbers) if isinstance(numbers, dict) else {}
