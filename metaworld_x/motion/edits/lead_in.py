"""A one-shot clip started from standing: a keyframed lead-in that steps from the home pose into the clip.

A router starts every expert standing in the home pose, and a mocap take need
not start there. OMOMO's box pickup begins at the end of the person's last step
up to the box: one foot still in the air, the feet 7-9 cm wider apart than the
H1's home stance, the hips bent 0.9 rad. A policy started at home and asked for
that pose at once swung a leg out and fell.

The lead-in is keyed (`keyframes.KeyframeClip`) from the clip's own frame at
`join_at`, a time when both feet are planted:

1. stand in the home pose;
2. shift the pelvis over the right foot, step the left foot out to where the
   clip's left foot stands; then the same for the right foot;
3. bend into the clip's pelvis pose and bring the hands to where its hands are.

The clip then carries on from `join_at`. The lead-in's poses blend into the
clip's over its last `blend_s` (joint angles and root alike), and the whole
sequence goes through the same IK, foot-pinning and contact stages as
retargeted mocap (`retarget.solve_clip`, on targets the poses reach), so the
join is smooth and every stance foot is pinned. A held object waits where the
clip has it at `join_at`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip
from metaworld_x.motion.edits.gait_transition import blend_poses, poses_from_rest_config, targets_from_poses
from metaworld_x.motion.keyframes import KeyframeClip, KeyPose, compose, home_points, minimum_jerk
from metaworld_x.motion.retarget import SourceInfo, solve_clip


@dataclass(frozen=True)
class LeadInConfig:
    """Timing (s) of the lead-in's keys."""

    join_at: float = 0.2
    """Clip time the lead-in leads into: both of the clip's feet must be planted then."""
    stand_s: float = 0.3
    """Standing still in the home pose first."""
    shift_s: float = 0.4
    """Moving the pelvis over the foot that stays."""
    step_s: float = 0.5
    """Each step: lift, move out and put down one foot."""
    step_height: float = 0.08
    """How high (m) a stepping sole rises mid-step: above the contact detector's 5 cm, or the step is taken for
    one stance and its foot pinned in one place throughout."""
    bend_s: float = 0.8
    """Going over into the clip's pelvis and hand pose after the steps."""
    blend_s: float = 0.3
    """The last part of the lead-in over which its poses blend into the clip's at `join_at`."""
    shift: float = 0.07
    """How far (m) the pelvis moves sideways towards the standing foot before a step."""

    def __post_init__(self) -> None:
        if self.join_at < 0 or min(self.stand_s, self.shift_s, self.step_s, self.bend_s) <= 0:
            raise UserError("lead-in timings must be positive (join_at >= 0)")
        if not 0 < self.blend_s <= self.bend_s:
            raise UserError(f"blend_s must be in (0, bend_s = {self.bend_s}] s, got {self.blend_s}")


def _point(clip: Clip, name: str, frame: int) -> tuple[float, float, float]:
    return tuple(float(v) for v in clip.keypoint(name)[frame])


def lead_in_keys(clip: Clip, frame: int, home: dict[str, np.ndarray], config: LeadInConfig) -> tuple[KeyPose, ...]:
    """Keys from the home pose (`keyframes.home_points`) to the clip's pose at `frame`: step out, then bend."""
    feet = {side: _point(clip, f"{side}_foot", frame) for side in ("left", "right")}
    if max(abs(f[2]) for f in feet.values()) > 0.02 or not clip.contacts[frame].all():
        raise UserError(
            f"clip {clip.skill!r}: a foot is off the ground at {frame / clip.fps:.2f} s; lead into a time when both stand"
        )
    placed = {side: tuple(float(v) for v in home[f"{side}_foot"]) for side in ("left", "right")}
    pelvis = tuple(float(v) for v in home["pelvis"])
    roll_pitch_yaw = Rotation.from_quat(clip.root_quat[frame], scalar_first=True).as_euler("ZYX")[::-1]
    t = config.stand_s
    keys = [KeyPose(0.0, pelvis), KeyPose(t, pelvis)]
    for side, standing in (("left", "right"), ("right", "left")):
        over = (pelvis[0], pelvis[1] + np.sign(placed[standing][1]) * config.shift, pelvis[2])
        t += config.shift_s
        keys.append(KeyPose(t, over, **{f"{k}_foot": placed[k] for k in placed}))
        middle = tuple((np.asarray(placed[side]) + np.asarray(feet[side])) / 2 + [0.0, 0.0, config.step_height])
        t += config.step_s / 2
        keys.append(KeyPose(t, over, **{f"{side}_foot": middle}))
        placed[side] = feet[side]
        t += config.step_s / 2
        keys.append(KeyPose(t, over, **{f"{side}_foot": feet[side]}))
    t += config.bend_s
    keys.append(KeyPose(
        t, tuple(float(v) for v in clip.root_pos[frame]), tuple(float(v) for v in roll_pitch_yaw),
        left_hand=_point(clip, "left_hand", frame), right_hand=_point(clip, "right_hand", frame),
        left_foot=feet["left"], right_foot=feet["right"],
    ))
    return tuple(keys)


def with_lead_in(clip: Clip, *, model: mujoco.MjModel, config: LeadInConfig | None = None,
                 progress: bool = False) -> Clip:
    """`clip` from `config.join_at` on, preceded by a lead-in from the home pose (see the module docstring)."""
    config = config or LeadInConfig()
    frame = int(round(config.join_at * clip.fps))
    if frame >= clip.num_frames - 1:
        raise UserError(f"clip {clip.skill!r} is {clip.num_frames / clip.fps:.2f} s long; join_at must come before its end")
    keys = lead_in_keys(clip, frame, home_points(model), config)
    lead = compose(KeyframeClip(f"{clip.skill}_lead_in", keys, hold=0.0), model=model, progress=progress)
    lead_poses, clip_poses = lead.qpos[:-1], clip.qpos[frame:]
    # The lead-in's last key puts the pelvis, hands and soles where the clip has them, the IK places the rest:
    # blend its last poses into the clip's first so that knees, elbows and trunk join without a jump.
    count = int(round(config.blend_s * clip.fps))
    weight = minimum_jerk(np.arange(1, count + 1) / count)[:, None]
    lead_poses = np.concatenate([lead_poses[:-count], blend_poses(lead_poses[-count:], clip_poses[0], weight)])
    poses = np.concatenate([lead_poses, clip_poses])
    waiting = None
    if clip.object_pose is not None:
        waiting = np.concatenate([np.repeat(clip.object_pose[frame : frame + 1], len(lead_poses), axis=0),
                                  clip.object_pose[frame:]])
    retarget = poses_from_rest_config(clip.fps)
    source = SourceInfo(kind=clip.source, file=clip.source_file, licence=clip.licence, attribution=clip.attribution)
    info = {**clip.info, "lead_in_s": len(lead_poses) / clip.fps, "joined_at_s": config.join_at, "loop": False}
    result = solve_clip(targets_from_poses(model, poses), clip.skill, model=model, config=retarget, source=source,
                        info=info, progress=progress)
    # The object pose is the clip's own (already fitted to the robot's hands): not moved again.
    return replace(result, object_pose=waiting)
