"""Names and poses of the H1 that the rest of the project refers to.

PD gains are not here: they live in the robot's MJCF <default> classes.
"""

# Actuated joints in actuator order, as on the Unitree H1.
JOINT_NAMES: tuple[str, ...] = (
    "left_hip_yaw",
    "left_hip_roll",
    "left_hip_pitch",
    "left_knee",
    "left_ankle",
    "right_hip_yaw",
    "right_hip_roll",
    "right_hip_pitch",
    "right_knee",
    "right_ankle",
    "torso",
    "left_shoulder_pitch",
    "left_shoulder_roll",
    "left_shoulder_yaw",
    "left_elbow",
    "right_shoulder_pitch",
    "right_shoulder_roll",
    "right_shoulder_yaw",
    "right_elbow",
)

# Slightly bent knees with the pelvis upright and the centre of mass over the
# middle of the feet, so the PD servos alone hold it. (HumanoidBench starts
# from hips -0.4, ankles -0.4, which puts our H1's centre of mass over the heels.)
HOME_JOINT_POSE: dict[str, float] = {
    "left_hip_pitch": -0.3,
    "left_knee": 0.8,
    "left_ankle": -0.5,
    "right_hip_pitch": -0.3,
    "right_knee": 0.8,
    "right_ankle": -0.5,
}
HOME_ROOT_HEIGHT = 0.98

# Sites every variant carries; rewards and retargeting refer to them by name.
SITE_NAMES: tuple[str, ...] = (
    "head",
    "imu",
    "pelvis",
    "left_hand",
    "right_hand",
    "left_foot",
    "right_foot",
)

# Body that each named site sits on, and its position in that body's frame.
# Used to add the sites to a user-supplied model (Menagerie's H1 lacks them).
SITE_PLACEMENT: dict[str, tuple[str, tuple[float, float, float]]] = {
    "head": ("torso_link", (0.045, 0.0, 0.68)),
    "imu": ("torso_link", (-0.04452, -0.01891, 0.27756)),
    "pelvis": ("pelvis", (0.0, 0.0, 0.0)),
    "left_hand": ("left_elbow_link", (0.28, 0.0, -0.015)),
    "right_hand": ("right_elbow_link", (0.28, 0.0, -0.015)),
    "left_foot": ("left_ankle_link", (0.0525, 0.0, -0.07)),
    "right_foot": ("right_ankle_link", (0.0525, 0.0, -0.07)),
}

# "h1": the bare robot. "h1_hands": the same robot with paddle hands for
# carrying, pushing and pressing; same joints and actuators, so experts of
# both variants share one action space.
VARIANTS: tuple[str, ...] = ("h1", "h1_hands")
