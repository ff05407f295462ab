"""A fingerprint of the robot's kinematics and masses, so a clip knows which robot it was made for."""

from __future__ import annotations

import hashlib

import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.robot.constants import JOINT_NAMES, SITE_NAMES

ROOT_BODY = "pelvis"
# Rounded before hashing, so that float noise from another compiler path
# (MJCF vs MjSpec, scene vs bare robot) does not change the fingerprint.
_DECIMALS = 6


def robot_hash(model: mujoco.MjModel) -> str:
    """sha256 (hex) over the robot's body frames, joint axes and ranges, masses and named sites.

    Only the bodies that carry the robot's joints (the pelvis subtree down to
    the last jointed body) count, so the same robot inside any scene, or with
    jointless attachments such as paddle hands, has the same fingerprint.
    Names enter only to fix the order; a renamed but identical robot differs,
    a moved joint or a changed mass differs too.
    """
    root = _body_id(model, ROOT_BODY)
    bodies = _jointed_subtree(model, root)
    digest = hashlib.sha256()

    def add(label: str, values) -> None:
        digest.update(label.encode())
        digest.update(np.round(np.asarray(values, dtype=np.float64), _DECIMALS).tobytes())

    for body in bodies:
        add(f"body:{model.body(body).name}", np.concatenate([
            model.body_pos[body], _canonical_quat(model.body_quat[body]), [model.body_mass[body]],
            model.body_ipos[body],
        ]))
    for name in JOINT_NAMES:
        joint = _joint_id(model, name)
        add(f"joint:{name}", np.concatenate([
            model.jnt_axis[joint], model.jnt_pos[joint], model.jnt_range[joint],
            [float(model.jnt_limited[joint]), float(bodies.index(model.jnt_bodyid[joint]))],
        ]))
    for name in SITE_NAMES:
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
        if site < 0:
            raise UserError(f"the robot model has no site {name!r}; every H1 variant carries {SITE_NAMES}")
        add(f"site:{name}", np.concatenate([model.site_pos[site], [float(bodies.index(model.site_bodyid[site]))]]))
    return digest.hexdigest()


def _canonical_quat(quat: np.ndarray) -> np.ndarray:
    return -quat if quat[0] < 0 else quat


def _body_id(model: mujoco.MjModel, name: str) -> int:
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    if body < 0:
        raise UserError(f"the model has no body {name!r}; is it an H1?")
    return body


def _joint_id(model: mujoco.MjModel, name: str) -> int:
    joint = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if joint < 0:
        raise UserError(f"the model has no joint {name!r}; is it an H1?")
    return joint


def _jointed_subtree(model: mujoco.MjModel, root: int) -> list[int]:
    """Bodies under `root` (inclusive) that have joints or lead to bodies that do, in id order."""
    keep = set()
    for body in range(model.nbody):
        if model.body_jntnum[body] == 0:
            continue
        chain, cursor = [], body
        while cursor != 0 and cursor != root:
            chain.append(cursor)
            cursor = model.body_parentid[cursor]
        if cursor == root:
            keep.update(chain)
            keep.add(root)
    return sorted(keep)
