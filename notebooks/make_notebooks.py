"""Write the example notebooks from the cell sources below (run after editing them)."""

from __future__ import annotations

from pathlib import Path

import nbformat

HERE = Path(__file__).parent

QUICKSTART = [
    (
        "md",
        """# xlanb quickstart: why is my lazy-tensor training loop slow?

This notebook trains a small regression model on PyTorch's lazy tensor core
(`torch._lazy`, TorchScript backend, CPU), the runtime embedded in every PyTorch install,
and uses `%%xla_profile` to find out where the time goes.

Load the extension **before** the runtime starts, so that it can switch on the runtime's
debug output (the graphs and Python stacks of every sync).""",
    ),
    ("code", "%load_ext xlanb"),
    (
        "code",
        """import torch, torch._lazy, torch._lazy.ts_backend
torch._lazy.ts_backend.init()
dev = "lazy"
torch.manual_seed(0)

data_x, data_y = torch.randn(200, 8), torch.randn(200, 1)

def make_model():
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1)).to(dev)
    return model, torch.optim.SGD(model.parameters(), lr=0.05)""",
    ),
    (
        "md",
        """## A first training loop

A typical first version: batches of 64 (the last one is smaller), the loss from
`F.mse_loss`, and the loss printed with `.item()` every step.""",
    ),
    (
        "code",
        """%%xla_profile -n first --var first
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
        last_loss = loss.item()""",
    ),
    (
        "md",
        """The findings say it all: `mse_loss` has no lowering on this runtime and runs on the
CPU (forcing a sync in the middle of every step), `.item()` reads a value back every step,
and the last, smaller batch compiles a second graph. Every frame is a pandas DataFrame:""",
    ),
    ("code", """first.fallbacks[["op", "count", "cause"]]"""),
    ("code", """first.compiles[["graph", "cause", "trigger", "cell_line", "seconds"]].head(8)"""),
    (
        "md",
        """## The fixed loop

Drop the partial batch (static shapes), write the loss with lowered ops, and keep the
running loss as a tensor, reading it once at the end.""",
    ),
    (
        "code",
        """%%xla_profile -n fixed --var fixed
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
print("mean loss", running.item() / 9)""",
    ),
    (
        "code",
        """import pandas as pd
pd.DataFrame({"first": first.summary(), "fixed": fixed.summary()})""",
    ),
    ("md", "Save the profiles and a self-contained HTML report next to this notebook:"),
    (
        "code",
        """first.save("quickstart-first.xlanb.json")
fixed.to_html("quickstart-report.html")
print("wrote quickstart-report.html")""",
    ),
]


TORCH_XLA = [
    (
        "md",
        """# PyTorch/XLA: a recompiling loop, a value read every step, and the fix

Run this notebook in the environment that has torch_xla (`.venv-xla` here, with
`PJRT_DEVICE=CPU`; on a TPU or GPU VM it runs unchanged). Load xlanb first: torch_xla reads
its debug switches (compile causes, source lines in the HLO) when it starts.""",
    ),
    ("code", "%load_ext xlanb"),
    (
        "code",
        """import os
os.environ.setdefault("PJRT_DEVICE", "CPU")
import torch, torch_xla
dev = torch_xla.device()
torch.manual_seed(0)
# A data loader without drop_last: most batches have 32 rows, a few do not.
sizes = [32, 32, 24, 32, 17, 32, 32, 9]
batches = [(torch.randn(n, 16), torch.randn(n, 1)) for n in sizes]

def make_model():
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1)).to(dev)
    return model, torch.optim.SGD(model.parameters(), lr=0.05)""",
    ),
    (
        "md",
        """## The first version

Every odd-sized batch is a new input shape, so XLA compiles a new graph for it; and
`loss.item()` copies a value back to the host every step.""",
    ),
    (
        "code",
        """%%xla_profile -n first
model, opt = make_model()
for x, y in batches:
    x, y = x.to(dev), y.to(dev)
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    torch_xla.sync()
    if loss.item() > 10:
        print("diverging")""",
    ),
    (
        "md",
        """## The fixed version

Pad every batch to 32 rows and mask the padding out of the loss (one shape, one graph), and
read the loss once, after the loop, instead of every step. Keep nothing else on the device
across steps: a counter carried from step to step (or a mask's sum as the divisor) makes the
first step's graph differ from the rest, a second compile on torch_xla 2.9.""",
    ),
    (
        "code",
        """%%xla_profile -n fixed
model, opt = make_model()
for x, y in batches:
    rows = x.shape[0]
    x = torch.nn.functional.pad(x, (0, 0, 0, 32 - rows)).to(dev)
    y = torch.nn.functional.pad(y, (0, 0, 0, 32 - rows)).to(dev)
    mask = (torch.arange(32) < rows).float().unsqueeze(1).to(dev)
    opt.zero_grad()
    loss = (((model(x) - y) ** 2) * mask).sum() / rows
    loss.backward()
    opt.step()
    torch_xla.sync()
if loss.item() > 10:
    print("diverging")""",
    ),
    ("md", "What changed:"),
    ("code", "%xla_profile compare first fixed"),
]

JAX = [
    (
        "md",
        """# JAX: a transformer block under `jax.grad`, changing lengths and NumPy inputs

`%%xla_profile` on JAX shows each compile with JAX's own explanation of the cache miss, how
often each jitted function ran, and the values that went from the host to the device.""",
    ),
    ("code", "%load_ext xlanb"),
    (
        "code",
        """import jax, jax.numpy as jnp, numpy as np

D, HEADS = 32, 4

def init(key):
    keys = jax.random.split(key, 6)
    dense = lambda k, a, b: jax.random.normal(k, (a, b)) / np.sqrt(a)
    return {"q": dense(keys[0], D, D), "k": dense(keys[1], D, D), "v": dense(keys[2], D, D),
            "o": dense(keys[3], D, D), "up": dense(keys[4], D, 4 * D),
            "down": dense(keys[5], 4 * D, D)}

def layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5)

def block(p, x):                       # x: [batch, seq, D]
    b, s, _ = x.shape
    heads = lambda t: t.reshape(b, s, HEADS, D // HEADS).transpose(0, 2, 1, 3)
    h = layer_norm(x)
    q, k, v = heads(h @ p["q"]), heads(h @ p["k"]), heads(h @ p["v"])
    attention = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // HEADS), axis=-1)
    x = x + (attention @ v).transpose(0, 2, 1, 3).reshape(b, s, D) @ p["o"]
    return x + jax.nn.gelu(layer_norm(x) @ p["up"]) @ p["down"]

def loss_fn(p, x):
    return jnp.mean(block(p, x) ** 2)

@jax.jit
def train_step(p, x):
    grads = jax.grad(loss_fn)(p, x)
    return jax.tree_util.tree_map(lambda w, g: w - 0.01 * g, p, grads)

params = init(jax.random.PRNGKey(0))
rng = np.random.default_rng(0)
lengths = [16, 16, 24, 16, 32, 16]
batches = [rng.standard_normal((8, n, D)).astype(np.float32) for n in lengths]""",
    ),
    (
        "md",
        """## The first version

The batches are NumPy arrays of varying sequence length, fed straight to the jitted step.""",
    ),
    (
        "code",
        """%%xla_profile -n first --var first
p = params
for x in batches:
    p = train_step(p, x)
p = jax.block_until_ready(p)""",
    ),
    (
        "md",
        """## The fixed version

Pad every batch to one length (masking would go in the loss) and put the data on the device
once, ahead of the loop. The cell starts cold, as the first version did (the first version
compiled this length too): each version's compile is measured in it.""",
    ),
    (
        "code",
        """%%xla_profile -n fixed --var fixed
jax.clear_caches()
padded = [jax.device_put(np.pad(x, ((0, 0), (0, 32 - x.shape[1]), (0, 0)))) for x in batches]
p = params
for x in padded:
    p = train_step(p, x)
p = jax.block_until_ready(p)""",
    ),
    ("code", "%xla_profile compare first fixed"),
    (
        "code",
        """first.to_html("jax-first-report.html")
print("wrote jax-first-report.html")""",
    ),
]


OFFLINE = [
    (
        "md",
        """# Offline: analyse files a PyTorch/XLA job wrote

A job on a TPU pod, a batch script, a CI run: no notebook attached. PyTorch/XLA can still write
what xlanb needs: `XLA_METRICS_FILE` (a metrics report per step) and `PT_XLA_DEBUG_FILE`
(why each graph compiled, and from which line). Here a small training script writes both,
then `xlanb.load` reads them and one HTML report holds everything. Runs where torch_xla is
installed (`.venv-xla`).""",
    ),
    (
        "code",
        """%%writefile train_job.py
import torch, torch_xla
import torch_xla.core.xla_model as xm
# torch_xla 2.7 appends to XLA_METRICS_FILE at xm.mark_step() only, 2.8 on at sync() too
old = tuple(int(n) for n in torch_xla.__version__.split(".")[:2]) < (2, 8)
end_step = xm.mark_step if old else torch_xla.sync
dev = torch_xla.device()
torch.manual_seed(0)
model = torch.nn.Linear(16, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, batch in enumerate([32] * 6 + [20] + [32] * 5):  # one short batch at step 6
    x, y = torch.randn(batch, 16).to(dev), torch.randn(batch, 1).to(dev)
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    end_step()""",
    ),
    (
        "code",
        """import os, subprocess, sys
env = dict(os.environ, PJRT_DEVICE="CPU", XLA_METRICS_FILE="metrics.txt",
           PT_XLA_DEBUG_LEVEL="1", PT_XLA_DEBUG_FILE="debug.txt")
for name in ("metrics.txt", "debug.txt"):
    if os.path.exists(name):
        os.remove(name)
subprocess.run([sys.executable, "train_job.py"], env=env, check=True)""",
    ),
    (
        "md",
        """## The metrics file: one report per step

`xlanb.load` recognises the file from its content. The findings say at which step
recompilation stopped; `step_table` gives one row per step.""",
    ),
    (
        "code",
        """import xlanb
from xlanb.offline import step_table
metrics = xlanb.load("metrics.txt")
metrics""",
    ),
    (
        "code",
        """columns = ["compiles", "compile_seconds", "executions", "execute_seconds"]
step_table(metrics)[columns]""",
    ),
    ("md", "## The debug file: why each graph compiled, and where"),
    (
        "code",
        """debug = xlanb.load("debug.txt")
where = debug.compiles["location"].map(os.path.basename)
debug.compiles.assign(where=where)[["graph", "cause", "trigger", "where"]]""",
    ),
    (
        "md",
        """## One run, one report

Files one run wrote (one of each format) are read together as one profile: the compiles
with their causes and lines from the debug file, the steps and times from the metrics file.""",
    ),
    (
        "code",
        """run = xlanb.load("metrics.txt", "debug.txt")
run.to_html("offline-report.html")
print("wrote", os.path.abspath("offline-report.html"))
run""",
    ),
]


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
        for kind, src in cells
    ]
    return notebook


NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_torch_xla.ipynb": TORCH_XLA,
    "03_jax.ipynb": JAX,
    "04_offline.ipynb": OFFLINE,
}

if __name__ == "__main__":
    for filename, cells in NOTEBOOKS.items():
        nbformat.write(build(cells), HERE / filename)
