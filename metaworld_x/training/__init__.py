"""Imitation-constrained PPO: one loop, two physics backends.

`make_train(config, make_env, options) -> train(rng)`; the update (GAE, minibatch scan,
optimiser, Lagrange multiplier) is one jitted function shared by both
backends, and only collection differs.
"""
