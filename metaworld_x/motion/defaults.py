"""Training settings read off a reference clip, each with the reason it has its value.

`metaworld-x train expert NAME --clip FILE` trains on a clip nobody has tuned a spec for. Each setting a person
chose for a shipped expert (`experts/specs.py`) is derived here from the clip, by the rule those choices followed,
and recorded in the expert's spec.json with its `why`:

| setting | rule |
|---|---|
| loop | the last frame runs on into the first while moving: repeat it; otherwise hold the last frame |
| home starts | the clip starts (a loop: passes) near the home pose: a share of episodes starts there, as a router starts an expert |
| action scale | every joint's farthest excursion from home is within reach (ankles aside) |
| deviation limit | the shipped 0.5 m, widened for a body that turns faster than any shipped clip's |
| failure charge | the deviation limit: a fall costs as much as never getting back |
| λ floor | 2, as the shipped experts that stopped falling needed |
| episode length | a loop: the shipped default; a one-shot clip: all of it, then a second of balance on its last frame |

Everything here is a pure function of the clip's arrays and of `HomePose`, the robot's facts it is compared with
(`metaworld_x.experts.own_motion.home_pose` builds one from a model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from metaworld_x.experts.specs import DEFAULT_EPISODE_LENGTH, EXPERT_ACTION_SCALE, HOME_STARTS
from metaworld_x.motion.clip import Clip
from metaworld_x.robot.constants import JOINT_NAMES


@dataclass(frozen=True)
class Setting:
    """One derived setting: its value and one line saying why."""

    value: Any
    why: str

    def record(self) -> dict[str, Any]:
        return {"value": self.value, "why": self.why}


@dataclass(frozen=True)
class HomePose:
    """The robot standing in the scene's home pose, as the derivations compare clips with it."""

    keypoints: dict[str, np.ndarray]
    """Keypoint name -> [3] position relative to the pelvis, in the pelvis's heading frame (m)."""
    root_height: float
    """Pelvis height (m)."""
    servo_home: np.ndarray
    """[19] servo targets that hold the home pose: what action 0 commands (`envs.actions.ActionMap`)."""
    half_range: np.ndarray
    """[19] half of each servo's range (rad): what one action unit moves at action scale 1."""


@dataclass(frozen=True)
class DefaultsConfig:
    """The thresholds of the derivations."""

    seam_keypoint_m: float = 0.3
    """A clip loops only when its last frame's worst keypoint is within this of its first's (relative to the pelvis,
    in its heading frame); the library's walk, run and jog cycles meet at 0.05-0.25 m, one-shot clips at 0.3-1.3 m."""
    seam_height_m: float = 0.15
    """... and its pelvis height within this of the first frame's."""
    seam_heading_deg: float = 10.0
    """... and its heading within this of the first frame's: a loop repeats by moving, never by turning, the clip."""
    rest_speed: float = 0.3
    """A clip whose keypoints all move slower than this (m/s) at both its ends starts and ends at rest: held."""
    home_keypoint_m: float = 0.4
    """A frame is near home when its worst keypoint is within this of the home pose's (the stand clip's, 0.36 m
    off, took stand to 10/10 from home)."""
    home_height_m: float = 0.1
    """... and its pelvis height within this of the home pose's."""
    scale_margin: float = 0.02
    """Added to the farthest excursion before rounding up: crawl's 1.08 became 1.1, carry's 0.81 became 0.85."""
    scale_step: float = 0.05
    """The action scale is rounded up to a multiple of this."""
    base_deviation_m: float = 0.5
    """The deviation limit every shipped expert trained with."""
    library_turn_rate: float = 5.9
    """The fastest pelvis turn (rad/s, 99th percentile over frames) of a clip a shipped expert follows under
    base_deviation_m: crawl_get_down's dive."""
    max_deviation_m: float = 1.0
    """The widest deviation limit: the home-start one (`TrackingConfig.home_max_deviation`)."""
    multiplier_floor: float = 2.0
    """λ's floor (`ConstraintConfig.min_multiplier`)."""
    hold_s: float = 1.0
    """Seconds a one-shot clip's episode goes on after its last frame, balancing on it."""


# A foot on the floor turns its ankle: every walking clip asks the ankles for more than the common 0.5 (walk 1.04,
# run_rest 1.36 in a tenth of its frames), and walk and run learned to 10/10 and 9/10 at 0.5.
_SCALE_JOINTS = np.array(["ankle" not in name for name in JOINT_NAMES])


def heading_keypoints(clip: Clip) -> np.ndarray:
    """[T, K, 3] the clip's keypoints relative to its pelvis, in the pelvis's heading frame (its twist about z)."""
    yaw = _heading(clip.root_quat)
    cos, sin = np.cos(-yaw)[:, None], np.sin(-yaw)[:, None]
    rel = clip.keypoint_pos - clip.root_pos[:, None, :]
    x, y = rel[..., 0], rel[..., 1]
    return np.stack([cos * x - sin * y, sin * x + cos * y, rel[..., 2]], axis=-1)


def _heading(quat: np.ndarray) -> np.ndarray:
    """[T] heading (rad) of (w, x, y, z) quaternions [T, 4]: the twist about the vertical, as the tracking task's."""
    return 2.0 * np.arctan2(quat[:, 3], quat[:, 0])


def _keypoint_speeds(clip: Clip) -> np.ndarray:
    """[T-1] the fastest keypoint's speed (m/s) between consecutive frames."""
    return np.linalg.norm(np.diff(clip.keypoint_pos, axis=0), axis=-1).max(axis=-1) * clip.fps


def loops(clip: Clip, config: DefaultsConfig = DefaultsConfig()) -> Setting:
    """Whether the clip is one cycle to repeat (True) or a one-shot motion that holds its last frame (False)."""
    kp = heading_keypoints(clip)
    seam = float(np.linalg.norm(kp[-1] - kp[0], axis=-1).max())
    height = float(abs(clip.root_pos[-1, 2] - clip.root_pos[0, 2]))
    turn = math.degrees(abs(math.remainder(float(_heading(clip.root_quat[[-1]])[0] - _heading(clip.root_quat[[0]])[0]),
                                           2 * math.pi)))
    speeds = _keypoint_speeds(clip)
    ends = max(float(speeds[0]), float(speeds[-1]))
    seam_text = f"worst keypoint {seam:.2f} m, pelvis height {height:.2f} m, heading {turn:.0f}° from the first frame"
    if ends < config.rest_speed:
        return Setting(False, f"holds its last frame: it starts and ends at rest (keypoints under {ends:.2f} m/s)")
    if seam <= config.seam_keypoint_m and height <= config.seam_height_m and turn <= config.seam_heading_deg:
        return Setting(True, f"loops: its last frame runs on into its first ({seam_text}) while moving at"
                             f" {ends:.1f} m/s, so it is one cycle of a repeating motion")
    return Setting(False, f"holds its last frame: its last frame does not meet its first ({seam_text})")


def distance_from_home(clip: Clip, home: HomePose) -> tuple[np.ndarray, np.ndarray]:
    """([T] worst keypoint distance (m) from the home pose's, relative to the pelvis in its heading frame,
    [T] pelvis height difference (m)) per frame."""
    kp = heading_keypoints(clip)
    reference = np.stack([home.keypoints[name] for name in clip.keypoint_names])
    return np.linalg.norm(kp - reference, axis=-1).max(axis=-1), np.abs(clip.root_pos[:, 2] - home.root_height)


def home_starts(clip: Clip, home: HomePose, loop: bool, config: DefaultsConfig = DefaultsConfig()) -> Setting:
    """TrackingConfig overrides for starts from the home pose: some where the clip starts near home (a loop: where
    any frame is near it, the closest), none where the robot would have to get to the clip first."""
    distance, height = distance_from_home(clip, home)
    near = (distance <= config.home_keypoint_m) & (height <= config.home_height_m)
    limits = f"within {config.home_keypoint_m} m in every keypoint and {config.home_height_m} m in pelvis height"
    share = HOME_STARTS["home_start_fraction"]
    if loop and near.any():
        best = int(np.argmin(np.where(near, distance, np.inf)))
        return Setting({**HOME_STARTS}, f"{share:.0%} of episodes start from the home pose, as a router starts an"
                                        f" expert: the cycle passes near it (frame {best}, {distance[best]:.2f} m;"
                                        f" {limits}), where they join it")
    if not loop and near[0]:
        return Setting({**HOME_STARTS, "home_start_time": 0.0},
                       f"{share:.0%} of episodes start from the home pose, as a router starts an expert: the clip"
                       f" starts near it ({distance[0]:.2f} m, pelvis {height[0]:.2f} m; {limits})")
    where = "no frame of the cycle" if loop else "the clip's first frame"
    first = int(np.argmin(distance)) if loop else 0
    return Setting({}, f"no starts from the home pose: {where} is near it (closest {distance[first]:.2f} m, pelvis"
                       f" {height[first]:.2f} m; near is {limits}), so a robot at home would first have to get there")


def action_scale(clip: Clip, home: HomePose, config: DefaultsConfig = DefaultsConfig()) -> Setting:
    """The action scale (fraction of each joint's half range per action unit) that reaches every frame of the clip:
    the common 0.5 where it does, more where a joint goes farther from home (ankles aside)."""
    reach = np.abs(clip.joint_pos - home.servo_home) / home.half_range  # [T, 19] action units at scale 1
    farthest = reach[:, _SCALE_JOINTS].max(axis=0)
    joint = JOINT_NAMES[int(np.flatnonzero(_SCALE_JOINTS)[int(np.argmax(farthest))])]
    needed = float(farthest.max())
    if needed <= EXPERT_ACTION_SCALE:
        return Setting(EXPERT_ACTION_SCALE, f"the common {EXPERT_ACTION_SCALE}: every joint stays within it of home"
                                            f" (farthest: {joint} at {needed:.2f} of its half range)")
    scale = math.ceil(round((needed + config.scale_margin) / config.scale_step, 6)) * config.scale_step
    scale = round(scale, 4)
    return Setting(scale, f"{joint} goes {needed:.2f} of its half range from home, past the common"
                          f" {EXPERT_ACTION_SCALE}, which cannot reach it (crawl needed 1.1 for its knees' 1.08);"
                          f" ankles aside, which a foot on the floor turns")


def turn_rate(clip: Clip) -> float:
    """The pelvis's turning speed (rad/s), 99th percentile over frames."""
    return float(np.percentile(np.linalg.norm(clip.root_ang_vel, axis=-1), 99))


def deviation_limit(clip: Clip, config: DefaultsConfig = DefaultsConfig()) -> Setting:
    """The keypoint distance (m) from the clip that ends an episode (`TrackingConfig.max_deviation`)."""
    rate = turn_rate(clip)
    base = config.base_deviation_m
    if rate <= config.library_turn_rate:
        return Setting(base, f"{base} m, as for every shipped expert (quiet standing to a sprint and a crawl): the"
                             f" pelvis turns at {rate:.1f} rad/s, within the shipped clips' {config.library_turn_rate}")
    limit = round(min(config.max_deviation_m, base * rate / config.library_turn_rate), 2)
    return Setting(limit, f"{limit} m: the pelvis turns at {rate:.1f} rad/s, faster than any shipped clip's"
                          f" ({config.library_turn_rate}), so the same lag puts the head and hands farther off;"
                          f" {base} m widened in proportion, at most {config.max_deviation_m} m")


def failure_charge(deviation: float) -> Setting:
    """The tracking error charged for every step after a fall (`ConstraintConfig.failure_error`)."""
    return Setting(deviation, f"{deviation} m, the deviation limit, as for every shipped expert: a fall costs as much"
                              " as never getting back; without a charge, ending episodes early was the cheapest way out"
                              " of the tracking cost")


def multiplier_floor(config: DefaultsConfig = DefaultsConfig()) -> Setting:
    """λ's lower bound (`ConstraintConfig.min_multiplier`)."""
    return Setting(config.multiplier_floor, f"λ kept at {config.multiplier_floor:g} or more: the failure charge weighs"
                                            " λ times, and sit and reach_one_hand, trained on until λ reached 0,"
                                            " began to fall; with the floor they did not")


def episode_length(clip: Clip, loop: bool, control_dt: float, config: DefaultsConfig = DefaultsConfig()) -> Setting:
    """Control steps per episode: a loop's are the shipped default; a one-shot clip's cover it and a balance."""
    if loop:
        steps = max(DEFAULT_EPISODE_LENGTH, math.ceil(clip.duration / control_dt))
        return Setting(steps, f"{steps} steps ({steps * control_dt:g} s), the shipped default: the loop repeats")
    steps = math.ceil(round((clip.duration + config.hold_s) / control_dt, 6))
    return Setting(steps, f"{steps} steps: the whole clip ({clip.duration:.2f} s), then {config.hold_s:g} s of balance"
                          " on its last frame; success is reaching the end without a fall")


def derive(clip: Clip, home: HomePose, control_dt: float, config: DefaultsConfig = DefaultsConfig()) -> dict[str, Setting]:
    """Every derived setting of `clip`, by name."""
    loop = loops(clip, config)
    deviation = deviation_limit(clip, config)
    return {
        "loop": loop,
        "home_starts": home_starts(clip, home, loop.value, config),
        "action_scale": action_scale(clip, home, config),
        "max_deviation": deviation,
        "failure_error": failure_charge(deviation.value),
        "min_multiplier": multiplier_floor(config),
        "episode_length": episode_length(clip, loop.value, control_dt, config),
    }
