"""Crawl: move forward through the low tunnel (HumanoidBench's h1-crawl)."""

from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from metaworld_x.envs.rewards import move, small_control, tolerance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.scene.props import TUNNEL_WIDTH

CRAWL_HEIGHT = 0.8  # m: head and torso height HumanoidBench rewards, ±0.2
# The pelvis orientation of a crawl, pitched forward about 80 degrees.
# NumPy, not JAX: a JAX array made on import starts the backend, and `train expert --distributed` must join its
# processes before that
CRAWL_PELVIS_QUAT = np.asarray([0.75, 0.0, 0.65, 0.0], np.float32)


@dataclass(frozen=True)
class CrawlRewards(RewardScales):
    gentle: float = 0.1
    """small_control: gentle servos."""
    low: float = 0.25
    """Head and torso both at crawling height."""
    forward: float = 0.4
    """Forward speed of the centre of mass, up to `target_speed`."""
    pitched: float = 0.25
    """Pelvis pitched forward as in a crawl."""


@dataclass(frozen=True)
class CrawlConfig(TaskConfig):
    target_speed: float = 1.0
    """Forward speed (m/s) at and above which the speed term is full."""
    rewards: CrawlRewards = field(default_factory=CrawlRewards)


@dataclass(frozen=True)
class Crawl(Task):
    """Crawl forward along +x inside the tunnel, whose roof is below the standing head.

    Every term is multiplied by 1 inside the tunnel's width and 0 outside it,
    as HumanoidBench does. Success: the episode return reaches its bar of 700.
    """

    name = "crawl"
    scene = "tunnel"
    success_bar = 700.0
    Config = CrawlConfig

    def features(self, view, info):
        # qpos without root y hides the walls from the policy; give it back
        return view.site("imu")[1:2]

    def _in_tunnel(self, view):
        half = TUNNEL_WIDTH / 2
        return tolerance(view.site("imu")[1], bounds=(-half, half))

    def _reward_gentle(self, view, info, action):
        return small_control(view) * self._in_tunnel(view)

    def _reward_low(self, view, info, action):
        band = (CRAWL_HEIGHT - 0.2, CRAWL_HEIGHT + 0.2)
        head = tolerance(view.site("head")[2], bounds=band, margin=1.0)
        torso = tolerance(view.site("imu")[2], bounds=band, margin=1.0)
        return jnp.minimum(head, torso) * self._in_tunnel(view)

    def _reward_forward(self, view, info, action):
        return move(view.com_vel[0], self.config.target_speed) * self._in_tunnel(view)

    def _reward_pitched(self, view, info, action):
        error = jnp.linalg.norm(view.body_rot_quat("pelvis") - CRAWL_PELVIS_QUAT)
        return tolerance(error, margin=1.0) * self._in_tunnel(view)
