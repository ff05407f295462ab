"""Stop: come to a standstill on the robot's own feet, from walking, and stay there."""

from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.rewards import closeness, com_off_feet, on_feet, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig

STILL_SPEED = 0.15
"""Horizontal speed (m/s) of the centre of mass under which the robot has stopped (the sequences' "still")."""


@dataclass(frozen=True)
class StopRewards(RewardScales):
    stopped: float = 1.0
    """Standing (HumanoidBench's stand reward) x the centre of mass slowing to a halt over the feet."""


@dataclass(frozen=True)
class StopConfig(TaskConfig):
    still_speed: float = STILL_SPEED
    """Horizontal speed (m/s) of the centre of mass under which the robot counts as stopped."""
    rewards: StopRewards = field(default_factory=StopRewards)


def horizontal_speed(view) -> jnp.ndarray:
    return jnp.linalg.norm(view.com_vel[:2])


def stopped(view, still_speed: float) -> jnp.ndarray:
    """On its own feet (`rewards.on_feet`) with the centre of mass moving slower than `still_speed`."""
    return on_feet(view) & (horizontal_speed(view) < still_speed)


@dataclass(frozen=True)
class Stop(Task):
    """Stop walking and stand still.

    The start is the tracking task's (the stop clip begins mid-stride at walking speed, and its expert trains
    from the walk's states as a router hands them over): on its own the task starts standing at home, where
    success is only staying put.
    Success: on its feet and still (`stopped`) at the episode's end.
    """

    name = "stop"
    scene = "floor"
    Config = StopConfig

    def _reward_stopped(self, view, info, action):
        speed = closeness(horizontal_speed(view), near=self.config.still_speed, margin=1.0)
        return stance(view) * speed * closeness(com_off_feet(view), near=0.05, margin=0.25)

    def success(self, view, info):
        return stopped(view, self.config.still_speed)
