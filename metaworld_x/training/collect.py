"""Collecting experience on either backend with the same pure pieces.

`act` (policy sample) and `record` (turn an env step into a transition and
update episode statistics) are pure and jitted. On the mjx backend the env
step is JAX too, so one `lax.scan` runs the whole unroll; on the cpu backend
the env step drives `mujoco.batch` from Python between the two jitted calls.
"""

from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from metaworld_x.training.config import PPOConfig
from metaworld_x.training.constraint import ConstraintConfig, failure_charge, reward_streams
from metaworld_x.training.devices import ProcessShare
from metaworld_x.training.losses import Rollout
from metaworld_x.training.networks import PPONetworks


@struct.dataclass
class EpisodeTracker:
    """Running sums of the episodes in flight, and of those that ended this iteration."""

    running_return: jax.Array  # [B]
    running_length: jax.Array  # [B]
    ended_return: jax.Array  # scalar: sum of returns of episodes that ended
    ended_length: jax.Array  # scalar
    ended_count: jax.Array  # scalar

    @classmethod
    def create(cls, num_envs: int) -> "EpisodeTracker":
        zeros = jnp.zeros(num_envs)
        return cls(zeros, zeros, jnp.zeros(()), jnp.zeros(()), jnp.zeros(()))

    def new_iteration(self) -> "EpisodeTracker":
        return self.replace(ended_return=jnp.zeros(()), ended_length=jnp.zeros(()), ended_count=jnp.zeros(()))


@struct.dataclass
class Step:
    """One transition, [B, ...]; stacked over time into a Rollout."""

    obs: dict
    raw_action: jax.Array
    log_prob: jax.Array
    reward: jax.Array
    cost: jax.Array
    done: jax.Array
    truncation: jax.Array
    metrics: dict


@struct.dataclass
class Outcome:
    """What collection needs of an env step: not the physics, whose static parts differ every step."""

    reward: jax.Array  # [B]
    done: jax.Array  # [B]
    truncation: jax.Array  # [B]
    metrics: dict

    @classmethod
    def of(cls, state) -> "Outcome":
        return cls(state.reward, state.done, state.info["truncation"], dict(state.metrics))


def streams(outcome: Outcome, constraint: ConstraintConfig, discount: float):
    """(reward, cost) of a step: imitation experts report their parts in metrics."""
    metrics = outcome.metrics
    if "imitation/reward" not in metrics:
        return outcome.reward, jnp.zeros_like(outcome.reward)
    reward, cost = reward_streams(
        constraint, metrics["task/reward"], metrics["imitation/reward"], metrics["imitation/tracking_error"]
    )
    # a task may end its episode on success (HumanoidBench's push does); that is no failure
    ended = outcome.done.astype(jnp.float32) * (1 - outcome.truncation.astype(jnp.float32))
    failed = ended * (1 - (metrics["success"] > 0).astype(jnp.float32))
    return reward, cost + failure_charge(constraint, failed, discount)


def make_act(nets: PPONetworks) -> Callable:
    def act(params, normalizer, obs, key):
        """Sample actions [B, a] (in [-1, 1]), their pre-tanh values and log-probabilities."""
        logits = nets.policy.apply(normalizer, params.policy, obs)
        raw = nets.action_distribution.sample_no_postprocessing(logits, key)
        return nets.action_distribution.postprocess(raw), raw, nets.action_distribution.log_prob(logits, raw)

    return act


def make_record(config: PPOConfig) -> Callable:
    def record(obs, raw, log_prob, outcome: Outcome, tracker: EpisodeTracker):
        """The transition from obs under raw action to the step's outcome, and updated episode sums."""
        reward, cost = streams(outcome, config.constraint, config.discounting)
        done = outcome.done.astype(jnp.float32)
        truncation = outcome.truncation.astype(jnp.float32)
        running_return = tracker.running_return + outcome.reward
        running_length = tracker.running_length + 1
        tracker = tracker.replace(
            running_return=running_return * (1 - done),
            running_length=running_length * (1 - done),
            ended_return=tracker.ended_return + jnp.sum(running_return * done),
            ended_length=tracker.ended_length + jnp.sum(running_length * done),
            ended_count=tracker.ended_count + jnp.sum(done),
        )
        step = Step(obs, raw, log_prob, reward, cost, done, truncation, outcome.metrics)
        return step, tracker

    return record


def to_rollout(steps: Step, final_obs: dict) -> tuple[Rollout, dict]:
    """Time-major Steps [T, B, ...] -> (Rollout, mean of every metric)."""
    rollout = Rollout(
        obs=steps.obs,
        raw_action=steps.raw_action,
        log_prob=steps.log_prob,
        reward=steps.reward,
        cost=steps.cost,
        done=steps.done,
        truncation=steps.truncation,
        final_obs=final_obs,
    )
    metrics = {f"env/{k}": jnp.mean(v) for k, v in steps.metrics.items()}
    metrics["env/reward_stream"] = jnp.mean(steps.reward)
    metrics["env/cost_stream"] = jnp.mean(steps.cost)
    return rollout, metrics


def make_scan_collector(env: Any, nets: PPONetworks, config: PPOConfig) -> Callable:
    """collect(params, normalizer, env_state, tracker, key) for a jittable env (mjx)."""
    act, record = make_act(nets), make_record(config)

    def collect(params, normalizer, env_state, tracker, key):
        def body(carry, step_key):
            state, tracker = carry
            action, raw, log_prob = act(params, normalizer, state.obs, step_key)
            next_state = env.step(state, action)
            step, tracker = record(state.obs, raw, log_prob, Outcome.of(next_state), tracker)
            return (next_state, tracker), step

        keys = jax.random.split(key, config.unroll_length)
        (env_state, tracker), steps = jax.lax.scan(body, (env_state, tracker.new_iteration()), keys)
        rollout, metrics = to_rollout(steps, env_state.obs)
        return env_state, tracker, rollout, metrics

    return jax.jit(collect)


def make_loop_collector(env: Any, nets: PPONetworks, config: PPOConfig, share: ProcessShare | None = None) -> Callable:
    """collect(...) for the cpu backend: Python steps mujoco.batch, JAX does the rest.

    With `share` (a multi-process run), env steps this process's rows of the batch; the policy and the episode
    sums see the whole batch as global arrays, so that a run's numbers do not depend on how it is split."""
    act, record = jax.jit(make_act(nets)), jax.jit(make_record(config))
    finish = jax.jit(lambda steps, final_obs: to_rollout(_stack(steps), final_obs))
    whole = share.to_global if share is not None else lambda tree: tree
    own = share.to_local if share is not None else lambda tree: tree

    def collect(params, normalizer, env_state, tracker, key):
        tracker = tracker.new_iteration()
        steps = []
        obs = whole(env_state.obs)
        for step_key in jax.random.split(key, config.unroll_length):
            action, raw, log_prob = act(params, normalizer, obs, step_key)
            next_state = env.step(env_state, own(action))
            step, tracker = record(obs, raw, log_prob, whole(Outcome.of(next_state)), tracker)
            steps.append(step)
            env_state, obs = next_state, whole(next_state.obs)
        rollout, metrics = finish(steps, obs)
        return env_state, tracker, rollout, metrics

    return collect


def _stack(steps: list[Step]) -> Step:
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *steps)
