"""Build the robot as a `mujoco.MjSpec`: our MJCF, or a user's H1 by path.

Everything downstream (scenes, environments, retargeting) starts from
`robot_spec()`, so a variant or an external model is chosen in one place.
"""

from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.paths import ROBOTS_DIR
from metaworld_x.robot.constants import JOINT_NAMES, SITE_PLACEMENT, VARIANTS

ROBOT_XML = ROBOTS_DIR / "h1" / "h1.xml"

# Paddle hands: a flat, high-friction plate at the end of each forearm, its
# faces pointing inwards when the arms reach forward, so two paddles can
# squeeze a box between them.
PADDLE_HALF_SIZE = (0.07, 0.012, 0.06)
PADDLE_OFFSET = (0.3, 0.0, -0.015)
PADDLE_MASS = 0.25
PADDLE_FRICTION = (1.5, 0.02, 0.001)


def robot_spec(variant: str = "h1", path: str | Path | None = None) -> mujoco.MjSpec:
    """The robot alone (no floor), ready to be composed into a scene.

    Args:
      variant: one of `VARIANTS`.
      path: a user's H1 MJCF (a file, or a folder holding `h1.xml`), for
        example MuJoCo Menagerie's `unitree_h1`. Its torque motors are turned
        into position servos with our PD gains, and our named sites are added.
    """
    if variant not in VARIANTS:
        raise UserError(f"unknown robot variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    spec = _load_spec(ROBOT_XML) if path is None else _external_spec(Path(path))
    if variant == "h1_hands":
        _add_paddle_hands(spec)
    return spec


def _load_spec(xml: Path) -> mujoco.MjSpec:
    if not xml.is_file():
        raise UserError(f"robot MJCF not found: {xml}; pass an existing file or a folder holding h1.xml")
    try:
        spec = mujoco.MjSpec.from_file(str(xml))
        spec.compile()  # surfaces errors now, with the file named, not later in a scene
    except Exception as error:  # mujoco raises ValueError with a multi-line text
        detail = " ".join(str(error).split()) or type(error).__name__
        raise UserError(f"cannot load robot MJCF {xml}: {detail}") from None
    return spec


def _external_spec(path: Path) -> mujoco.MjSpec:
    xml = path / "h1.xml" if path.is_dir() else path
    spec = _load_spec(xml)
    joints = [j.name for j in spec.joints if j.type != mujoco.mjtJoint.mjJNT_FREE]
    if tuple(joints) != JOINT_NAMES:
        missing = sorted(set(JOINT_NAMES) - set(joints))
        extra = sorted(set(joints) - set(JOINT_NAMES))
        raise UserError(
            f"{xml} is not an H1: its joints differ from the H1's"
            f" (missing {missing or 'none'}, unexpected {extra or 'none'}, or another order)"
        )
    _use_position_servos(spec)
    _add_missing_sites(spec)
    return spec


@lru_cache(maxsize=1)
def pd_gains() -> dict[str, tuple[float, float, tuple[float, float]]]:
    """Joint name -> (kp, kv, torque range) as declared in our MJCF."""
    model = mujoco.MjModel.from_xml_path(str(ROBOT_XML))
    gains = {}
    for i in range(model.nu):
        joint = model.joint(model.actuator_trnid[i, 0]).name
        kp = float(model.actuator_gainprm[i, 0])
        kv = float(-model.actuator_biasprm[i, 2])
        gains[joint] = (kp, kv, tuple(float(x) for x in model.actuator_forcerange[i]))
    return gains


def _use_position_servos(spec: mujoco.MjSpec) -> None:
    """Replace torque motors by position servos with our gains, same limits."""
    gains = pd_gains()
    for actuator in spec.actuators:
        joint = actuator.target
        if joint not in gains:
            raise UserError(f"actuator {actuator.name!r} drives {joint!r}, which is not an H1 joint")
        kp, kv, force_range = gains[joint]
        if actuator.gaintype == mujoco.mjtGain.mjGAIN_FIXED and actuator.biastype == mujoco.mjtBias.mjBIAS_NONE:
            # a motor: its control range was a torque range
            force_range = tuple(actuator.ctrlrange) if actuator.ctrllimited else force_range
        actuator.set_to_position(kp=kp, kv=kv)
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.forcerange = np.asarray(force_range)
        joint_range = spec.joint(joint).range
        actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.ctrlrange = np.asarray(joint_range)


def _add_missing_sites(spec: mujoco.MjSpec) -> None:
    existing = {site.name for site in spec.sites}
    for name, (body, pos) in SITE_PLACEMENT.items():
        if name not in existing:
            spec.body(body).add_site(name=name, pos=pos, size=[0.01, 0.01, 0.01])


def _add_paddle_hands(spec: mujoco.MjSpec) -> None:
    for side in ("left", "right"):
        forearm = spec.body(f"{side}_elbow_link")
        paddle = forearm.add_body(name=f"{side}_paddle", pos=PADDLE_OFFSET)
        paddle.add_geom(
            name=f"{side}_paddle",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=PADDLE_HALF_SIZE,
            mass=PADDLE_MASS,
            friction=PADDLE_FRICTION,
            contype=2,
            conaffinity=1,
            condim=4,
            rgba=[0.85, 0.55, 0.2, 1.0],
        )
        paddle.add_site(name=f"{side}_palm", pos=[0, 0, 0], size=[0.01, 0.01, 0.01])
