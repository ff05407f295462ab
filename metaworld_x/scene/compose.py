"""Compose a scene: robot + floor + props, as one `mujoco.MjSpec`.

A scene is a named list of prop placements. `build_scene("chair")` gives the
robot in front of a chair; `build_scene(("box", "table"))` composes props
ad hoc at their default places; `build_scene((Placement("table", pos,
(("height", 0.5),)), ...))` lays props out exactly (a task that derives its
layout from a reference clip does this). The robot stands at the origin
facing +x.
"""

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.robot import HOME_JOINT_POSE, HOME_ROOT_HEIGHT, JOINT_NAMES, robot_spec
from metaworld_x.scene.props import PROPS, PUSH_TABLE_HEIGHT, default_box_height


@dataclass(frozen=True)
class Placement:
    """One prop at a position in the world frame (metres)."""

    prop: str
    pos: tuple[float, float, float]
    options: tuple[tuple[str, Any], ...] = ()
    """(keyword, value) pairs for the prop's add function, e.g. (("height", 0.5),) for a table."""


# The push scene: a table whose near edge is 0.45 m ahead of the robot, the box on it with its back face 0.47 m
# ahead (the paddles' tips reach 0.39 m in the home pose), the marker 0.2 m further on, on the table top.
PUSH_TABLE = (0.85, 0.0, 0.0)
PUSH_BOX = (0.62, 0.0, default_box_height("push_table"))
PUSH_MARKER = (PUSH_BOX[0] + 0.2, 0.0, PUSH_TABLE_HEIGHT + 0.002)

# The fetch scene: the pickup_carry clip's box on a low stand 0.54 m ahead, where its balanced hands pick it up, and
# its table 2.27 m ahead (clip turned to face +x).
FETCH_STAND = (0.537, 0.147, 0.0)
FETCH_STAND_HEIGHT = 0.106
FETCH_BOX = (FETCH_STAND[0], FETCH_STAND[1], FETCH_STAND_HEIGHT + default_box_height(None))
FETCH_TABLE = (2.283, -0.121, 0.0)
FETCH_TABLE_HEIGHT = 0.635
FETCH_TOP = (0.2, 0.23)  # the stand's and the table's half top: the box's footprint and 5 cm

# Default places, used when a prop is asked for by name alone.
DEFAULT_PLACES: dict[str, tuple[float, float, float]] = {
    "box": (0.8, 0.0, default_box_height(None)),
    "table": (3.0, 0.0, 0.0),
    "stand": (1.0, 0.0, 0.0),
    "chair": (-0.3, 0.0, 0.0),
    "door": (1.5, 0.0, 0.0),
    "marker": (2.0, 0.0, 0.0),
    "tunnel": (1.0, 0.0, 0.0),
    "target": (0.52, -0.24, 1.28),  # where the reach clip holds its right hand (the reach task draws around it)
}

SCENES: dict[str, tuple[Placement, ...]] = {
    "floor": (),
    "chair": (Placement("chair", DEFAULT_PLACES["chair"]),),
    "tunnel": (Placement("tunnel", DEFAULT_PLACES["tunnel"]),),
    "reach": (Placement("target", DEFAULT_PLACES["target"]),),
    "door": (Placement("door", DEFAULT_PLACES["door"]),),
    # The box is pushed 0.2 m along a table top onto the marker (the push clip's keys).
    "push": (
        Placement("table", PUSH_TABLE, (("height", PUSH_TABLE_HEIGHT), ("half_top", (0.4, 0.5)))),
        Placement("box", PUSH_BOX),
        Placement("marker", PUSH_MARKER),
    ),
    "carry": (
        Placement("stand", DEFAULT_PLACES["stand"]),
        Placement("box", (1.0, 0.0, default_box_height("stand"))),
        Placement("table", DEFAULT_PLACES["table"]),
    ),
    # Fetch: laid out as the carry expert's clip (pickup_carry) has it, so its clip plays in place: the box on the
    # floor where the clip's hands find it, the table where they set it down, its top under the box there
    # (`Carry.scene_along` of that clip; a test keeps the two within a centimetre).
    "fetch": (
        Placement("box", FETCH_BOX),
        Placement("table", FETCH_TABLE, (("height", FETCH_TABLE_HEIGHT), ("half_top", FETCH_TOP))),
        Placement("stand", FETCH_STAND, (("height", FETCH_STAND_HEIGHT), ("half_top", FETCH_TOP))),
    ),
}


def build_scene(
    scene: str | Sequence[str] | Sequence[Placement] = "floor",
    variant: str = "h1",
    robot_path: str | Path | None = None,
) -> mujoco.MjSpec:
    """The robot in a scene, with a `home` keyframe.

    Args:
      scene: a name from `SCENES`, a sequence of prop names placed at
        their default places, or a sequence of `Placement`s.
      variant: the robot variant ("h1" or "h1_hands").
      robot_path: optional user H1 MJCF (see `robot_spec`).
    """
    placements = _placements(scene)
    spec = robot_spec(variant, robot_path)
    name = scene if isinstance(scene, str) else "_".join(p.prop for p in placements)
    spec.modelname = f"metaworld_x_{variant}_{name}"
    _add_environment(spec)
    for placement in placements:
        PROPS[placement.prop](spec, placement.pos, **dict(placement.options))
    _add_home_keyframe(spec)
    return spec


def build_model(
    scene: str | Sequence[str] | Sequence[Placement] = "floor",
    variant: str = "h1",
    robot_path: str | Path | None = None,
) -> mujoco.MjModel:
    """`build_scene(...)` compiled."""
    return build_scene(scene, variant, robot_path).compile()


def _placements(scene: str | Sequence[str] | Sequence[Placement]) -> tuple[Placement, ...]:
    if isinstance(scene, str):
        if scene not in SCENES:
            raise UserError(f"unknown scene {scene!r}; available scenes: {', '.join(SCENES)}")
        return SCENES[scene]
    props = [p.prop if isinstance(p, Placement) else p for p in scene]
    unknown = [p for p in props if p not in PROPS]
    if unknown:
        raise UserError(f"unknown prop(s) {', '.join(map(repr, unknown))}; available props: {', '.join(PROPS)}")
    if len(set(props)) != len(props):
        raise UserError(f"each prop can appear once in a scene; got {props}")
    placements = tuple(p if isinstance(p, Placement) else Placement(p, DEFAULT_PLACES[p]) for p in scene)
    for p in placements:
        try:
            inspect.signature(PROPS[p.prop]).bind(None, p.pos, **dict(p.options))
        except TypeError as error:
            raise UserError(f"prop {p.prop!r} cannot take the options {dict(p.options)}: {error}") from None
    return placements


def _add_environment(spec: mujoco.MjSpec) -> None:
    """Floor, sky, lights and a camera that follows the robot."""
    spec.add_texture(
        name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=(0.35, 0.55, 0.75), rgb2=(0.05, 0.07, 0.1), width=256, height=1536,
    )
    spec.add_texture(
        name="grid", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        mark=mujoco.mjtMark.mjMARK_EDGE, rgb1=(0.2, 0.3, 0.4), rgb2=(0.1, 0.2, 0.3),
        markrgb=(0.8, 0.8, 0.8), width=300, height=300,
    )
    floor_material = spec.add_material(name="floor", texrepeat=(5, 5), texuniform=True, reflectance=0.15)
    floor_material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "grid"
    spec.worldbody.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=(0, 0, 0.05), material="floor",
        contype=1, conaffinity=1, condim=3,
    )
    spec.worldbody.add_light(name="sun", pos=(0, 0, 4), dir=(0, 0, -1), type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    spec.visual.headlight.diffuse = (0.6, 0.6, 0.6)
    spec.visual.headlight.ambient = (0.3, 0.3, 0.3)
    spec.visual.global_.offwidth = 1280
    spec.visual.global_.offheight = 720
    eye, target = np.array([2.4, -2.4, 0.9]), np.array([0.0, 0.0, 0.0])
    spec.body("pelvis").add_camera(
        name="track", mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM, pos=eye, xyaxes=_look_at(eye, target), fovy=45,
    )


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Camera x and y axes (6 numbers) for a camera at eye looking at target."""
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, (0.0, 0.0, 1.0))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return np.concatenate([right, up])


def _add_home_keyframe(spec: mujoco.MjSpec) -> None:
    model = spec.compile()
    qpos = model.qpos0.copy()
    root = model.joint("root").qposadr[0] if _has_joint(model, "root") else 0
    qpos[root : root + 3] = (0.0, 0.0, HOME_ROOT_HEIGHT)
    qpos[root + 3 : root + 7] = (1.0, 0.0, 0.0, 0.0)
    ctrl = np.zeros(model.nu)
    for i, name in enumerate(JOINT_NAMES):
        value = HOME_JOINT_POSE.get(name, 0.0)
        qpos[model.joint(name).qposadr[0]] = value
        ctrl[i] = value
    spec.add_key(name="home", qpos=qpos, ctrl=ctrl)


def _has_joint(model: mujoco.MjModel, name: str) -> bool:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) >= 0
