"""The reference clip format: one .npz per clip, no pickle, metadata as JSON.

Arrays (T frames at `fps`, float32 unless noted):
- `root_pos` [T, 3]: pelvis position, world, metres, z up.
- `root_quat` [T, 4]: pelvis orientation (w, x, y, z), one hemisphere throughout.
- `joint_pos` [T, 19], `joint_vel` [T, 19]: angles (rad) and speeds (rad/s) in JOINT_NAMES order.
- `root_lin_vel` [T, 3]: world frame (m/s); `root_ang_vel` [T, 3]: pelvis
  frame (rad/s). Together with joint_vel this is MuJoCo's qvel layout.
- `keypoint_pos` [T, K, 3]: robot bodies and sites by forward kinematics, named by `keypoint_names`.
- `target_pos` [T, K, 3]: the retargeting targets for the same keypoints (the human in the robot's proportions).
- `human_pos` [T, H, 3]: the human's keypoints scaled uniformly, named by `human_names` (for display).
- `contacts` [T, 2] bool: left, right foot in stance.
- `object_pose` [T, 7], optional: object quaternion (w, x, y, z) then position, same world and scale.
  A source object's own frame (OMOMO's mesh), not a scene prop's: see `reference.held_object`.
- `prop_qpos` [T, P], optional: the state of the scene joints the clip moves (the box it pushes, the
  door's hinge), in MuJoCo's qpos layout (a free joint: position then quaternion (w, x, y, z); a hinge
  or slide: one value), joint after joint as `prop_joints` in the metadata names them with their sizes.
- `metadata`: a 0-d unicode array holding a JSON object (see `Clip`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from metaworld_x.atomic import atomic_path
from metaworld_x.errors import UserError
from metaworld_x.motion.npz_file import read_npz
from metaworld_x.robot.constants import JOINT_NAMES

if TYPE_CHECKING:
    import mujoco

FORMAT_VERSION = 2
# Version 2 added `prop_qpos` and `prop_joints`; a version 1 file is a version 2 clip without props.
READABLE_VERSIONS = (1, 2)
# qpos size of each kind of scene joint a clip may record: free (7), hinge or slide (1).
PROP_JOINT_SIZES = (1, 7)
SOURCE_KINDS = ("mocap", "keyframed")
_FLOAT_ARRAYS = (
    "root_pos", "root_quat", "joint_pos", "joint_vel", "root_lin_vel", "root_ang_vel",
    "keypoint_pos", "target_pos", "human_pos",
)
_METADATA_KEYS = (
    "format_version", "skill", "fps", "num_frames", "source", "source_file", "licence",
    "attribution", "robot_hash", "keypoint_names", "human_names", "quality", "info",
)
# Metadata that version 1 files lack, and its value there.
_METADATA_SINCE_V2 = {"prop_joints": []}


@dataclass(frozen=True, eq=False)
class Clip:
    """A reference motion of the robot, as stored in assets/motions/<skill>.npz.

    Attributes:
      skill: the expert it serves (stand, walk, ...).
      fps: frames per second (the control rate, 50).
      root_pos .. object_pose, prop_qpos: the arrays of the module docstring.
      keypoint_names: [K] robot body or site name of each keypoint_pos / target_pos column.
      human_names: [H] canonical human keypoint of each human_pos column.
      source: 'mocap' or 'keyframed'.
      source_file: the human motion file's name ('' for keyframed clips).
      licence: the source's licence, one line.
      attribution: the credit the licence asks for.
      robot_hash: `robot_hash` of the model the clip was made on.
      quality: retarget quality figures (see `metaworld_x.motion.quality`).
      info: how the clip was made (segment_s, scale, floor_offset, ...) and
        `loop`: whether the clip is one cycle that may repeat (root displaced).
      prop_joints: (scene joint name, qpos size) of each joint in prop_qpos, in its order.
    """

    skill: str
    fps: float
    root_pos: np.ndarray
    root_quat: np.ndarray
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    root_lin_vel: np.ndarray
    root_ang_vel: np.ndarray
    keypoint_pos: np.ndarray
    target_pos: np.ndarray
    human_pos: np.ndarray
    contacts: np.ndarray
    keypoint_names: tuple[str, ...]
    human_names: tuple[str, ...]
    source: str
    source_file: str
    licence: str
    attribution: str
    robot_hash: str
    quality: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    object_pose: np.ndarray | None = None
    prop_joints: tuple[tuple[str, int], ...] = ()
    prop_qpos: np.ndarray | None = None

    def __post_init__(self) -> None:
        _validate(self, f"clip {self.skill!r}")

    @property
    def num_frames(self) -> int:
        return self.root_pos.shape[0]

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last."""
        return (self.num_frames - 1) / self.fps

    @property
    def qpos(self) -> np.ndarray:
        """[T, 26] MuJoCo qpos: root position, root quaternion, joint angles."""
        return np.concatenate([self.root_pos, self.root_quat, self.joint_pos], axis=-1)

    @property
    def qvel(self) -> np.ndarray:
        """[T, 25] MuJoCo qvel: root linear (world), root angular (local), joint speeds."""
        return np.concatenate([self.root_lin_vel, self.root_ang_vel, self.joint_vel], axis=-1)

    def keypoint(self, name: str) -> np.ndarray:
        """[T, 3] the path of keypoint `name` (a robot body or site in `keypoint_names`)."""
        if name not in self.keypoint_names:
            raise UserError(f"clip {self.skill!r} has no keypoint {name!r}; it has {list(self.keypoint_names)}")
        return self.keypoint_pos[:, self.keypoint_names.index(name)]

    def prop(self, joint: str) -> np.ndarray:
        """[T, size] the recorded qpos of scene joint `joint`."""
        start = 0
        for name, size in self.prop_joints:
            if name == joint:
                return self.prop_qpos[:, start : start + size]
            start += size
        raise UserError(f"clip {self.skill!r} records no scene joint {joint!r}; it records {[n for n, _ in self.prop_joints]}")

    @property
    def fingerprint(self) -> str:
        """sha256 (16 hex digits) of the motion: the frame rate and every array, rounded to 1e-5 (10 µm, 10 µrad).
        Not the file's bytes, which change with each write (the zip's timestamps) while the motion stays the same;
        not the metadata (quality figures, how it was made); and not float noise: rebuilt, crawl_get_down's
        velocities differ by 1e-14 where they are zero."""
        digest = hashlib.sha256(np.float64(self.fps).tobytes())
        # the arrays as a save stores them, so a clip hashes alike before and after one; + 0.0 turns -0.0 into 0.0
        for name, stored in _stored_arrays(self).items():
            array = np.round(stored.astype(np.float64), 5) + 0.0
            digest.update(name.encode() + str(array.shape).encode() + array.astype("<f8").tobytes())
        return digest.hexdigest()[:16]

    def metadata(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION, "skill": self.skill, "fps": self.fps,
            "num_frames": self.num_frames, "source": self.source, "source_file": self.source_file,
            "licence": self.licence, "attribution": self.attribution, "robot_hash": self.robot_hash,
            "keypoint_names": list(self.keypoint_names), "human_names": list(self.human_names),
            "quality": self.quality, "info": self.info,
            "prop_joints": [[name, size] for name, size in self.prop_joints],
        }


def _stored_arrays(clip: Clip) -> dict[str, np.ndarray]:
    """The clip's arrays as a file holds them: float32, contacts as bools, the optional ones when present."""
    arrays = {name: np.asarray(getattr(clip, name), dtype=np.float32) for name in _FLOAT_ARRAYS}
    arrays["contacts"] = np.asarray(clip.contacts, dtype=bool)
    if clip.object_pose is not None:
        arrays["object_pose"] = np.asarray(clip.object_pose, dtype=np.float32)
    if clip.prop_qpos is not None:
        arrays["prop_qpos"] = np.asarray(clip.prop_qpos, dtype=np.float32)
    return arrays


def save_clip(clip: Clip, path: str | Path) -> Path:
    """Write `clip` to `path` (.npz) atomically: a failed write leaves no file and keeps any old one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = _stored_arrays(clip)
    arrays["metadata"] = np.array(json.dumps(clip.metadata(), sort_keys=True))
    with atomic_path(path) as tmp, open(tmp, "wb") as stream:
        np.savez_compressed(stream, **arrays)
    return path


def load_clip(path: str | Path, model: "mujoco.MjModel | None" = None) -> Clip:
    """Read and validate a clip; refuse one made for a robot other than `model` (default: our H1).

    Args:
      path: the .npz file.
      model: the robot model (bare or inside a scene) the clip will drive;
        None compares against `robot_spec("h1")`. `read_clip` skips the check.
    """
    from metaworld_x.robot.fingerprint import robot_hash

    clip = read_clip(path)
    if model is None:
        model = _default_model()
    expected = robot_hash(model)
    if clip.robot_hash != expected:
        raise UserError(
            f"{path} was retargeted for robot model {clip.robot_hash}, but this robot model is {expected}; "
            f"re-run `metaworld-x motion retarget <source file> --skill {clip.skill} --out {path}` "
            "(or `python scripts/make_motion_library.py` for the shipped library) to remake it for this robot"
        )
    return clip


def read_clip(path: str | Path) -> Clip:
    """Read and validate a clip's contents without comparing robots."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such clip file")
    arrays = read_npz(path, "not a readable clip .npz")
    missing = [key for key in (*_FLOAT_ARRAYS, "contacts", "metadata") if key not in arrays]
    if missing:
        raise UserError(f"{path}: not a clip; arrays missing: {missing}")
    try:
        meta = json.loads(str(arrays["metadata"][()]))
    except (ValueError, TypeError) as error:
        raise UserError(f"{path}: the metadata is not JSON ({error})") from None
    absent = [key for key in _METADATA_KEYS if key not in meta]
    if absent:
        raise UserError(f"{path}: metadata lacks {absent}")
    if meta["format_version"] not in READABLE_VERSIONS:
        raise UserError(
            f"{path}: clip format {meta['format_version']}, this code reads {READABLE_VERSIONS}; remake the clip"
        )
    if meta["format_version"] == 1:
        meta = {**_METADATA_SINCE_V2, **meta}
    elif "prop_joints" not in meta:
        raise UserError(f"{path}: metadata lacks ['prop_joints']")
    for name in (*_FLOAT_ARRAYS, "object_pose", "prop_qpos"):
        if name in arrays and arrays[name].dtype != np.float32:
            raise UserError(f"{path}: {name} must be float32, got {arrays[name].dtype}")
    if arrays["contacts"].dtype != bool:
        raise UserError(f"{path}: contacts must be bool, got {arrays['contacts'].dtype}")
    if meta["num_frames"] != arrays["root_pos"].shape[0]:
        raise UserError(f"{path}: metadata says {meta['num_frames']} frames, root_pos has {arrays['root_pos'].shape[0]}")
    try:
        prop_joints = tuple((str(name), int(size)) for name, size in meta["prop_joints"])
    except (TypeError, ValueError) as error:
        raise UserError(f"{path}: prop_joints must be [name, qpos size] pairs ({error})") from None
    try:
        return Clip(
            skill=meta["skill"], fps=float(meta["fps"]),
            **{name: arrays[name] for name in (*_FLOAT_ARRAYS, "contacts")},
            keypoint_names=tuple(meta["keypoint_names"]), human_names=tuple(meta["human_names"]),
            source=meta["source"], source_file=meta["source_file"], licence=meta["licence"],
            attribution=meta["attribution"], robot_hash=meta["robot_hash"],
            quality=meta["quality"], info=meta["info"], object_pose=arrays.get("object_pose"),
            prop_joints=prop_joints, prop_qpos=arrays.get("prop_qpos"),
        )
    except UserError as error:
        raise UserError(f"{path}: {error}") from None


def _default_model() -> "mujoco.MjModel":
    from metaworld_x.robot import robot_spec

    return robot_spec("h1").compile()


def _validate(clip: Clip, where: str) -> None:
    count = clip.root_pos.shape[0] if clip.root_pos.ndim == 2 else -1
    k, h = len(clip.keypoint_names), len(clip.human_names)
    shapes = {
        "root_pos": (count, 3), "root_quat": (count, 4), "joint_pos": (count, len(JOINT_NAMES)),
        "joint_vel": (count, len(JOINT_NAMES)), "root_lin_vel": (count, 3), "root_ang_vel": (count, 3),
        "keypoint_pos": (count, k, 3), "target_pos": (count, k, 3), "human_pos": (count, h, 3),
        "contacts": (count, 2),
    }
    if clip.object_pose is not None:
        shapes["object_pose"] = (count, 7)
    _validate_props(clip, where)
    if clip.prop_qpos is not None:
        shapes["prop_qpos"] = (count, sum(size for _, size in clip.prop_joints))
    if count < 2:
        raise UserError(f"{where}: needs at least 2 frames, root_pos has shape {clip.root_pos.shape}")
    for name, shape in shapes.items():
        array = getattr(clip, name)
        if not isinstance(array, np.ndarray) or array.shape != shape:
            raise UserError(f"{where}: {name} must have shape {shape}, got {getattr(array, 'shape', type(array))}")
        if name == "contacts":
            if array.dtype != bool:
                raise UserError(f"{where}: contacts must be bool, got {array.dtype}")
        elif not np.issubdtype(array.dtype, np.floating):
            raise UserError(f"{where}: {name} must be floating point, got {array.dtype}")
        elif not np.isfinite(array).all():
            frame = int(np.argwhere(~np.isfinite(array))[0][0])
            raise UserError(f"{where}: {name} is not finite (first at frame {frame})")
    norms = np.linalg.norm(clip.root_quat, axis=-1)
    if np.any(np.abs(norms - 1.0) > 1e-3):
        raise UserError(f"{where}: root_quat is not unit length (frame {int(np.argmax(np.abs(norms - 1)))})")
    if not (np.isfinite(clip.fps) and clip.fps > 0):
        raise UserError(f"{where}: fps must be positive, got {clip.fps}")
    if clip.source not in SOURCE_KINDS:
        raise UserError(f"{where}: source must be one of {SOURCE_KINDS}, got {clip.source!r}")
    start = 0
    for name, size in clip.prop_joints:
        if size == 7:
            norms = np.linalg.norm(clip.prop_qpos[:, start + 3 : start + 7], axis=-1)
            if np.any(np.abs(norms - 1.0) > 1e-3):
                raise UserError(f"{where}: prop {name!r}'s quaternion is not unit length (frame {int(np.argmax(np.abs(norms - 1)))})")
        start += size


def _validate_props(clip: Clip, where: str) -> None:
    """prop_joints and prop_qpos come together, name distinct joints, and give sizes a scene joint can have."""
    if (clip.prop_qpos is None) != (not clip.prop_joints):
        raise UserError(f"{where}: prop_qpos and prop_joints come together; got only one of them")
    names = [name for name, _ in clip.prop_joints]
    if len(set(names)) != len(names):
        raise UserError(f"{where}: prop_joints names a joint twice: {names}")
    odd = [(name, size) for name, size in clip.prop_joints if size not in PROP_JOINT_SIZES]
    if odd:
        raise UserError(f"{where}: prop joint qpos sizes must be in {PROP_JOINT_SIZES} (free, hinge or slide); got {odd}")
