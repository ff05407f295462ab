"""AMASS-style joint-position clips in .npz (as the shared OMOMO clips ship).

Arrays read:
- `joints` [T, J, 3] (or `positions`): world joint positions in metres;
- `joint_names` [J]: one name per joint;
- `fps` (or `mocap_framerate`): frames per second;
- `object_pose` [T, 7], optional: object quaternion (w, x, y, z) then position.

The data is z-up by default, as OMOMO (and AMASS's own world frame) is;
`up_axis='y'` turns a y-up clip facing +z (SMPL's canonical frame) z-up with
the same rotation as BVH files. Units are metres unless `scale` says
otherwise; a clip whose body is not human-sized in metres is refused rather
than rescaled by guesswork. The format has no kinematic tree, so every parent
is -1, and no joint orientations.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.motion.human import HumanMotion, rotate_frame, z_up_rotation
from metaworld_x.motion.npz_file import read_npz

UP_AXES = {"z": np.eye(3), "y": z_up_rotation("y", "z")}
_POSITION_KEYS = ("joints", "positions")
_FPS_KEYS = ("fps", "mocap_framerate")
# Per-frame extent of a human's joints in metres, median over the clip: a
# toddler curled up to an adult with arms raised. Outside it, the units are
# not metres.
_HUMAN_EXTENT_M = (0.3, 3.0)


def load_amass(
    path: str | Path, *, up_axis: str = "z", scale: float = 1.0, fps: float | None = None
) -> HumanMotion:
    """Load an .npz of joint positions as a HumanMotion in metres, z-up.

    Args:
      path: the .npz file.
      up_axis: 'z' (default; OMOMO and AMASS) or 'y', the file's up axis.
      scale: metres per file unit.
      fps: frame rate; overrides the file's, needed when the file has none.
    """
    path = Path(path)
    if up_axis not in UP_AXES:
        raise UserError(f"{path}: up_axis must be one of {sorted(UP_AXES)}, got {up_axis!r}")
    arrays = read_npz(path, "cannot read the .npz file")
    positions = _first_present(path, arrays, _POSITION_KEYS).astype(np.float64) * scale
    if positions.ndim != 3 or positions.shape[-1] != 3:
        raise UserError(f"{path}: joint positions must be [T, J, 3], got shape {positions.shape}")
    if "joint_names" not in arrays:
        raise UserError(f"{path}: no 'joint_names' array; the keypoint maps need one name per joint")
    names = tuple(str(name) for name in arrays["joint_names"].reshape(-1))
    _check_human_size(path, positions)
    fps, fps_source = _resolve_fps(path, arrays, fps)

    object_pose = None
    if "object_pose" in arrays:
        object_pose = np.array(arrays["object_pose"], dtype=np.float64)
        if object_pose.shape != (positions.shape[0], 7):
            raise UserError(
                f"{path}: object_pose must be [T={positions.shape[0]}, 7] (w, x, y, z, px, py, pz), "
                f"got {object_pose.shape}"
            )
        object_position, object_quat = rotate_frame(
            UP_AXES[up_axis], object_pose[:, 4:] * scale, object_pose[:, :4]
        )
        object_pose = np.concatenate([object_quat, object_position], axis=-1)
    positions, _ = rotate_frame(UP_AXES[up_axis], positions)
    return HumanMotion(
        joint_names=names,
        parents=(-1,) * len(names),
        positions=positions,
        fps=fps,
        source=str(path),
        object_pose=object_pose,
        metadata={
            "format": "amass_npz",
            "units": "m" if scale == 1.0 else "custom",
            "scale": scale,
            "up_axis": up_axis,
            "fps_source": fps_source,
        },
    )


def _first_present(path: Path, arrays: dict[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    for key in keys:
        if key in arrays:
            return arrays[key]
    raise UserError(f"{path}: needs one of the arrays {list(keys)}; it has {sorted(arrays)}")


def _resolve_fps(path: Path, arrays: dict[str, np.ndarray], fps: float | None) -> tuple[float, str]:
    if fps is not None:
        return float(fps), "given"
    for key in _FPS_KEYS:
        if key in arrays:
            return float(arrays[key]), key
    raise UserError(f"{path}: no frame rate in the file (arrays {list(_FPS_KEYS)}); pass fps=")


def _check_human_size(path: Path, positions: np.ndarray) -> None:
    if not np.isfinite(positions).all():
        return  # HumanMotion names the first non-finite frame and joint.
    extent = float(np.median(np.ptp(positions, axis=1).max(axis=-1)))
    low, high = _HUMAN_EXTENT_M
    if not low <= extent <= high:
        raise UserError(
            f"{path}: the joints span {extent:.3g} m per frame, not a human's {low}-{high} m; "
            "if the file is not in metres pass scale= (metres per unit)"
        )
