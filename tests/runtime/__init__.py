"""Runtime tests: JAX and torch._lazy run in-process through the IPython shell."""
