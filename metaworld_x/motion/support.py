"""What a clip's poses stand on: the lowest point of the body and the centre of mass over the support.

A retargeted clip can meet every goal in `quality` and still ask for a pose
no body can hold. crawl_get_down's check ("the lowest point stays within 2 cm
of the floor") saw its planted left foot and missed 0.4 s in which the centre
of mass was 11 to 40 cm past the toes with the hands still in the air: a dive
that no policy learned to follow Two figures
per frame say what a pose stands on:

- `height` (m): the lowest point of the robot's collision geoms. Above the
  floor the pose is airborne; a run's flight phase is, a crawl's should not be.
- `margin` (m): the signed horizontal distance of the centre of mass from the
  edge of the support polygon (the convex hull of the geom points within
  `SupportConfig.tolerance` of the lowest one): positive inside, negative
  outside. A pose held still must keep it positive. Walking leaves it for a
  fraction of each step, caught by the next foot; a get-down should not leave
  it for long, nor far.

Only the robot's own geometry is used (capsules, spheres and boxes, exactly),
so the figures need no scene and no floor.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial import ConvexHull, QhullError

from metaworld_x.errors import UserError
from metaworld_x.robot.parts import robot_geoms

_BOX_CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


@dataclass(frozen=True)
class SupportConfig:
    """How the support is read from a pose."""

    tolerance: float = 0.02
    """Geom points within this height (m) of the lowest one bear weight."""
    airborne: float = 0.03
    """A pose whose lowest point is this high (m) above the floor (z = 0) is airborne."""


@dataclass(frozen=True)
class SupportTrace:
    """Per-frame support figures of a clip (see the module docstring)."""

    height: np.ndarray
    """[T] lowest point of the robot (m)."""
    margin: np.ndarray
    """[T] centre of mass inside (+) or outside (-) the support polygon's edge (m)."""
    fps: float

    def longest(self, frames: np.ndarray) -> float:
        """Seconds of the longest run of consecutive True `frames`."""
        longest = run = 0
        for flag in frames:
            run = run + 1 if flag else 0
            longest = max(longest, run)
        return longest / self.fps

    def summary(self, config: SupportConfig = SupportConfig(), outside: float = 0.05) -> dict[str, float]:
        """Airborne share and longest stretch, deepest margin, longest stretch more than `outside` m past the support."""
        airborne = self.height > config.airborne
        beyond = self.margin < -outside
        return {
            "airborne_share": float(airborne.mean()), "airborne_longest_s": self.longest(airborne),
            "margin_min_m": float(self.margin.min()), "outside_longest_s": self.longest(beyond),
        }


def lowest_points(model: mujoco.MjModel, data: mujoco.MjData, geoms: list[int]) -> np.ndarray:
    """[N, 3] the points of `geoms` any of which can be a geom's lowest: a capsule's end caps' bottoms, a sphere's
    bottom, a box's corners (after `mj_kinematics`)."""
    points = []
    for geom in geoms:
        centre, axes, size = data.geom_xpos[geom], data.geom_xmat[geom].reshape(3, 3), model.geom_size[geom]
        kind = model.geom_type[geom]
        if kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
            points += [centre + end * size[1] * axes[:, 2] - [0.0, 0.0, size[0]] for end in (-1.0, 1.0)]
        elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
            points.append(centre - [0.0, 0.0, size[0]])
        elif kind == mujoco.mjtGeom.mjGEOM_BOX:
            points += list(centre + (_BOX_CORNERS * size) @ axes.T)
        else:
            raise UserError(f"geom {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, geom)!r} is a "
                            f"{mujoco.mjtGeom(kind).name}; the support check handles capsules, spheres and boxes")
    return np.array(points)


def polygon_margin(support: np.ndarray, point: np.ndarray) -> float:
    """Signed distance (m) of `point` [2] from the edge of the convex hull of `support` [N, 2]: + inside.
    A hull with no area (one point, or points on a line) has no inside: the distance to it, negated."""
    try:
        hull = ConvexHull(support)
    except (QhullError, ValueError):  # fewer than 3 points, or all on a line
        return -_distance_to_segment(support, point)
    signed = hull.equations[:, :2] @ point + hull.equations[:, 2]  # each edge's outward distance
    if np.all(signed <= 0.0):
        return float(-signed.max())
    corners = support[hull.vertices]
    return -min(_distance_to_segment(corners[[i, (i + 1) % len(corners)]], point) for i in range(len(corners)))


def _distance_to_segment(points: np.ndarray, point: np.ndarray) -> float:
    """Distance from `point` to the segment between the two points of `points` farthest apart (one point: to it)."""
    gaps = np.linalg.norm(points[:, None] - points[None], axis=-1)
    i, j = np.unravel_index(np.argmax(gaps), gaps.shape)
    start, along = points[i], points[j] - points[i]
    length = float(along @ along)
    fraction = 0.0 if length == 0.0 else float(np.clip((point - start) @ along / length, 0.0, 1.0))
    return float(np.linalg.norm(point - (start + fraction * along)))


def support_trace(model: mujoco.MjModel, qpos: np.ndarray, fps: float, config: SupportConfig = SupportConfig()) -> SupportTrace:
    """The support figures of the robot poses `qpos` [T, nq] (its first nq columns; props' are ignored)."""
    data = mujoco.MjData(model)
    geoms = [int(g) for g in robot_geoms(model) if model.geom_contype[g] or model.geom_conaffinity[g]]
    root = model.body("pelvis").id
    height, margin = np.empty(len(qpos)), np.empty(len(qpos))
    for t, pose in enumerate(qpos):
        data.qpos[:] = pose[: model.nq]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        points = lowest_points(model, data, geoms)
        height[t] = points[:, 2].min()
        bearing = points[points[:, 2] < height[t] + config.tolerance, :2]
        margin[t] = polygon_margin(bearing, data.subtree_com[root, :2])
    return SupportTrace(height=height, margin=margin, fps=fps)
