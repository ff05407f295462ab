"""brax's own `ppo.train` on a MetaWorld-X tracking task through MJX: its steps/s.

    /path/to/jax09-venv/bin/python scripts/bench_brax_ppo.py [--skill walk] [--envs 256] [--iterations 3]

Compare it with our trainer at the same `--envs` (bench_train.py does).

brax 0.14's trainer calls `jax.device_put_replicated`, which jax 0.10
removed. Where it is missing, this script puts back a stand-in with the same
meaning (a copy of the tree on each device, stacked on a leading device axis,
made by `jax.pmap`), so brax's loop itself runs unchanged on a newer jax;
`--no-shim` refuses instead, for a separate environment with `jax==0.9.2`
(see REFERENCE.md). `bench_train.py` runs this script (in this interpreter,
or in `--brax-python`) and puts its figure beside ours. The task is the same one our trainer uses (the
skill's Tracking task, same observation, reward and termination), stepped by
our MJX backend, so the difference is brax's loop plus MJX against ours plus
mujoco.batch. Prints one line: `brax_ppo_steps_per_second <float>`.
"""

import argparse
import functools
import time

import jax
import jax.numpy as jnp
from brax.envs.base import Env, State
from brax.training.agents.ppo import networks as ppo_networks
from brax.training.agents.ppo import train as ppo


def device_put_replicated(tree, devices):
    """jax<=0.9's `device_put_replicated`: tree copied to each device, stacked on axis 0 (pmap-sharded)."""
    index = jnp.arange(len(devices))
    return jax.pmap(lambda _: tree, devices=devices)(index)


class TrackingEnv(Env):
    """One world of our MJX environment as a brax Env (brax vmaps it over worlds)."""

    def __init__(self, mjx_env):
        self._env = mjx_env  # built with num_worlds=1: its functions take a leading world axis of 1
        probe = mjx_env.reset(jax.random.PRNGKey(0))
        self._sizes = {key: value.shape[1:] for key, value in probe.obs.items()}

    @staticmethod
    def _fields(inner) -> dict:
        return dict(pipeline_state=inner, obs=jax.tree.map(lambda x: x[0], inner.obs), reward=inner.reward[0],
                    done=inner.done[0].astype(jnp.float32))

    def reset(self, rng) -> State:
        return State(**self._fields(self._env._reset_fn(self._env.model, rng[None])), metrics={}, info={})

    def step(self, state: State, action) -> State:
        # brax's wrappers keep their bookkeeping in state.info: carry it through
        return state.replace(**self._fields(self._env._step_fn(self._env.model, state.pipeline_state, action[None])))

    @property
    def observation_size(self):
        return self._sizes

    @property
    def action_size(self) -> int:
        return self._env.action_size

    @property
    def backend(self) -> str:
        return "mjx"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skill", default="walk")
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--minibatches", type=int, help="minibatches per epoch (default: the spec's)")
    parser.add_argument("--impl", default="jax", choices=("jax", "warp"), help="MJX implementation")
    parser.add_argument("--no-shim", action="store_true", help="fail rather than restore device_put_replicated")
    args = parser.parse_args()
    if not hasattr(jax, "device_put_replicated"):
        if args.no_shim:
            raise SystemExit(f"jax {jax.__version__} has no device_put_replicated, which brax's ppo.train calls")
        jax.device_put_replicated = device_put_replicated

    from metaworld_x.experts.environment import expert_task
    from metaworld_x.envs.mjx_env import MjxEnv
    from metaworld_x.experts.specs import expert_spec

    spec = expert_spec(args.skill, **({"num_minibatches": args.minibatches} if args.minibatches else {}))
    config = spec.ppo
    task = expert_task(spec)
    env = TrackingEnv(MjxEnv(task, 1, impl=args.impl))
    network_factory = functools.partial(
        ppo_networks.make_ppo_networks, policy_hidden_layer_sizes=config.policy_hidden,
        value_hidden_layer_sizes=config.value_hidden, value_obs_key="privileged_state",
    )
    # our settings, scaled to `envs` worlds: one batch of envs x unroll per iteration
    batch_size = args.envs // config.num_minibatches
    steps_per_iteration = args.envs * config.unroll_length
    rates = []

    def progress(step, metrics):
        if "training/sps" in metrics:
            rates.append(float(metrics["training/sps"]))

    started = time.perf_counter()
    ppo.train(  # the task's own episode length, so both trainers reset as often
        env, num_timesteps=steps_per_iteration * args.iterations, num_envs=args.envs,
        episode_length=task.config.episode_length,
        unroll_length=config.unroll_length, batch_size=batch_size, num_minibatches=config.num_minibatches,
        num_updates_per_batch=config.num_epochs, learning_rate=config.learning_rate,
        discounting=config.discounting, entropy_cost=config.entropy_cost, normalize_observations=True,
        network_factory=network_factory, num_evals=args.iterations + 1, run_evals=False,
        log_training_metrics=False, progress_fn=progress, seed=0,
    )
    print(f"brax_wall_s {time.perf_counter() - started:.1f}")
    # the first epoch includes compilation; later ones are steady state
    steady = rates[1:] or rates
    print(f"brax_ppo_steps_per_second {sum(steady) / len(steady):.1f}")


if __name__ == "__main__":
    main()
