"""Reach: touch a target in front of the robot with either hand, standing."""

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from metaworld_x.envs.observations import relative_to_robot, site_distances, site_offsets
from metaworld_x.envs.rewards import closeness, dont_move, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig

HANDS = ("left_hand", "right_hand")


@dataclass(frozen=True)
class ReachRewards(RewardScales):
    stand: float = 0.3
    """Head high x torso upright x gentle servos x not drifting."""
    reach: float = 0.7
    """The nearer hand's closeness to the target: 1 within `success_distance`, 0 beyond 0.5 m more."""


@dataclass(frozen=True)
class ReachConfig(TaskConfig):
    target_low: tuple[float, float, float] = (0.3, -0.45, 0.8)
    """Lower corner (m, world frame) of the box the target is drawn from at reset; the robot starts at the origin facing +x."""
    target_high: tuple[float, float, float] = (0.6, 0.45, 1.4)
    """Upper corner of that box."""
    success_distance: float = 0.05
    """A hand this close (m) to the target is a success."""
    rewards: ReachRewards = field(default_factory=ReachRewards)


@dataclass(frozen=True)
class Reach(Task):
    """Bring either hand to the green target while standing; the target is redrawn at every reset.

    The target is a task variable (`info["target"]`, world frame); the
    scene's mocap sphere is moved there so that renders show it.
    Success: a hand comes within `config.success_distance` of the target.
    """

    name = "reach"
    scene = "reach"
    Config = ReachConfig

    def reset_info(self, rng):
        low, high = jnp.asarray(self.config.target_low), jnp.asarray(self.config.target_high)
        return {"target": jax.random.uniform(rng, (3,), minval=low, maxval=high)}

    def reset_physics(self, rng, home, info):
        init = super().reset_physics(rng, home, info)
        return init.replace(mocap_pos=init.mocap_pos.at[0].set(info["target"]))  # the scene's one mocap body

    def features(self, view, info):
        return jnp.concatenate([relative_to_robot(view, info["target"]), site_offsets(view, HANDS, info["target"])])

    def _hand_distance(self, view, info):
        return site_distances(view, HANDS, info["target"]).min()

    def _reward_stand(self, view, info, action):
        return stance(view) * dont_move(view)

    def _reward_reach(self, view, info, action):
        return closeness(self._hand_distance(view, info), near=self.config.success_distance, margin=0.5)

    def success(self, view, info):
        return self._hand_distance(view, info) < self.config.success_distance
