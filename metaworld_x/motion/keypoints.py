"""The human keypoints retargeting works with, and where each format keeps them.

Every loader keeps its format's own joint names; `canonical_keypoints` maps
a clip onto the shared vocabulary below. Joints carry different meanings
from format to format, so a name map is used whole or not at all (in one
CMU naming "LeftShoulder" is the shoulder joint, in the other the clavicle).
"""

from __future__ import annotations

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.motion.human import HumanMotion

# `chest` is a point on the upper spine. Its height above the pelvis differs
# between formats (DeepMimic's "chest" joint sits at the waist), so use it
# for the torso's direction rather than for lengths. `toe` is the ball or
# front of the foot, `head` a point inside the head (not its top).
CANONICAL_KEYPOINTS = (
    "pelvis",
    "left_hip", "left_knee", "left_ankle", "left_toe",
    "right_hip", "right_knee", "right_ankle", "right_toe",
    "chest", "neck", "head",
    "left_shoulder", "left_elbow", "left_wrist",
    "right_shoulder", "right_elbow", "right_wrist",
)


def _sided(pelvis: str, chest: str, neck: str, head: str, left: dict[str, str], right: dict[str, str]) -> dict[str, str]:
    """A full name map from the unsided joints and one {canonical suffix: name} table per side."""
    names = {"pelvis": pelvis, "chest": chest, "neck": neck, "head": head}
    names.update({f"left_{part}": name for part, name in left.items()})
    names.update({f"right_{part}": name for part, name in right.items()})
    return names


def _limbs(hip: str, knee: str, ankle: str, toe: str, shoulder: str, elbow: str, wrist: str) -> dict[str, str]:
    return {"hip": hip, "knee": knee, "ankle": ankle, "toe": toe,
            "shoulder": shoulder, "elbow": elbow, "wrist": wrist}


# {map name: {canonical keypoint: joint name in that format}}, tried in order.
KEYPOINT_MAPS: dict[str, dict[str, str]] = {
    "canonical": {name: name for name in CANONICAL_KEYPOINTS},
    # CMU BVH, cgspeed's MotionBuilder-friendly naming.
    "cmu_bvh": _sided(
        "Hips", "Spine1", "Neck", "Head",
        _limbs("LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "LeftArm", "LeftForeArm", "LeftHand"),
        _limbs("RightUpLeg", "RightLeg", "RightFoot", "RightToeBase", "RightArm", "RightForeArm", "RightHand"),
    ),
    # CMU BVH, cgspeed's 3ds Max-friendly naming (the shared cmu/131_0x.bvh).
    "cmu_max_bvh": _sided(
        "Hips", "Chest2", "Neck", "Head",
        _limbs("LeftHip", "LeftKnee", "LeftAnkle", "LeftToe", "LeftShoulder", "LeftElbow", "LeftWrist"),
        _limbs("RightHip", "RightKnee", "RightAnkle", "RightToe", "RightShoulder", "RightElbow", "RightWrist"),
    ),
    # SMPL-H as named in the OMOMO npz `joint_names` (PHC / SMPL-MuJoCo naming).
    "smplh": _sided(
        "Pelvis", "Chest", "Neck", "Head",
        _limbs("L_Hip", "L_Knee", "L_Ankle", "L_Toe", "L_Shoulder", "L_Elbow", "L_Wrist"),
        _limbs("R_Hip", "R_Knee", "R_Ankle", "R_Toe", "R_Shoulder", "R_Elbow", "R_Wrist"),
    ),
    # SMPL / SMPL-H / SMPL-X as the `smplx` package names them.
    "smplx": _sided(
        "pelvis", "spine3", "neck", "head",
        _limbs("left_hip", "left_knee", "left_ankle", "left_foot", "left_shoulder", "left_elbow", "left_wrist"),
        _limbs("right_hip", "right_knee", "right_ankle", "right_foot", "right_shoulder", "right_elbow", "right_wrist"),
    ),
    # DeepMimic humanoid3d as `load_deepmimic` names it (head and toes are
    # points on the head and foot bodies, see deepmimic.py).
    "deepmimic": _sided(
        "root", "chest", "neck", "head",
        _limbs("left_hip", "left_knee", "left_ankle", "left_toe", "left_shoulder", "left_elbow", "left_wrist"),
        _limbs("right_hip", "right_knee", "right_ankle", "right_toe", "right_shoulder", "right_elbow", "right_wrist"),
    ),
}


def keypoint_map_for(motion: HumanMotion) -> str:
    """The name of the first map in KEYPOINT_MAPS whose joints the clip all has."""
    present = set(motion.joint_names)
    missing = {
        name: [joint for joint in mapping.values() if joint not in present]
        for name, mapping in KEYPOINT_MAPS.items()
    }
    for name, absent in missing.items():
        if not absent:
            return name
    closest = min(missing, key=lambda name: len(missing[name]))
    raise UserError(
        f"{motion.source}: no known joint naming fits this clip; the closest, {closest!r}, lacks "
        f"{missing[closest]}. The clip has: {', '.join(motion.joint_names)}"
    )


def canonical_keypoints(motion: HumanMotion, naming: str | None = None) -> dict[str, np.ndarray]:
    """{keypoint: [T, 3] world positions} for every name in CANONICAL_KEYPOINTS.

    Args:
      motion: a loaded clip.
      naming: a key of KEYPOINT_MAPS; found from the clip's joint names if None.
    """
    naming = keypoint_map_for(motion) if naming is None else naming
    if naming not in KEYPOINT_MAPS:
        raise UserError(f"unknown joint naming {naming!r}; known: {', '.join(KEYPOINT_MAPS)}")
    mapping = KEYPOINT_MAPS[naming]
    return {keypoint: motion.joint(mapping[keypoint]) for keypoint in CANONICAL_KEYPOINTS}
