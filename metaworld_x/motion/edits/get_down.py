"""Getting down from standing into a ground cycle (crawl): a real getting-up motion played backwards.

A router starts every expert standing in the home pose, and the crawl cycle
never stands. Blending the home pose straight into the crawl's joint angles
(`gait_transition.from_rest`, crawl_start) folds the legs while the pelvis is still
high: half-way the feet leave the floor with nothing under the robot, and no
policy learned to follow it. People get down the way they get
up, backwards. DeepMimic's get-up from lying face down, reversed, bends
forward over the feet, puts the hands on the floor ahead of them and then
lowers the knees: every frame has support. The clip is made of:

1. the home pose, held, then blended into the get-up's last (standing) frame;
2. the get-up backwards and slowed, to its frame closest to a crawl pose
   (joint angles, pelvis attitude and height; `splice`);
3. that pose blended into the crawl at the matched phase, the cadence rising
   from zero (`gait_transition.transition_qpos`), and crawling after.

The poses are only targets: the whole goes through the same IK, floor,
foot-pinning and contact stages as retargeted mocap (`retarget.solve_clip`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip
from metaworld_x.motion.edits.gait_transition import (
    GaitCycle,
    TransitionConfig,
    check_joints,
    joined_source,
    poses_from_rest_config,
    targets_from_poses,
    transition_qpos,
)
from metaworld_x.motion.human import frame_weights, lerp_frames, slerp_frames, uniform_times
from metaworld_x.motion.ik import home_qpos
from metaworld_x.motion.retarget import solve_clip
from metaworld_x.robot.constants import HOME_ROOT_HEIGHT


@dataclass(frozen=True)
class GetDownConfig:
    """Timing of a get-down clip (seconds)."""

    hold_s: float = 0.2
    """The home pose held first: a router's episode starts here, at rest."""
    settle_s: float = 0.5
    """Home pose into the get-up's standing frame (feet a little wider, arms down)."""
    rate: float = 1.0
    """Playback rate of the reversed get-up. At the person's own speed the crawl task's bar is still within
    reach from home: played perfectly the clip scores 742 per 1000 steps on it (732 at 0.75, bar 700)."""
    blend_s: float = 0.8
    """From the spliced pose into the cycle's."""
    total_s: float = 21.0
    """The whole clip: longer than a router's 1000-step (20 s) episode, so the reference never holds a last frame."""
    height_weight: float = 3.0
    """Radians of joint-angle distance that one metre of pelvis height counts for in the splice."""

    def __post_init__(self) -> None:
        if min(self.hold_s, self.settle_s, self.blend_s) < 0 or self.settle_s == 0 or self.blend_s == 0:
            raise UserError(f"get-down timing must have hold_s >= 0, settle_s > 0 and blend_s > 0; got "
                            f"{self.hold_s}, {self.settle_s}, {self.blend_s}")
        if not 0 < self.rate <= 2:
            raise UserError(f"get-down rate must be in (0, 2], got {self.rate}")


def reversed_poses(get_up: Clip, rate: float) -> np.ndarray:
    """[T, 26] the get-up's poses backwards at `rate`, standing first: its standing frame at the origin facing +x."""
    qpos = get_up.qpos[::-1]
    rotations = Rotation.from_quat(qpos[:, 3:7], scalar_first=True)
    unturn = Rotation.from_euler("z", -rotations[0].as_euler("ZYX")[0])
    root = unturn.apply(qpos[:, :3] - qpos[0, :3] * [1.0, 1.0, 0.0])
    turned = (unturn * rotations).as_quat(scalar_first=True)
    first, weight = frame_weights(np.arange(len(qpos)) / get_up.fps, uniform_times(get_up.duration / rate, get_up.fps) * rate)
    return np.concatenate([lerp_frames(root, first, weight), slerp_frames(turned, first, weight),
                           lerp_frames(qpos[:, 7:], first, weight)], axis=1)


def splice(poses: np.ndarray, cycle: GaitCycle, height_weight: float) -> tuple[int, float]:
    """(frame of `poses`, phase of `cycle`) whose poses are closest: joint angles (rad), pelvis attitude (rad)
    and `height_weight` x pelvis height (m). Frames below the cycle's lowest pelvis are left out: there the
    get-up still lies on the floor, which is no crawl pose however close its angles."""
    phases = len(cycle.joint_pos)
    rotations = Rotation.from_quat(poses[:, 3:7], scalar_first=True)
    joint = np.linalg.norm(poses[:, None, 7:] - cycle.joint_pos[None], axis=-1)
    attitude = np.stack([(cycle.rotation[k].inv() * rotations).magnitude() for k in range(phases)], axis=1)
    height = np.abs(poses[:, None, 2] - cycle.offset[None, :, 2])
    score = joint + attitude + height_weight * height
    score[poses[:, 2] < cycle.offset[:, 2].min()] = np.inf
    frame, phase = np.unravel_index(np.argmin(score), score.shape)
    return int(frame), phase / phases


def get_down_qpos(home: np.ndarray, get_up: Clip, cycle: GaitCycle, config: GetDownConfig) -> tuple[np.ndarray, dict]:
    """[T, 26] home, held and settled into standing, the get-up backwards, then the cycle; and where it splices."""
    fps = get_up.fps
    lead = reversed_poses(get_up, config.rate)
    frame, phase = splice(lead, cycle, config.height_weight)
    settle = TransitionConfig(before_s=config.hold_s, ramp_s=config.settle_s, total_s=config.hold_s + config.settle_s)
    standing = transition_qpos(GaitCycle.still(home), GaitCycle.still(lead[0]), settle, fps)
    down_s = config.total_s - len(standing) / fps - frame / fps
    into = TransitionConfig(before_s=0.0, ramp_s=config.blend_s, total_s=max(down_s, config.blend_s))
    crawling = transition_qpos(GaitCycle.still(lead[frame]), cycle, into, fps, start_phase=phase)
    crawling[:, :2] += lead[frame, :2]  # a still pose's blend starts at the origin
    qpos = np.concatenate([standing, lead[1:frame], crawling])
    where = {"splice_s": round((len(standing) + frame - 1) / fps, 3), "splice_phase": round(phase, 3),
             "get_up_frame_s": round(float((len(get_up.root_pos) - 1) / fps - frame * config.rate / fps), 3)}
    return qpos, where


def get_down(get_up: Clip, cycle: Clip, skill: str, *, model: mujoco.MjModel, config: GetDownConfig | None = None,
             progress: bool = False) -> Clip:
    """A clip that stands in the home pose, gets down as `get_up` played backwards and goes over into `cycle`."""
    config = config or GetDownConfig()
    if get_up.fps != cycle.fps:
        raise UserError(f"clips {get_up.skill!r} and {cycle.skill!r} have different rates ({get_up.fps}, {cycle.fps} fps)")
    check_joints(get_up, cycle)
    qpos, where = get_down_qpos(home_qpos(model, HOME_ROOT_HEIGHT), get_up, GaitCycle.of(cycle), config)
    source = joined_source(get_up, cycle, f"{get_up.source_file} (reversed) + {cycle.source_file}")
    info = {"get_down": [get_up.source_file, cycle.skill], "rate": config.rate, "blend_s": config.blend_s,
            **where, "loop": False, "scale": 1.0}
    return solve_clip(targets_from_poses(model, qpos), skill, model=model, config=poses_from_rest_config(cycle.fps),
                      source=source, info=info, progress=progress)
