"""Evaluation: deterministic policy, first episode of each simulation."""

from typing import Any

import jax

import numpy as np

from metaworld_x.training.networks import PPONetworks


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
        result = {
            "eval/return": float(episode_return.mean()),
            "eval/return_std": float(episode_return.std()),
            "eval/length": float(length.mean()),
            "eval/success_rate": float(success.mean()),
            "eval/falls": float(fell.sum()),
            "eval/episodes": float(num),
        }
        if error_sum.any():
            result["eval/tracking_error"] = float((error_sum / np.maximum(length, 1)).mean())
        return result

    return evaluate


