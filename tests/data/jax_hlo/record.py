"""Record the optimized HLO text of a small jitted function on the installed JAX (XLA:CPU):
``python tests/data/jax_hlo/record.py`` writes ``hlo_jax_<version>.txt`` beside this file.
Its ops' stack frames point at the lines of ``step`` below (tests/unit/test_hlo_text_jax.py)."""

import os

import jax
import jax.numpy as jnp


def step(w, x):
    hidden = jnp.tanh(x @ w)  # line 12
    return jnp.sum(hidden**2)  # line 13


if __name__ == "__main__":
    args = (jnp.ones((4, 4)), jnp.ones((8, 4)))
    text = jax.jit(step).lower(*args).compile().as_text()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, f"hlo_jax_{jax.__version__}.txt"), "w") as handle:
        handle.write(text)
