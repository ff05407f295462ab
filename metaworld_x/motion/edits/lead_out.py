"""A one-shot clip ended standing: a keyed lead-out from the clip's last frame to the home pose.

The mirror of `lead_in`. A one-shot take can end mid-motion, and an episode
(or a router) that runs past a clip's end holds its last frame. The carry take
(pickup_carry_start) ends as the box touches the table: the pelvis pitched 46°
forward and still bending, the left foot in the air mid-step. Held for the rest
of an episode that pose cost the carry expert its tracking goal (7.4 cm over
the second after the end, against 5.7 cm while the clip plays), and
a stand expert handed the robot there fell in 6 of 10 episodes.

The lead-out is keyed (`keyframes.KeyframeClip`) from the clip's last frame:

1. put a lifted foot down where it is;
2. take the hands off the object: apart and up by `release`, so the object
   rests where the clip leaves it;
3. straighten into the home pose over the feet: pelvis upright at its home
   height, hands where the home pose has them;
4. shift the pelvis over the other foot, step the foot that stands wider or
   narrower than the home stance to the home stance beside it, centre the
   pelvis between the feet;
5. hold.

The lead-out's first poses blend out of the clip's last over `blend_s` (joint
angles and root alike), and the lead-out goes through the same IK,
foot-pinning and contact stages as retargeted mocap (`retarget.solve_clip`).
The clip's own frames are kept exactly, and a held object stays at its last
pose.

Not applied to a shipped clip yet: the carry expert fine-tuned on
pickup_carry_start with this lead-out (11.2M steps) tracked the
clip to 3.7 cm but succeeded 7/10 from the clip and 4/10 from home, against
9/10 and 9/10 for the shipped one (`LEAD_INS` in scripts/make_motion_library.py).
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
from metaworld_x.motion.scaling import SIDES


@dataclass(frozen=True)
class LeadOutConfig:
    """Timing (s) and sizes (m) of the lead-out's keys."""

    settle_s: float = 0.3
    """Putting a lifted foot down."""
    release_s: float = 0.4
    """Taking the hands off the object."""
    release: float = 0.08
    """How far (m) each hand moves away from the other, and up, to let go."""
    rise_s: float = 1.0
    """Straightening into the home pose over the feet."""
    shift_s: float = 0.4
    """Moving the pelvis over the foot that stays, and back between the feet after the step."""
    step_s: float = 0.5
    """The step to the home stance: lift, move and put down one foot."""
    step_height: float = 0.08
    """How high (m) the stepping sole rises mid-step (above the contact detector's 5 cm)."""
    shift: float = 0.07
    """How far (m) the pelvis moves sideways towards the standing foot before the step."""
    hold_s: float = 0.5
    """Standing still in the home pose at the end."""
    blend_s: float = 0.7
    """The first part of the lead-out over which the clip's last pose blends into the lead-out's poses. The whole
    settle and release: the clip's last pose is mid-step and falling forward, which no static key reproduces (the
    IK of the first key stands 4.5 cm lower, its weight on the other knee), so the lead-out goes over slowly."""

    def __post_init__(self) -> None:
        timings = (self.settle_s, self.release_s, self.rise_s, self.shift_s, self.step_s, self.hold_s)
        if min(timings) <= 0 or self.release < 0 or self.step_height <= 0:
            raise UserError("lead-out timings, step_height must be positive and release >= 0")
        if not 0 < self.blend_s <= self.settle_s + self.release_s:
            raise UserError(f"blend_s must be in (0, settle_s + release_s = {self.settle_s + self.release_s}] s,"
                            f" got {self.blend_s}")


def lead_out_keys(clip: Clip, home: dict[str, np.ndarray], config: LeadOutConfig) -> tuple[KeyPose, ...]:
    """Keys from the clip's last frame to the home pose (`keyframes.home_points`) over its feet, in its heading."""
    frame = clip.num_frames - 1
    rpy = Rotation.from_quat(clip.root_quat[frame], scalar_first=True).as_euler("ZYX")[::-1]
    heading = Rotation.from_euler("z", rpy[2])
    hands = {s: clip.keypoint(f"{s}_hand")[frame].astype(float) for s in SIDES}
    feet = {s: clip.keypoint(f"{s}_foot")[frame].astype(float) for s in SIDES}
    planted = {s: foot * [1.0, 1.0, 0.0] for s, foot in feet.items()}
    home_middle = (home["left_foot"] + home["right_foot"]) / 2

    def key(time, pelvis, hands_at, feet_at, pelvis_rpy=(0.0, 0.0, float(rpy[2]))) -> KeyPose:
        return KeyPose(time, _tuple(pelvis), tuple(float(v) for v in pelvis_rpy),
                       **{f"{s}_hand": _tuple(hands_at[s]) for s in SIDES},
                       **{f"{s}_foot": _tuple(feet_at[s]) for s in SIDES})

    def standing(time, feet_at, shift=np.zeros(3)) -> KeyPose:
        """Upright in the home pose, in the clip's heading, over the middle of `feet_at` (moved by `shift`)."""
        middle = (feet_at["left"] + feet_at["right"]) / 2 + shift

        def place(point):
            return middle + heading.apply(point - home_middle)

        return key(time, place(home["pelvis"]), {s: place(home[f"{s}_hand"]) for s in SIDES}, feet_at)

    t = 0.0
    keys = [key(t, clip.root_pos[frame], hands, feet, rpy)]
    t += config.settle_s
    keys.append(key(t, clip.root_pos[frame], hands, planted, rpy))
    # let go: each hand away from the other along the line between them, and up
    across = (hands["left"] - hands["right"]) * [1.0, 1.0, 0.0]
    across = across / max(np.linalg.norm(across), 1e-6) * config.release
    up = np.array([0.0, 0.0, config.release])
    released = {"left": hands["left"] + across + up, "right": hands["right"] - across + up}
    t += config.release_s
    keys.append(key(t, clip.root_pos[frame], released, planted, rpy))
    t += config.rise_s
    keys.append(standing(t, planted))
    # the foot farther from its home place beside the other steps there
    stance = heading.apply(home["left_foot"] - home["right_foot"])
    beside = {"left": planted["right"] + stance, "right": planted["left"] - stance}
    side = max(SIDES, key=lambda s: float(np.linalg.norm(beside[s] - planted[s])))
    other = "right" if side == "left" else "left"
    toward = (planted[other] - planted[side]) * [1.0, 1.0, 0.0]
    over = toward / max(np.linalg.norm(toward), 1e-6) * config.shift
    t += config.shift_s
    keys.append(standing(t, planted, over))
    lifted = {**planted, side: (planted[side] + beside[side]) / 2 + [0.0, 0.0, config.step_height]}
    t += config.step_s / 2
    keys.append(replace(standing(t, planted, over), **{f"{side}_foot": _tuple(lifted[side])}))
    stepped = {**planted, side: beside[side]}
    t += config.step_s / 2
    keys.append(standing(t, stepped, over + (planted[side] - beside[side]) / 2))
    t += config.shift_s
    keys.append(standing(t, stepped))
    return tuple(keys)


def _tuple(point) -> tuple[float, float, float]:
    return tuple(float(v) for v in point)


def with_lead_out(clip: Clip, *, model: mujoco.MjModel, config: LeadOutConfig | None = None,
                  progress: bool = False) -> Clip:
    """`clip` followed by a lead-out to the home pose (see the module docstring). The clip's own frames are kept
    exactly: a policy trained on them meets the same reference until the clip's end."""
    config = config or LeadOutConfig()
    if clip.info.get("loop"):
        raise UserError(f"clip {clip.skill!r} loops: a lead-out ends a one-shot clip")
    keys = lead_out_keys(clip, home_points(model), config)
    lead = compose(KeyframeClip(f"{clip.skill}_lead_out", keys, hold=config.hold_s), model=model, progress=progress)
    poses = lead.qpos
    # The first key puts the pelvis, hands and soles where the clip has them and the IK places the rest: blend
    # out of the clip's last pose over the first poses so that knees, elbows and trunk join without a jump.
    count = int(round(config.blend_s * clip.fps))
    weight = minimum_jerk(np.arange(count + 1) / count)[:, None]
    poses = np.concatenate([blend_poses(clip.qpos[-1], poses[: count + 1], weight), poses[count + 1 :]])
    source = SourceInfo(kind="keyframed", file="", licence=clip.licence, attribution=clip.attribution)
    solved = solve_clip(targets_from_poses(model, poses), clip.skill, model=model,
                        config=poses_from_rest_config(clip.fps), source=source, info={}, progress=progress)
    return _appended(clip, solved)


def _appended(clip: Clip, lead: Clip) -> Clip:
    """`clip` and then `lead` from its second frame (its first is the clip's last pose). The person's keypoints
    (`human_pos`) and a held object keep their last frame: the take has ended, the object rests where it was left."""
    rest = slice(1, None)

    def hold(array):
        return None if array is None else np.concatenate([array, np.repeat(array[-1:], lead.num_frames - 1, axis=0)])

    arrays = {name: np.concatenate([getattr(clip, name), getattr(lead, name)[rest]])
              for name in ("root_pos", "root_quat", "joint_pos", "joint_vel", "root_lin_vel", "root_ang_vel",
                           "keypoint_pos", "target_pos", "contacts")}
    info = {**clip.info, "lead_out_s": (lead.num_frames - 1) / clip.fps, "lead_out_quality": lead.quality}
    return replace(clip, **arrays, human_pos=hold(clip.human_pos), object_pose=hold(clip.object_pose),
                   prop_qpos=hold(clip.prop_qpos), info=info)
