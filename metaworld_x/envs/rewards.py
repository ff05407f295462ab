"""Reward building blocks: dm_control's `tolerance` in JAX, and the terms
HumanoidBench composes its rewards from.

Every function here is pure, takes one world's values and returns a scalar
(or an array shaped like its input) in [0, 1].
"""

import math

import jax.numpy as jnp

from metaworld_x.envs.physics_view import PhysicsView

INF = float("inf")


def _sigmoid(x, value_at_1: float, kind: str):
    """A function of x >= 0 that is 1 at 0 and `value_at_1` at 1."""
    if kind in ("gaussian", "hyperbolic", "long_tail", "reciprocal", "tanh_squared"):
        if not 0 < value_at_1 < 1:
            raise ValueError(f"sigmoid {kind!r} needs 0 < value_at_margin < 1, got {value_at_1}")
    elif not 0 <= value_at_1 < 1:
        raise ValueError(f"sigmoid {kind!r} needs 0 <= value_at_margin < 1, got {value_at_1}")
    if kind == "gaussian":
        scale = math.sqrt(-2 * math.log(value_at_1))
        return jnp.exp(-0.5 * (x * scale) ** 2)
    if kind == "hyperbolic":
        scale = math.acosh(1 / value_at_1)
        return 1 / jnp.cosh(x * scale)
    if kind == "long_tail":
        scale = math.sqrt(1 / value_at_1 - 1)
        return 1 / ((x * scale) ** 2 + 1)
    if kind == "reciprocal":
        scale = 1 / value_at_1 - 1
        return 1 / (jnp.abs(x) * scale + 1)
    if kind == "cosine":
        scale = math.acos(2 * value_at_1 - 1) / math.pi
        scaled = x * scale
        return jnp.where(jnp.abs(scaled) < 1, (1 + jnp.cos(math.pi * scaled)) / 2, 0.0)
    if kind == "linear":
        scaled = x * (1 - value_at_1)
        return jnp.where(jnp.abs(scaled) < 1, 1 - scaled, 0.0)
    if kind == "quadratic":
        scaled = x * math.sqrt(1 - value_at_1)
        return jnp.where(jnp.abs(scaled) < 1, 1 - scaled**2, 0.0)
    if kind == "tanh_squared":
        scale = math.atanh(math.sqrt(1 - value_at_1))
        return 1 - jnp.tanh(x * scale) ** 2
    raise ValueError(f"unknown sigmoid {kind!r}")


def tolerance(
    x,
    bounds: tuple[float, float] = (0.0, 0.0),
    margin: float = 0.0,
    sigmoid: str = "gaussian",
    value_at_margin: float = 0.1,
):
    """1 inside `bounds`, falling off outside them over `margin` (dm_control's).

    Args:
      x: any array.
      bounds: (lower, upper); either may be infinite.
      margin: distance outside the bounds at which the value is
        `value_at_margin`; 0 makes the result an in-bounds indicator.
      sigmoid: the shape of the fall-off ("gaussian", "linear", "quadratic",
        "hyperbolic", "long_tail", "reciprocal", "cosine", "tanh_squared").
      value_at_margin: the value at `margin` outside the bounds.

    Returns:
      An array shaped like x, in [0, 1].
    """
    lower, upper = bounds
    if lower > upper:
        raise ValueError(f"tolerance bounds must be ordered, got {bounds}")
    if margin < 0:
        raise ValueError(f"tolerance margin must be >= 0, got {margin}")
    x = jnp.asarray(x, jnp.float32)
    in_bounds = (lower <= x) & (x <= upper)
    if margin == 0:
        return jnp.where(in_bounds, 1.0, 0.0)
    # with an infinite bound, `x - upper` is -inf on the in-bounds side only
    distance = jnp.where(x < lower, lower - x, x - upper) / margin
    return jnp.where(in_bounds, 1.0, _sigmoid(jnp.where(in_bounds, 0.0, distance), value_at_margin, sigmoid))


# ---- HumanoidBench's terms ---------------------------------------------------

# Height of the head above which `standing` is 1: our H1's head site sits at
# this height in the home pose, as HumanoidBench's does.
STAND_HEIGHT = 1.65


def head_height(view: PhysicsView):
    return view.site("head")[2]


def torso_upright(view: PhysicsView):
    """z component of the torso's z axis: 1 upright, 0 lying, -1 upside down."""
    w, x, y, z = view.body_rot_quat("torso_link")
    return 1 - 2 * (x * x + y * y)


# On its feet: the H1 seated on the chair scene's chair holds its head at about 1.5 m,
# so the head alone cannot tell sitting from standing; its pelvis is at 0.75 m there, and at 0.94 m or more walking.
# Nor can the pelvis tell a robot standing from one propped against the chair behind it, the pelvis over the seat
# and the feet out in front: the centre of mass can (over the feet standing, 0.2 m or more behind them propped).
ON_FEET_HEAD_HEIGHT = 1.45
ON_FEET_PELVIS_HEIGHT = 0.9
ON_FEET_COM_OFFSET = 0.12


def com_off_feet(view: PhysicsView):
    """Horizontal distance (m) from the centre of mass to the midpoint of the two soles."""
    feet = 0.5 * (view.site("left_foot")[:2] + view.site("right_foot")[:2])
    return jnp.linalg.norm(view.com_pos[:2] - feet)


def on_feet(view: PhysicsView):
    """Standing up on its own feet: head above ON_FEET_HEAD_HEIGHT, pelvis above ON_FEET_PELVIS_HEIGHT (not
    seated), the centre of mass within ON_FEET_COM_OFFSET of the feet (not propped up), torso upright."""
    return ((head_height(view) > ON_FEET_HEAD_HEIGHT) & (view.root_pos[2] > ON_FEET_PELVIS_HEIGHT)
            & (com_off_feet(view) < ON_FEET_COM_OFFSET) & (torso_upright(view) > 0.9))


def standing(view: PhysicsView, height: float = STAND_HEIGHT):
    return tolerance(head_height(view), bounds=(height, INF), margin=height / 4)


def upright(view: PhysicsView, threshold: float = 0.9, margin: float = 1.9):
    return tolerance(torso_upright(view), bounds=(threshold, INF), sigmoid="linear", margin=margin, value_at_margin=0.0)


def small_control(view: PhysicsView):
    """Near 1 when the servos push gently; floored at 0.8 so it never dominates."""
    gentle = tolerance(view.actuator_force, margin=10.0, sigmoid="quadratic", value_at_margin=0.0).mean()
    return (4 + gentle) / 5


def move(speed, target):
    """1/6 at rest or going backwards, rising linearly to 1 at `target` m/s and above.

    This is HumanoidBench's `(5 * tolerance(speed, (target, inf), margin=target,
    sigmoid="linear", value_at_margin=0) + 1) / 6`, written out so that
    `target` may be an array (a per-world command).
    """
    going = jnp.clip(speed / target, 0.0, 1.0)
    return (5 * going + 1) / 6


def dont_move(view: PhysicsView):
    return tolerance(view.com_vel[:2], margin=2.0).mean()


def stance(view: PhysicsView):
    """HumanoidBench's stand_reward times small_control: head high, torso upright, gentle servos."""
    return standing(view) * upright(view) * small_control(view)


def closeness(distance, near: float, margin: float):
    """1 within `near` metres, linearly down to 0 at `near + margin`."""
    return tolerance(distance, bounds=(0.0, near), margin=margin, sigmoid="linear", value_at_margin=0.0)
