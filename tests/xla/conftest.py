import os

# torch_xla runs on the CPU here; set before anything imports it.
os.environ.setdefault("PJRT_DEVICE", "CPU")
