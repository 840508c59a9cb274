"""Record the optimized HLO of one small PyTorch/XLA training step as ``--deep`` dumps it
(``XLA_IR_DEBUG``/``XLA_HLO_DEBUG``, ``--xla_dump_hlo_as_text --xla_dump_hlo_as_proto``):
``PJRT_DEVICE=CPU .venv-xla/bin/python tests/data/torch_xla_stacks/record.py`` writes
``step.txt`` and ``step.hlo.pb`` beside this file. The text names each op's innermost frame
(torch's ``linear.py``); the proto holds the whole stack, down to the lines of ``step`` below
(tests/unit/test_hlo_proto.py)."""

import glob
import os
import shutil
import tempfile

DUMP = tempfile.mkdtemp()
os.environ.update(XLA_IR_DEBUG="1", XLA_HLO_DEBUG="1")
os.environ["XLA_FLAGS"] = f"--xla_dump_to={DUMP} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto"

import torch  # noqa: E402
import torch_xla  # noqa: E402

device = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
model = model.to(device)


def step(x):
    loss = model(x).square().mean()  # line 26
    return loss


if __name__ == "__main__":
    print(step(torch.ones(4, 8, device=device)).item())
    here = os.path.dirname(os.path.abspath(__file__))
    (text,) = [
        path
        for path in glob.glob(os.path.join(DUMP, "*cpu_after_optimizations.txt"))
        if os.path.exists(path.removesuffix(".txt") + ".hlo.pb")
    ]
    shutil.copy(text, os.path.join(here, "step.txt"))
    shutil.copy(text.removesuffix(".txt") + ".hlo.pb", os.path.join(here, "step.hlo.pb"))
    shutil.rmtree(DUMP)
