"""The engine-neutral halves of a control step, shared by both backends.

A step is: `prepare_action` (sanitise the action, map it to servo targets),
the backend's physics, then `evaluate` (reward, termination, observation,
bookkeeping) on the PhysicsView the backend read. Resets go through
`reset_world`. All functions take one world; the backends vmap them.
"""

import jax
import jax.numpy as jnp

from metaworld_x.envs.actions import ActionMap
from metaworld_x.envs.physics_view import PhysicsView
from metaworld_x.envs.state import PhysicsInit
from metaworld_x.envs.task import Info, Task

# Codes of the reasons an episode ends: the index in `reason_names(task)`.
# Invalid input comes first, so that it is what a world reports even if a
# task condition also holds; running out of time comes last.
LEADING_REASONS = ("none", "nonfinite_action", "nonfinite_physics")
TRAILING_REASONS = ("time_limit",)


def reason_names(task: Task) -> tuple[str, ...]:
    return LEADING_REASONS + task.termination_reasons + TRAILING_REASONS


def prepare_action(action_map: ActionMap, action):
    """[nu] raw action -> (action in [-1, 1], whether it was finite, servo targets).

    A non-finite action is replaced by zero (hold home) so the physics never
    sees it; `evaluate` then ends the episode with reason "nonfinite_action".
    """
    finite = jnp.all(jnp.isfinite(action))
    action = jnp.where(finite, jnp.clip(jnp.nan_to_num(action), -1.0, 1.0), 0.0).astype(jnp.float32)
    return action, finite, action_map(action)


def reset_world(task: Task, home: PhysicsInit, rng: jax.Array, nu: int) -> tuple[PhysicsInit, Info]:
    """A fresh episode: the physics to set and the bookkeeping to start from."""
    rng, info_key, physics_key = jax.random.split(rng, 3)
    info = {
        "step": jnp.zeros((), jnp.int32),
        "rng": rng,
        "last_action": jnp.zeros(nu, jnp.float32),
        "termination_reason": jnp.zeros((), jnp.int32),
        "truncation": jnp.zeros((), bool),
        "episode_return": jnp.zeros((), jnp.float32),
        "success": jnp.zeros((), bool),
    }
    info.update(task.reset_info(info_key))
    return task.reset_physics(physics_key, home, info), info


def first_observation(task: Task, view: PhysicsView, info: Info):
    """Observation of a world just reset, with `final_obs` initialised to it."""
    obs = _finite(task.observe(view.just_reset(), info))
    return obs, {**info, "final_obs": obs}


def zero_metrics(task: Task) -> dict[str, jax.Array]:
    metrics = {f"reward/{n}": jnp.zeros((), jnp.float32) for n in task.reward_names}
    metrics["success"] = jnp.zeros((), jnp.float32)
    metrics.update({n: jnp.zeros((), jnp.float32) for n in task.metric_names})
    return metrics


def evaluate(task: Task, view: PhysicsView, info: Info, action, action_finite, physics_ok):
    """Reward, termination and observation after the physics of one step.

    Args:
      view: the world after the step.
      info: its bookkeeping before the step.
      action: [nu] the sanitised action that was applied.
      action_finite: whether the raw action was finite.
      physics_ok: False if the engine reported a diverged state.

    Returns:
      obs, reward [], done [], metrics, info after the step.
    """
    physics_ok = physics_ok & _all_finite(view)
    valid = action_finite & physics_ok
    step = info["step"] + 1
    info = task.advance(view, {**info, "step": step})

    terms = {n: jnp.where(valid, v, 0.0) for n, v in task.reward_terms(view, info, action).items()}
    reward = sum(terms.values(), jnp.zeros((), jnp.float32))
    episode_return = info["episode_return"] + reward
    info, extra_metrics = task.account(view, {**info, "episode_return": episode_return}, terms)

    conditions = jnp.stack([
        jnp.zeros((), bool), ~action_finite, ~physics_ok,
        *[jnp.asarray(c, bool) & valid for c in task.terminations(view, info)],
        step >= task.config.episode_length,
    ])
    code = jnp.where(conditions.any(), jnp.argmax(conditions), 0).astype(jnp.int32)
    done = code > 0
    truncation = code == len(conditions) - 1

    success = info["success"] | (valid & jnp.asarray(task.success(view, info), bool))
    obs = jax.tree.map(lambda x: jnp.where(valid, x, 0.0), _finite(task.observe(view, info)))
    metrics = {f"reward/{n}": v for n, v in terms.items()}
    metrics["success"] = success.astype(jnp.float32)
    metrics.update({n: jnp.where(valid, jnp.asarray(extra_metrics[n], jnp.float32), 0.0) for n in task.metric_names})
    info = {
        **info, "last_action": action, "termination_reason": code, "truncation": truncation,
        "success": success, "final_obs": obs,
    }
    return obs, reward, done, metrics, info


# Fields that stay those of the finished episode in `info` after an auto-reset,
# so a trainer can read why and how it ended.
EPISODE_END_FIELDS = ("termination_reason", "truncation", "final_obs")


def split_keys(rngs):
    """[B] keys -> ([B] keys to keep, [B] keys for a reset this step)."""
    keys = jax.vmap(jax.random.split)(rngs)
    return keys[:, 0], keys[:, 1]


def select(done, reset_tree, stepped_tree):
    """Per world, the reset value where `done` [B], else the stepped one."""

    def pick(a, b):
        mask = done.reshape(done.shape + (1,) * (a.ndim - 1))
        return jnp.where(mask, a, b)

    return jax.tree.map(pick, reset_tree, stepped_tree)


def _all_finite(view: PhysicsView):
    return jnp.isfinite(view.qpos).all() & jnp.isfinite(view.qvel).all() & jnp.isfinite(view.site_pos).all()


def _finite(obs):
    return jax.tree.map(lambda x: jnp.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0), obs)
