"""The environment state both backends return, and the physics a reset sets."""

from typing import Any

import jax
from flax import struct


@struct.dataclass
class State:
    """A batch of B worlds after a reset or a step.

    Attributes:
      data: the backend's physics: an `mjx.Data` with a leading [B] axis on
        the mjx backend; on the cpu backend a `CpuPhysics` (the live
        simulations stay inside its `mujoco.batch.Batch`).
      obs: {"state": [B, n_obs] for the policy, "privileged_state":
        [B, n_priv] for a critic}.
      reward: [B] sum of the scaled reward terms.
      done: [B] bool; the world ended its episode at this step (and, with
        auto-reset, has already been reset: `obs` is its first observation and
        `info["final_obs"]` its last).
      metrics: {"reward/<term>": [B] scaled term, "success": [B] 0/1}.
      info: per-world bookkeeping: "step", "rng", "last_action",
        "termination_reason" (int code, see `Env.reason_names`), "truncation",
        "episode_return", "success", "final_obs", the task's own variables, and
        under a perturbation (`perturb.PerturbedEnv`) its bookkeeping, "perturb/...".
    """

    data: Any
    obs: dict[str, jax.Array]
    reward: jax.Array
    done: jax.Array
    metrics: dict[str, jax.Array]
    info: dict[str, Any]


@struct.dataclass
class PhysicsInit:
    """One world's state right after a reset: what a task's reset distribution draws."""

    qpos: jax.Array  # [nq]
    qvel: jax.Array  # [nv]
    mocap_pos: jax.Array  # [nmocap, 3]
