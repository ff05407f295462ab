"""Evaluation: deterministic policy, first episode of each simulation."""

from typing import Any

import jax

import numpy as np

from metaworld_x.training.networks import PPONetworks

Z_95 = 1.959964  # standard normal quantile of a two-sided 95 % interval


def success_interval(successes: int, episodes: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a success rate, 95 % by default.

    A periodic evaluation runs 16 episodes: 12/16 reads 75 % but is [51, 90] %, so two checkpoints 20 points apart
    are often the same policy (such noise once passed for a fine-tune's dips). Wilson's interval, unlike the
    normal approximation, stays inside [0, 1] and is not empty at 0/n or n/n."""
    if episodes < 1:
        raise ValueError(f"a success interval needs at least one episode, got {episodes}")
    if not 0 <= successes <= episodes:
        raise ValueError(f"successes must be between 0 and the {episodes} episodes, got {successes}")
    rate, spread = successes / episodes, z * z / episodes
    centre = (rate + spread / 2) / (1 + spread)
    half = z * np.sqrt(rate * (1 - rate) / episodes + spread / (4 * episodes)) / (1 + spread)
    return float(max(centre - half, 0.0)), float(min(centre + half, 1.0))


def make_evaluator(env: Any, nets: PPONetworks, steps: int):
    """evaluate(params, normalizer, key) -> dict of first-episode statistics over env's simulations."""

    @jax.jit
    def act(params, normalizer, obs):
        logits = nets.policy.apply(normalizer, params.policy, obs)
        return nets.action_distribution.mode(logits)

    env_step = env.step if env.backend == "cpu" else jax.jit(env.step)

    def evaluate(params, normalizer, key) -> dict[str, float]:
        state = env.reset(key)
        num = state.reward.shape[0]
        alive = np.ones(num, bool)
        episode_return, length = np.zeros(num), np.zeros(num)
        success, fell = np.zeros(num, bool), np.zeros(num, bool)
        error_sum = np.zeros(num)
        for _ in range(steps):
            state = env_step(state, act(params, normalizer, state.obs))
            reward, done = np.asarray(state.reward), np.asarray(state.done, bool)
            truncation = np.asarray(state.info["truncation"], bool)
            episode_return += reward * alive
            length += alive
            if "success" in state.metrics:
                success |= alive & (np.asarray(state.metrics["success"]) > 0.5)
            if "imitation/tracking_error" in state.metrics:
                error_sum += np.asarray(state.metrics["imitation/tracking_error"]) * alive
            fell |= alive & done & ~truncation
            alive &= ~done
            if not alive.any():
                break
        low, high = success_interval(int(success.sum()), num)
        result = {
            "eval/return": float(episode_return.mean()),
            "eval/return_std": float(episode_return.std()),
            "eval/length": float(length.mean()),
            "eval/success_rate": float(success.mean()),
            "eval/success_low": low,
            "eval/success_high": high,
            "eval/falls": float(fell.sum()),
            "eval/episodes": float(num),
        }
        if error_sum.any():
            result["eval/tracking_error"] = float((error_sum / np.maximum(length, 1)).mean())
        return result

    return evaluate


