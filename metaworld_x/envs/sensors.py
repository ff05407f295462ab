"""Sensors every environment adds to its scene, so both backends can read them.

The PhysicsView needs the robot's centre-of-mass velocity and the normal
force under each foot. MJX and the C engine both fill `sensordata` the same
way, so these are MuJoCo sensors rather than fields that only one engine
computes (`cfrc_ext`, for one, needs `mj_rnePostConstraint` in C and is
unsupported by MJX's Warp path).
"""

import mujoco

# A box site around each sole: a touch sensor sums the normal forces of the
# contacts inside it. Sized to our H1's foot geom (half sizes 0.1015 x 0.04 x
# 0.0125 at x = 0.0525, z = -0.0575 in the ankle frame) with a margin, so the
# sole's corner contacts fall inside.
SOLE_SITE_HALF_SIZE = (0.115, 0.05, 0.03)
SOLE_SITE_POS = (0.0525, 0.0, -0.0575)
FOOT_BODIES = {"left": "left_ankle_link", "right": "right_ankle_link"}

COM_VELOCITY_SENSOR = "robot_com_velocity"
FOOT_TOUCH_SENSORS = ("left_foot_touch", "right_foot_touch")
ROOT_BODY = "pelvis"


def add_view_sensors(spec: mujoco.MjSpec) -> None:
    """Add the touch and centre-of-mass sensors the PhysicsView reads."""
    for (side, body), sensor in zip(FOOT_BODIES.items(), FOOT_TOUCH_SENSORS):
        site = f"{side}_sole"
        spec.body(body).add_site(
            name=site, type=mujoco.mjtGeom.mjGEOM_BOX, size=SOLE_SITE_HALF_SIZE, pos=SOLE_SITE_POS,
            group=5, rgba=(0.2, 0.6, 1.0, 0.3),
        )
        spec.add_sensor(name=sensor, type=mujoco.mjtSensor.mjSENS_TOUCH, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site)
    spec.add_sensor(
        name=COM_VELOCITY_SENSOR, type=mujoco.mjtSensor.mjSENS_SUBTREELINVEL,
        objtype=mujoco.mjtObj.mjOBJ_BODY, objname=ROOT_BODY,
    )
