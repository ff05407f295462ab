"""What a training run builds once, before its first iteration: the environments, the networks, and the
collector, update and evaluator, split over the device mesh."""

from dataclasses import dataclass, replace
from typing import Any, Callable

import jax
from jax.sharding import Mesh

from metaworld_x.errors import UserError
from metaworld_x.training import warm_start
from metaworld_x.training.collect import EpisodeTracker, make_loop_collector, make_scan_collector
from metaworld_x.training.config import PPOConfig, RunOptions
from metaworld_x.training.devices import ProcessShare, make_mesh, process_share, replicated, shard_envs
from metaworld_x.training.evaluate import make_evaluator
from metaworld_x.training.networks import PPONetworks, make_networks
from metaworld_x.training.update import make_update


@dataclass(frozen=True)
class Trainer:
    """A run's built parts; `train.make_train` builds one and every iteration uses it."""

    config: PPOConfig
    options: RunOptions
    mesh: Mesh
    share: ProcessShare | None
    """The rows of the batch this process steps on the cpu backend over several devices (None: all, unsplit)."""
    several: bool
    """Whether the run has several processes."""
    env: Any
    """The training environment: reset(key), step(state, action), backend, observation_sizes, action_size."""
    nets: PPONetworks
    collect: Callable
    """(params, normalizer, env_state, tracker, key) -> (env_state, tracker, rollout, env metrics)."""
    update: Callable
    """Jitted (state, rollout, measured tracking error) -> (state, loss metrics, finite)."""
    evaluate: Callable | None
    """(params, normalizer, key) -> eval/* scalars (None: the run does not evaluate)."""
    critic_warmup: int
    """Iterations the critics train alone, resolved from the config for the update only: the run's recorded config
    keeps what was asked, so that a resume matches it."""

    def snapshot(self, env_state):
        """The environment state as a checkpoint holds it."""
        return getattr(self.env, "snapshot", lambda s: s)(env_state)

    def restore_env(self, snapshot):
        return getattr(self.env, "restore", lambda s: s)(snapshot)

    def place_simulations(self, env_state, tracker: EpisodeTracker):
        """The per-simulation state split over the mesh, with the same shardings at every call (the training
        state is replicated likewise), so that the jitted collector compiles once rather than once per placement."""
        if self.env.backend == "mjx":  # the cpu backend's state lives in mujoco.batch, on the host
            env_state = shard_envs(env_state, self.mesh, 0, self.config.num_envs)
        return env_state, shard_envs(tracker, self.mesh, 0, self.config.num_envs)


def build_trainer(config: PPOConfig, make_env: Callable[[int], Any], options: RunOptions) -> Trainer:
    """The mesh, the environments (make_env: num_envs -> environment), the networks and the jitted functions."""
    mesh = make_mesh(config.num_devices)
    config.check_devices(mesh.size)
    # on the cpu backend each process steps its own rows of the batch (all of them where there is one process),
    # and the policy acts on them split over the mesh; mjx's jitted environment is split over it like the rest
    share = process_share(mesh, config.num_envs) if config.backend == "cpu" and mesh.size > 1 else None
    several = jax.process_count() > 1
    if several and options.init_from is not None and warm_start.is_shipped_policy(options.init_from):
        raise UserError("a multi-process run cannot start from a shipped policy (--init-from experts/...); start"
                        " the fine-tune in one process, or from a run folder's checkpoint")
    env = make_env(config.num_envs if share is None else share.count)
    eval_env = make_env(config.num_eval_envs) if config.eval_every else None
    nets = make_networks(
        env.observation_sizes, env.action_size, config.policy_hidden, config.value_hidden, config.normalize_observations
    )
    collect = make_scan_collector(env, nets, config) if env.backend == "mjx" else make_loop_collector(env, nets, config, share)
    warmup = warm_start.critic_warmup_iterations(config.critic_warmup_iterations, options.init_from)
    update = jax.jit(make_update(replace(config, critic_warmup_iterations=warmup), nets),
                     out_shardings=(replicated(mesh), replicated(mesh), replicated(mesh)))
    evaluate = make_evaluator(eval_env, nets, config.eval_steps) if eval_env is not None else None
    return Trainer(config, options, mesh, share, several, env, nets, collect, update, evaluate, warmup)
