"""Foot contact: where the robot's geoms touch the floor, which foot stands, and pinning it there.

Contact is read off the robot's pose after a first IK pass: a foot stands
while its sole is near the floor and its sole centre barely moves. During a
stance the foot's IK target is pinned to one place, flat on the floor, and
the IK holds the sole there exactly (`ik.SolePinTask`), which is what removes
foot skating; the pin is blended in and out over a few frames so the leg does
not jump at touch-down or lift-off.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.ndimage import binary_closing, binary_opening

from metaworld_x.errors import UserError
from metaworld_x.motion.scaling import SIDES



# A stance foot pitched more than this (rad) stands on its toes or heel.
_TIPTOE_PITCH = 0.35


@dataclass(frozen=True)
class ContactConfig:
    """Thresholds of the stance detector."""

    height: float = 0.05
    """A foot can stand while its lowest point is below this height (m)."""
    speed: float = 0.6
    """... and its sole centre moves slower than this horizontally (m/s)."""
    min_frames: int = 3
    """Stances and swings shorter than this many frames are noise and removed."""
    blend_frames: int = 3
    """Frames over which a pinned foot target blends in and out."""
    hover_height: float | None = None
    """A foot held still (slower than `hover_speed`) for `hover_frames` or more stands even this high (m): mocap
    whose foot floats above the floor it stands on. OMOMO's sub3_largebox_003 holds the left foot 6-8 cm up through
    the whole carry walk: without this it is never pinned, and the clip hops on the right foot. None: off."""
    hover_speed: float = 0.15
    """... slower than this horizontally (m/s): a planted foot, not a slow swing."""
    hover_frames: int = 10
    """... for at least this many frames."""

    def __post_init__(self) -> None:
        if self.hover_height is not None and not self.height <= self.hover_height < 0.2:
            raise UserError(f"hover_height must lie in [height = {self.height}, 0.2) m, got {self.hover_height}")
        if self.min_frames < 1 or self.hover_frames < 1 or self.hover_speed <= 0:
            raise UserError("min_frames and hover_frames must be at least 1 and hover_speed positive")


def geom_lowest_z(model: mujoco.MjModel, geoms: np.ndarray, xpos: np.ndarray, xmat: np.ndarray) -> np.ndarray:
    """[T, G] lowest world z of each geom (spheres, capsules, cylinders, boxes exactly; others by bounding sphere).

    Args:
      geoms: [G] geom ids.
      xpos: [T, G, 3] geom centres (data.geom_xpos); xmat: [T, G, 9] orientations (data.geom_xmat).
    """
    kind, size = model.geom_type[geoms], model.geom_size[geoms]
    z_row = xmat[..., 6:9]  # how each local axis projects on world z
    lowest = xpos[..., 2] - model.geom_rbound[geoms]
    sphere = kind == mujoco.mjtGeom.mjGEOM_SPHERE
    capsule = kind == mujoco.mjtGeom.mjGEOM_CAPSULE
    cylinder = kind == mujoco.mjtGeom.mjGEOM_CYLINDER
    box = kind == mujoco.mjtGeom.mjGEOM_BOX
    lowest[:, sphere] = xpos[:, sphere, 2] - size[sphere, 0]
    lowest[:, capsule] = xpos[:, capsule, 2] - np.abs(z_row[:, capsule, 2]) * size[capsule, 1] - size[capsule, 0]
    lowest[:, cylinder] = (
        xpos[:, cylinder, 2] - np.abs(z_row[:, cylinder, 2]) * size[cylinder, 1]
        - np.hypot(z_row[:, cylinder, 0], z_row[:, cylinder, 1]) * size[cylinder, 0]
    )
    lowest[:, box] = xpos[:, box, 2] - np.sum(np.abs(z_row[:, box]) * size[box], axis=-1)
    return lowest


def detect_contacts(sole_height: np.ndarray, sole_position: np.ndarray, fps: float, config: ContactConfig) -> np.ndarray:
    """[T, 2] bool stance flags (left, right).

    Args:
      sole_height: [T, 2] lowest point of each foot above the floor (m).
      sole_position: [T, 2, 3] sole centre of each foot (m).
      fps: frames per second.
    """
    speed = np.linalg.norm(np.gradient(sole_position[..., :2], axis=0), axis=-1) * fps
    flags = _cleaned((sole_height < config.height) & (speed < config.speed), config.min_frames)
    if config.hover_height is not None:
        still = (sole_height < config.hover_height) & (speed < config.hover_speed)
        flags |= _opened(still, config.hover_frames)
    return flags


def _padded_per_foot(flags: np.ndarray, pad: int, operation) -> np.ndarray:
    """`operation` on each foot's [T] flags, padded with the end values so that a stance at either end survives."""
    result = np.zeros_like(flags)
    for foot in range(flags.shape[1]):
        padded = np.concatenate([np.repeat(flags[:1, foot], pad), flags[:, foot], np.repeat(flags[-1:, foot], pad)])
        result[:, foot] = operation(padded)[pad:-pad]
    return result


def _cleaned(flags: np.ndarray, frames: int) -> np.ndarray:
    """[T, 2] flags with stances and swings shorter than `frames` removed."""
    structure = np.ones(frames, dtype=bool)
    return _padded_per_foot(flags, frames, lambda f: binary_opening(binary_closing(f, structure), structure))


def _opened(flags: np.ndarray, frames: int) -> np.ndarray:
    """[T, 2] flags keeping only runs of at least `frames`."""
    structure = np.ones(frames, dtype=bool)
    return _padded_per_foot(flags, frames, lambda f: binary_opening(f, structure))


def phases(flags: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop)) runs of True in a [T] bool array."""
    edges = np.diff(np.concatenate([[0], flags.astype(int), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def level(rotation: np.ndarray) -> np.ndarray:
    """[3, 3] `rotation` without its roll: same heading and pitch of the x axis, y axis horizontal.

    The H1's ankle only pitches, so a foot's roll is its leg's; pinning it
    would fix the stance width.
    """
    forward = rotation[:, 0]
    yaw = np.arctan2(forward[1], forward[0])
    pitch = np.arctan2(-forward[2], np.hypot(forward[0], forward[1]))
    if abs(pitch) < _TIPTOE_PITCH:
        pitch = 0.0  # a nearly flat foot is put flat on the floor
    cy, sy, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
    yaw_matrix = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    pitch_matrix = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    return yaw_matrix @ pitch_matrix


def pin_feet(
    ankle: dict[str, np.ndarray],
    foot_rot: dict[str, np.ndarray],
    contacts: np.ndarray,
    sole: np.ndarray,
    config: ContactConfig,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """Ankle targets with each stance pinned: one place, flat, sole on the floor.

    Args:
      ankle: {side: [T, 3]} ankle positions of the first pass.
      foot_rot: {side: [T, 3, 3]} ankle orientations of the first pass.
      contacts: [T, 2] stance flags.
      sole: [3] sole centre in the ankle frame.

    Returns ({side: [T, 3]} positions, {side: [T, 3, 3]} orientations, [T, 2] pin weights in [0, 1]).
    """
    count = contacts.shape[0]
    new_ankle, new_rot = {}, {}
    weights = np.zeros(contacts.shape)
    for foot, side in enumerate(SIDES):
        pinned_pos = ankle[side].copy()
        pinned_rot = foot_rot[side].copy()
        weight = np.zeros(count)
        for start, stop in phases(contacts[:, foot]):
            sole_world = ankle[side][start:stop] + np.einsum("tij,j->ti", foot_rot[side][start:stop], sole)
            flat = level(_mean_rotation(foot_rot[side][start:stop]))
            centre = np.median(sole_world, axis=0)
            # A flat foot's sole goes on the floor; a foot standing on its
            # toes (crawling) keeps its height, the root lift settles it.
            centre[2] = max(0.0, centre[2]) if abs(np.arcsin(np.clip(flat[2, 0], -1, 1))) > _TIPTOE_PITCH else 0.0
            pin = centre - flat @ sole
            lo, hi = max(0, start - config.blend_frames), min(count, stop + config.blend_frames)
            for t in range(lo, hi):
                distance = start - t if t < start else max(0, t - stop + 1)
                w = 1.0 - distance / (config.blend_frames + 1)
                if w > weight[t]:
                    weight[t] = w
                    pinned_pos[t] = pin
                    pinned_rot[t] = flat
        w = weight[:, None]
        new_ankle[side] = w * pinned_pos + (1.0 - w) * ankle[side]
        new_rot[side] = _orthonormal(w[:, :, None] * pinned_rot + (1.0 - w[:, :, None]) * foot_rot[side])
        weights[:, foot] = weight
    return new_ankle, new_rot, weights


def _mean_rotation(rotations: np.ndarray) -> np.ndarray:
    return _orthonormal(rotations.mean(axis=0, keepdims=True))[0]


def _orthonormal(matrices: np.ndarray) -> np.ndarray:
    """[N, 3, 3] nearest rotations (polar decomposition)."""
    u, _, vt = np.linalg.svd(matrices)
    fix = np.ones(matrices.shape[:-2] + (3,))
    fix[..., 2] = np.sign(np.linalg.det(u @ vt))
    return (u * fix[..., None, :]) @ vt
