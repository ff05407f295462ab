"""The imitation constraint: task reward subject to tracking error <= budget.

Lagrangian mode maximises E[task] - λ·(E[tracking error] - ε) with λ >= 0
learned by dual ascent on the measured error. Fixed mode reproduces the
paper's shaping, reward = w_track·imitation + w_task·task, with no λ.
"""

from dataclasses import dataclass
from typing import Literal

import jax.numpy as jnp

from metaworld_x.errors import UserError


@dataclass(frozen=True)
class ConstraintConfig:
    """How imitation and task combine."""

    mode: Literal["lagrangian", "fixed"] = "lagrangian"
    """lagrangian: constrained optimisation with a learned multiplier; fixed: the paper's weighted sum."""
    budget: float = 0.06
    """ε: the largest mean keypoint tracking error (m) the policy may incur."""
    multiplier_lr: float = 2.0
    """Dual-ascent step on λ per metre of constraint violation per iteration."""
    initial_multiplier: float = 1.0
    """λ at the start of training."""
    max_multiplier: float = 100.0
    """Upper bound on λ, so one bad batch cannot make the task reward irrelevant for ever."""
    min_multiplier: float = 0.0
    """Lower bound on λ. The failure charge is a cost, so it weighs λ times: where the tracking constraint goes
    slack and λ reaches 0, falling is no longer charged beyond the reward it forgoes. Sit and reach_one_hand,
    resumed until λ reached 0, began to fall (docs/design-notes.md); a floor keeps the charge. 0: plain dual ascent."""
    imitation_bonus: float = 0.5
    """In lagrangian mode, weight of the dense imitation reward added to the task reward (a shaping that
    makes the constraint reachable early; the constraint itself is on the tracking error)."""
    failure_error: float = 0.0
    """In lagrangian mode, the tracking error (m) charged for every step after a fall or deviation ends an episode
    early: its discounted sum over an unending remainder, once, at the failing step. Without it the cost, positive
    at every step, makes ending early the cheapest way out, and with task rewards that are penalties (push's) the
    reward stream agrees: push episodes shrank to 12 steps over 1.2M steps of training, shorter than the clip's
    own servo targets replayed open loop last (30 to 78). Set it to the deviation limit (0.5 m), so a failure
    is charged as never getting back. 0: off, as the experts shipped before it were trained."""
    track_weight: float = 0.6
    """Fixed mode: weight of the imitation reward (the paper's w_track)."""
    task_weight: float = 0.4
    """Fixed mode: weight of the task reward (the paper's w_task)."""

    def __post_init__(self):
        if self.mode not in ("lagrangian", "fixed"):
            raise UserError(f"constraint mode must be 'lagrangian' or 'fixed', not {self.mode!r}")
        if self.budget <= 0:
            raise UserError(f"constraint budget must be a positive error in metres, not {self.budget}")
        if not 0 <= self.min_multiplier <= self.initial_multiplier <= self.max_multiplier:
            raise UserError("need 0 <= min_multiplier <= initial_multiplier <= max_multiplier, got "
                            f"{self.min_multiplier}, {self.initial_multiplier}, {self.max_multiplier}")
        if self.failure_error < 0:
            raise UserError(f"failure_error is a tracking error in metres and cannot be negative, not {self.failure_error}")


def reward_streams(config: ConstraintConfig, task, imitation, tracking_error):
    """Per-step (reward, cost) for the two value streams. Shapes [...] -> [...], [...]."""
    if config.mode == "fixed":
        reward = config.track_weight * imitation + config.task_weight * task
        return reward, jnp.zeros_like(reward)
    return task + config.imitation_bonus * imitation, tracking_error


def failure_charge(config: ConstraintConfig, failed, discount: float):
    """The cost added at a step whose fall or deviation ended the episode: failure_error at every later step,
    discounted, as if the robot never got back. failed: [...] 0/1 (not success, not the time limit)."""
    if config.mode == "fixed" or config.failure_error == 0:
        return jnp.zeros_like(failed)
    return failed * config.failure_error * discount / (1.0 - discount)


def combine_advantages(config: ConstraintConfig, reward_advantage, cost_advantage, multiplier):
    """The Lagrangian's advantage, scaled by 1/(1+λ) so its size stays put as λ grows."""
    if config.mode == "fixed":
        return reward_advantage
    return (reward_advantage - multiplier * cost_advantage) / (1.0 + multiplier)


def update_multiplier(config: ConstraintConfig, multiplier, measured_error):
    """Dual ascent: λ rises while the error exceeds the budget, falls towards min_multiplier (0) when slack."""
    if config.mode == "fixed":
        return multiplier
    step = config.multiplier_lr * (measured_error - config.budget)
    return jnp.clip(multiplier + step, config.min_multiplier, config.max_multiplier)
