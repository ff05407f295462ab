"""Scenes: the robot, a floor, and props composed with `mujoco.MjSpec`."""

from metaworld_x.scene.compose import SCENES, build_model, build_scene

__all__ = ["SCENES", "build_model", "build_scene"]
