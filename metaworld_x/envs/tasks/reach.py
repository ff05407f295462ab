"""Reach: touch a target with the right hand, within reach of the reach_one_hand clip's hand.

The shipped clip (keyframed: the shared mocap has no one-hand reach) stands
in place, leans a little and holds the right hand out 0.5 m ahead of the
shoulder at chest height. Targets are drawn around where the clip holds that
hand, relative to the robot's start at the origin facing +x: a policy held
to the clip within ε = 6 cm (mean over 17 keypoints) can bend or stretch its
arm, not go somewhere else. With a different clip, move the box to that
clip's hand (tests/experts/test_expert_clips_fit_their_tasks.py checks it).
"""

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from metaworld_x.envs.observations import relative_to_robot, site_offsets
from metaworld_x.envs.rewards import closeness, dont_move, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig


@dataclass(frozen=True)
class ReachRewards(RewardScales):
    stand: float = 0.3
    """Head high x torso upright x gentle servos x not drifting."""
    reach: float = 0.7
    """The hand's closeness to the target: 1 within `aim_distance`, 0 beyond 0.5 m more."""


@dataclass(frozen=True)
class ReachConfig(TaskConfig):
    target_low: tuple[float, float, float] = (0.42, -0.34, 1.20)
    """Lower corner (m, world frame) of the box the target is drawn from at reset; the robot starts at the origin
    facing +x. The box is ±10 cm (±8 cm high) around (0.52, -0.24, 1.28), where the reach_one_hand clip holds its
    right hand from 1 s to its end at 2 s (and so for the rest of a tracking episode). Its far corner is 0.59 m
    from the clip's shoulder, inside the straight arm's 0.61 m."""
    target_high: tuple[float, float, float] = (0.62, -0.14, 1.36)
    """Upper corner of that box."""
    hand: str = "right_hand"
    """The hand site that must touch the target."""
    success_distance: float = 0.05
    """The hand this close (m) to the target is a success."""
    aim_distance: float = 0.02
    """The reach reward is full within this distance (m) of the target: tighter than `success_distance`, so that a
    policy aims at the target itself, not at the rim of the success ball. With full reward out to 5 cm, the
    tracking constraint held the hand on that rim, and 8 of 50 far or high targets ended 0.2-1.2 cm outside it."""
    rewards: ReachRewards = field(default_factory=ReachRewards)


@dataclass(frozen=True)
class Reach(Task):
    """Bring the right hand to the green target; the target is redrawn at every reset.

    The target is a task variable (`info["target"]`, world frame); the
    scene's mocap sphere is moved there so that renders show it.
    Success: the hand has come within `config.success_distance` of the target at some step (`info["touched"]`).
    """

    name = "reach"
    scene = "reach"
    Config = ReachConfig

    def reset_info(self, rng):
        low, high = jnp.asarray(self.config.target_low), jnp.asarray(self.config.target_high)
        return {"target": jax.random.uniform(rng, (3,), minval=low, maxval=high), "touched": jnp.zeros((), bool)}

    def advance(self, view, info):
        # success is having touched the target, not touching it now: the expert's tracking task judges success
        # at the end of its episode, long after the clip has lowered its arm
        return {**info, "touched": info["touched"] | (self._hand_distance(view, info) < self.config.success_distance)}

    def reset_physics(self, rng, home, info):
        init = super().reset_physics(rng, home, info)
        return init.replace(mocap_pos=init.mocap_pos.at[0].set(info["target"]))  # the scene's one mocap body

    def features(self, view, info):
        return jnp.concatenate([relative_to_robot(view, info["target"]), site_offsets(view, (self.config.hand,), info["target"])])

    def _hand_distance(self, view, info):
        return jnp.linalg.norm(view.site(self.config.hand) - info["target"])

    def _reward_stand(self, view, info, action):
        return stance(view) * dont_move(view)

    def _reward_reach(self, view, info, action):
        return closeness(self._hand_distance(view, info), near=self.config.aim_distance, margin=0.5)

    def success(self, view, info):
        return info["touched"]
