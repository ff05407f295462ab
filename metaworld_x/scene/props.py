"""Props for the loco-manipulation tasks, each added to a spec's world body.

Every prop is a function `add_<prop>(spec, pos, **sizes)` that adds named
bodies, joints and sites; tasks find them again by those names. Sizes are
chosen for the H1: the box fits between its paddle hands, the tunnel roof forces a crouch,
and the chair seat is as high as the sit clip's seated thighs (pelvis 0.75 m,
near the 0.68-0.72 m HumanoidBench rewards), so starting an episode seated
does not put the robot inside the chair.
"""

import math

import mujoco


BOX = mujoco.mjtGeom.mjGEOM_BOX
CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE

WOOD = (0.55, 0.4, 0.25, 1.0)
GREY = (0.6, 0.62, 0.65, 1.0)
RED = (0.85, 0.15, 0.12, 1.0)

# Half extents (m); y lies across the paddles when the box is held. At 0.18 both paddles touch it
# where the carry clip's hands hold it (at 0.17 the left one missed by 1-2 cm; `reference.held_object`).
BOX_HALF_SIZE = (0.15, 0.18, 0.15)
BOX_MASS = 1.5
# The fetch scene fits the carry clip its expert follows: the stand holds the box (centre 0.96 m) where
# the clip's hands first hold it, and the table top is where the clip sets it down (centre 0.68 m).
# With a 0.6 m stand and a 0.75 m table the clip's hands started 21 cm above the box.
TABLE_HEIGHT = 0.53
TABLE_HALF_TOP = (0.4, 0.5)
# The push scene's table, as HumanoidBench's h1hand-push has it: the box on a table in front of the robot, its
# centre about 1 m high, where the hands reach it standing; the whole push happens on the table top.
PUSH_TABLE_HEIGHT = 0.85
STAND_HEIGHT = 0.81
CHAIR_SEAT_HEIGHT = 0.46
DOOR_WIDTH = 1.0
DOOR_HEIGHT = 2.0
TUNNEL_ROOF_HEIGHT = 1.1
TUNNEL_LENGTH = 4.0
TUNNEL_WIDTH = 2.0


def _static_box(body, name, half_size, pos, rgba=GREY):
    body.add_geom(name=name, type=BOX, size=half_size, pos=pos, rgba=rgba, contype=1, conaffinity=1)


def add_box(spec: mujoco.MjSpec, pos) -> None:
    """A free box (package) to carry or push; body and joint named `box`."""
    body = spec.worldbody.add_body(name="box", pos=pos)
    body.add_freejoint(name="box")
    body.add_geom(
        name="box", type=BOX, size=BOX_HALF_SIZE, mass=BOX_MASS, rgba=WOOD,
        friction=(1.0, 0.01, 0.001), contype=1, conaffinity=1, condim=4,
    )
    body.add_site(name="box", size=(0.02, 0.02, 0.02))


def _add_table_like(spec, name, pos, height, half_top=TABLE_HALF_TOP):
    body = spec.worldbody.add_body(name=name, pos=pos)
    top = 0.03
    _static_box(body, f"{name}_top", (half_top[0], half_top[1], top / 2), (0, 0, height - top / 2), WOOD)
    for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        leg_pos = (sx * (half_top[0] - 0.04), sy * (half_top[1] - 0.04), (height - top) / 2)
        _static_box(body, f"{name}_leg{i}", (0.03, 0.03, (height - top) / 2), leg_pos)
    body.add_site(name=name, pos=(0, 0, height), size=(0.02, 0.02, 0.02))


def add_table(spec: mujoco.MjSpec, pos, height: float = TABLE_HEIGHT, half_top=TABLE_HALF_TOP) -> None:
    """A table to put the box on; site `table` marks the top's centre.

    A scene may set the top's `height` (m) and `half_top` (half length along
    x, half width along y): the carry expert's table is as high and as small
    as its clip asks (`Carry.scene_along`).
    """
    _add_table_like(spec, "table", pos, height, half_top)


def add_stand(spec: mujoco.MjSpec, pos, height: float = STAND_HEIGHT, half_top=(0.25, 0.3)) -> None:
    """A stand the box starts on, at a height the H1's arms reach; a scene may set its `height` and `half_top`
    (the carry expert's stand holds the box where its clip's hands pick it up: `Carry.scene_along`)."""
    _add_table_like(spec, "stand", pos, height, half_top)


def add_chair(spec: mujoco.MjSpec, pos, facing: float = 0.0) -> None:
    """A chair facing +x, or turned by `facing` (rad) about z (pi: it faces -x, towards a robot that walks up to
    it along +x); site `chair_seat` marks the seat's centre."""
    body = spec.worldbody.add_body(name="chair", pos=pos, quat=(math.cos(facing / 2), 0.0, 0.0, math.sin(facing / 2)))
    seat = 0.04
    _static_box(body, "chair_seat", (0.22, 0.25, seat / 2), (0, 0, CHAIR_SEAT_HEIGHT - seat / 2), WOOD)
    _static_box(body, "chair_base", (0.2, 0.23, (CHAIR_SEAT_HEIGHT - seat) / 2), (0, 0, (CHAIR_SEAT_HEIGHT - seat) / 2))
    _static_box(body, "chair_back", (0.02, 0.25, 0.3), (-0.22, 0, CHAIR_SEAT_HEIGHT + 0.3), WOOD)
    body.add_site(name="chair_seat", pos=(0, 0, CHAIR_SEAT_HEIGHT), size=(0.02, 0.02, 0.02))


def add_door(spec: mujoco.MjSpec, pos) -> None:
    """A frame across the x axis with a door that swings open away from -x.

    The hinge (`door_hinge`) is on the +y post; pushing the panel along +x
    opens it. Site `door_through` marks a point past the doorway.
    """
    frame = spec.worldbody.add_body(name="door_frame", pos=pos)
    post = 0.05
    half_w = DOOR_WIDTH / 2
    for side, y in (("left", half_w + post), ("right", -half_w - post)):
        _static_box(frame, f"door_post_{side}", (post, post, DOOR_HEIGHT / 2), (0, y, DOOR_HEIGHT / 2))
    _static_box(frame, "door_lintel", (post, half_w + 2 * post, post), (0, 0, DOOR_HEIGHT + post))
    frame.add_site(name="door_through", pos=(1.2, 0, 0), size=(0.02, 0.02, 0.02))
    panel = frame.add_body(name="door", pos=(0, half_w, 0))
    panel.add_joint(
        name="door_hinge", type=mujoco.mjtJoint.mjJNT_HINGE, axis=(0, 0, 1),
        range=(0.0, 1.9), damping=2.0, frictionloss=0.5,
    )
    panel.add_geom(
        name="door", type=BOX, size=(0.02, half_w - 0.01, DOOR_HEIGHT / 2 - 0.01),
        pos=(0, -half_w, DOOR_HEIGHT / 2), mass=10.0, rgba=WOOD, contype=1, conaffinity=1,
    )
    panel.add_site(name="door_handle", pos=(-0.03, -2 * half_w + 0.1, 1.0), size=(0.02, 0.02, 0.02))
    # The panel's hinge-side edge swings into the post it hangs on beyond about 27 degrees; without this the
    # post's contact shut the door again (an open door was shoved closed at 10 rad/s).
    spec.add_exclude(bodyname1="door_frame", bodyname2="door")


def add_marker(spec: mujoco.MjSpec, pos, radius: float = 0.1) -> None:
    """A red disc, the push target (on the floor, or on a table top at `pos`); visual only. Its radius is the
    push task's success distance, so the box's centre over the disc is a success."""
    body = spec.worldbody.add_body(name="marker", pos=pos)
    body.add_geom(name="marker", type=CYLINDER, size=(radius, 0.002, 0), rgba=RED, contype=0, conaffinity=0)
    body.add_site(name="marker", size=(0.02, 0.02, 0.02))


def add_tunnel(spec: mujoco.MjSpec, pos) -> None:
    """A tunnel along +x whose roof is lower than the standing H1's head."""
    body = spec.worldbody.add_body(name="tunnel", pos=pos)
    half_l, half_w, wall = TUNNEL_LENGTH / 2, TUNNEL_WIDTH / 2, 0.05
    roof_z = TUNNEL_ROOF_HEIGHT + wall
    _static_box(body, "tunnel_roof", (half_l, half_w + wall, wall), (half_l, 0, roof_z))
    for side, y in (("left", half_w + wall), ("right", -half_w - wall)):
        _static_box(body, f"tunnel_wall_{side}", (half_l, wall, roof_z / 2), (half_l, y, roof_z / 2))
    body.add_site(name="tunnel_exit", pos=(TUNNEL_LENGTH + 0.5, 0, 0), size=(0.02, 0.02, 0.02))


def add_target(spec: mujoco.MjSpec, pos) -> None:
    """A reach target: a mocap sphere that tasks move; visual only."""
    body = spec.worldbody.add_body(name="target", pos=pos, mocap=True)
    body.add_geom(name="target", type=SPHERE, size=(0.04, 0, 0), rgba=(0.2, 0.8, 0.3, 0.7), contype=0, conaffinity=0)
    body.add_site(name="target", size=(0.01, 0.01, 0.01))


PROPS = {
    "box": add_box,
    "table": add_table,
    "stand": add_stand,
    "chair": add_chair,
    "door": add_door,
    "marker": add_marker,
    "tunnel": add_tunnel,
    "target": add_target,
}


def default_box_height(on: str | None) -> float:
    """Height of the box centre when resting on the floor or on a prop."""
    base = {"stand": STAND_HEIGHT, "table": TABLE_HEIGHT, "push_table": PUSH_TABLE_HEIGHT}.get(on, 0.0)
    return float(base + BOX_HALF_SIZE[2] + 1e-3)


__all__ = ["PROPS", "default_box_height"] + [f.__name__ for f in PROPS.values()]
