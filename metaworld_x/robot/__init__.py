"""The H1-class humanoid: its constants and how its MuJoCo model is built."""

from metaworld_x.robot.constants import (
    HOME_JOINT_POSE,
    HOME_ROOT_HEIGHT,
    JOINT_NAMES,
    SITE_NAMES,
    VARIANTS,
)
from metaworld_x.robot.model import robot_spec

__all__ = [
    "HOME_JOINT_POSE",
    "HOME_ROOT_HEIGHT",
    "JOINT_NAMES",
    "SITE_NAMES",
    "VARIANTS",
    "robot_spec",
]
