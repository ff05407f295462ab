"""Which bodies and geoms of a compiled scene are the robot's: the tree under the pelvis, everything else is
floor or props. Retargeting, keyframing, the viewer's ghost, GIFs and the router's scene checks all ask this."""

import mujoco
import numpy as np


def robot_bodies(model: mujoco.MjModel) -> np.ndarray:
    """[nbody] bool: the pelvis and every body below it."""
    pelvis = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis")
    if pelvis < 0:
        raise ValueError("the model has no body named 'pelvis'; it is not an H1 scene")
    return model.body_rootid == model.body_rootid[pelvis]


def robot_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Ids of the geoms on the robot's bodies."""
    return np.flatnonzero(robot_bodies(model)[model.geom_bodyid])


def prop_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Ids of the geoms on bodies that are neither the robot's nor the world's (the floor)."""
    return np.flatnonzero(~robot_bodies(model)[model.geom_bodyid] & (model.geom_bodyid > 0))
