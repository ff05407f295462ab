"""Stepping an env while checking that an observation rebuilt from its views equals the env's own."""

import jax.numpy as jnp
import numpy as np


def observed_alike_for_six_steps(env, state, observed):
    """Steps `env` from `state` six times with small random actions, asserting before each step that
    `observed(views, infos)` [B, n] equals the env's observation; returns the last state, every episode still live."""
    rng = np.random.default_rng(0)
    worlds = np.asarray(state.obs["state"]).shape[0]
    for _ in range(6):
        np.testing.assert_allclose(np.asarray(observed(state.data.view, state.info)), np.asarray(state.obs["state"]),
                                   atol=1e-5)
        state = env.step(state, jnp.asarray(rng.uniform(-0.3, 0.3, (worlds, env.action_size)), jnp.float32))
    assert not np.any(np.asarray(state.info["step"]) == 0), "an episode ended; the comparison needs live ones"
    return state
