"""A reference clip played kinematically as a translucent second robot beside the simulated one.

The ghost is a second `MjData` of the scene's own model, posed from the
clip at the play time and drawn into the scene with `mjv_addGeoms`. Its
robot geoms are recoloured translucent so the two robots read apart at a
glance; its props' geoms are made invisible, so props are not doubled.
"""

import jax
import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.robot.parts import robot_bodies

GHOST_RGBA = np.array([0.35, 0.85, 0.45, 0.35], np.float32)


def motion_path(name: str):
    """The .npz of a clip name in assets/motions (or a path to one); a UserError listing the clips if absent."""
    from metaworld_x.envs.tasks.tracking import clip_path
    from metaworld_x.paths import MOTIONS_DIR

    path = clip_path(name)
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in MOTIONS_DIR.glob("*.npz")))
        raise UserError(f"no motion clip {name!r} ({path}); clips: {names}, or a path to an .npz")
    return path


def load_reference(name: str, model: mujoco.MjModel):
    """The ReferenceMotion of one clip (a name in assets/motions or an .npz path), looping as its metadata says."""
    from metaworld_x.envs.reference import from_clips
    from metaworld_x.motion.clip import load_clip

    clip = load_clip(motion_path(name), model)
    return from_clips([clip], [bool(clip.info.get("loop", False))])


class Ghost:
    """The robot posed from a reference clip, `offset` metres to the side (+y) of where the clip puts it."""

    def __init__(self, model: mujoco.MjModel, reference, offset: float = 1.0, name: str = ""):
        from metaworld_x.envs.reference import frame_at
        from metaworld_x.motion.ik import joint_qpos_indices

        self.model, self.name = model, name
        self.data = mujoco.MjData(model)
        self._offset = np.array([0.0, offset, 0.0])
        pelvis = model.body("pelvis")
        self._root_qpos = int(model.jnt_qposadr[pelvis.jntadr[0]])
        self._joint_qpos = joint_qpos_indices(model)
        self._robot_bodies = np.flatnonzero(robot_bodies(model))
        self._frame = jax.jit(lambda time: frame_at(reference, 0, time))
        self._option, self._perturb = mujoco.MjvOption(), mujoco.MjvPerturb()

    def pose(self, time: float) -> None:
        """Pose the ghost at `time` seconds into the clip (forward kinematics only)."""
        frame = jax.device_get(self._frame(np.float32(time)))
        self.data.qpos[:] = self.model.qpos0
        root = slice(self._root_qpos, self._root_qpos + 7)
        self.data.qpos[root] = np.concatenate([np.asarray(frame.root_pos) + self._offset, frame.root_quat])
        self.data.qpos[self._joint_qpos] = frame.joint_pos
        mujoco.mj_kinematics(self.model, self.data)

    def draw(self, scene: mujoco.MjvScene) -> None:
        """Append the ghost's geoms to `scene`: the robot's translucent, any prop's invisible."""
        start = scene.ngeom
        mujoco.mjv_addGeoms(self.model, self.data, self._option, self._perturb, mujoco.mjtCatBit.mjCAT_DYNAMIC, scene)
        hidden = GHOST_RGBA * np.array([1, 1, 1, 0], np.float32)
        for i in range(start, scene.ngeom):
            geom = scene.geoms[i]
            robot = geom.objtype == mujoco.mjtObj.mjOBJ_GEOM and self.model.geom_bodyid[geom.objid] in self._robot_bodies
            geom.rgba[:] = GHOST_RGBA if robot else hidden
