"""A learning rate that follows a KL target, as rsl_rl's "adaptive" schedule does.

A trained policy explores little, so the same Adam step moves it much further
in KL than an untrained one: fine-tunes from shipped experts at 3e-4 took a
median approximate KL of 0.04 per update, with spikes to 4, and their
evaluations swung between 10 and 16 of 16; at 1e-4, 0.013. With
`PPOConfig.desired_kl` set, each update's KL moves the step size instead:
divided by 1.5 above twice the target, multiplied by 1.5 under half of it.
The rate lives in the optimiser state (optax.inject_hyperparams), where
optax.tree_utils reads and sets it by name; so it is checkpointed and a
resume continues with it.
"""

import jax.numpy as jnp
import optax

FACTOR = 1.5
BOUNDS = (1e-5, 1e-2)


def adaptive_adam(learning_rate: float) -> optax.GradientTransformation:
    """Adam whose learning rate is a hyperparameter in its state, to be changed between updates."""
    return optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate)


def adapted(learning_rate, kl, desired_kl: float):
    """The next update's rate after one whose mean approximate KL was `kl`."""
    learning_rate = jnp.where(kl > 2.0 * desired_kl, learning_rate / FACTOR, learning_rate)
    learning_rate = jnp.where(kl < 0.5 * desired_kl, learning_rate * FACTOR, learning_rate)
    return jnp.clip(learning_rate, *BOUNDS)

