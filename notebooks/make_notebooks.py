"""Write the example notebooks from the cell sources below (run after editing them)."""

from __future__ import annotations

from pathlib import Path

import nbformat

HERE = Path(__file__).parent

QUICKSTART = [
    ("md", """# xlanb quickstart: why is my lazy-tensor training loop slow?

This notebook trains a small regression model on PyTorch's lazy tensor core
(`torch._lazy`, TorchScript backend, CPU), the runtime embedded in every PyTorch install,
and uses `%%xla_profile` to find out where the time goes.

Load the extension **before** the runtime starts, so that it can switch on the runtime's
debug output (the graphs and Python stacks of every sync)."""),
    ("code", "%load_ext xlanb"),
    ("code", """import torch, torch._lazy, torch._lazy.ts_backend
torch._lazy.ts_backend.init()
dev = "lazy"
torch.manual_seed(0)

data_x, data_y = torch.randn(200, 8), torch.randn(200, 1)

def make_model():
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1)).to(dev)
    return model, torch.optim.SGD(model.parameters(), lr=0.05)"""),
    ("md", """## A first training loop

A typical first version: batches of 64 (the last one is smaller), the loss from
`F.mse_loss`, and the loss printed with `.item()` every step."""),
    ("code", """%%xla_profile --var first
model, opt = make_model()
for epoch in range(3):
    for start in range(0, 200, 64):
        x = data_x[start:start + 64].to(dev)
        y = data_y[start:start + 64].to(dev)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        torch._lazy.mark_step()
        last_loss = loss.item()"""),
    ("md", """The findings say it all: `mse_loss` has no lowering on this runtime and runs on the
CPU (forcing a sync in the middle of every step), `.item()` reads a value back every step,
and the last, smaller batch compiles a second graph. Every frame is a pandas DataFrame:"""),
    ("code", """first.fallbacks[["op", "count", "cause"]]"""),
    ("code", """first.compiles[["graph", "cause", "trigger", "cell_line", "seconds"]].head(8)"""),
    ("md", """## The fixed loop

Drop the partial batch (static shapes), write the loss with lowered ops, and keep the
running loss as a tensor, reading it once at the end."""),
    ("code", """%%xla_profile --var fixed
model, opt = make_model()
running = torch.zeros((), device=dev)
for epoch in range(3):
    for start in range(0, 192, 64):
        x = data_x[start:start + 64].to(dev)
        y = data_y[start:start + 64].to(dev)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        running = running + loss.detach()
        torch._lazy.mark_step()
print("mean loss", running.item() / 9)"""),
    ("code", """import pandas as pd
pd.DataFrame({"first": first.summary(), "fixed": fixed.summary()})"""),
    ("md", "Save the profiles and a self-contained HTML report next to this notebook:"),
    ("code", """first.save("quickstart-first.xlanb.json")
fixed.to_html("quickstart-report.html")
print("wrote quickstart-report.html")"""),
]


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    notebook.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md"
                      else nbformat.v4.new_code_cell(src) for kind, src in cells]
    return notebook


if __name__ == "__main__":
    nbformat.write(build(QUICKSTART), HERE / "01_quickstart.ipynb")
