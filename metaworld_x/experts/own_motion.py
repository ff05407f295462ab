"""Experts on a user's own motion: `metaworld-x train expert NAME --clip FILE`.

The clip (a retargeted .npz, or a .bvh or DeepMimic .txt/.json retargeted here first) is saved into the run folder
and tracked with a generic spec built from it at run time: pure tracking on the floor, success = the clip followed
to its end (a loop: the episode) without a fall, and every setting a person tuned for the shipped experts derived
from the clip instead (`motion/defaults.py`), each recorded with its reason in the spec's `clip_settings`. The
shipped folder holds the clip as OWN_CLIP_FILE, so the expert loads from its spec.json alone
(`experts.specs.installed_spec`); nothing in the package names it.
"""

from __future__ import annotations

import re
from pathlib import Path

from metaworld_x.errors import UserError
from metaworld_x.experts.specs import EXPERTS, OWN_CLIP_FILE, TRACKING_ERROR_GOAL, ExpertSpec, ppo_settings

# A name is a folder in experts/ and a word in the router's catalog.
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
# Steps of an own-motion expert's training: walk's from scratch took 9.0M to its goals (15.3 min on 2 cores).
OWN_MOTION_STEPS = 10_000_000
RETARGETED_SUFFIXES = (".bvh", ".txt", ".json")


def check_name(name: str) -> str:
    """Refuse a name that cannot be an expert's folder, or that is a shipped expert's."""
    if not _NAME.fullmatch(name):
        raise UserError(f"expert name {name!r} must be lower-case letters, digits and _, starting with a letter"
                        " (at most 40), e.g. two_footed_hop")
    if name in EXPERTS:
        raise UserError(f"{name!r} is a shipped expert; name your own motion's expert otherwise, e.g. my_{name}")
    return name


def default_description(name: str) -> str:
    """The one-line description of an expert named `name` when none is given: its words."""
    return name.replace("_", " ")


def clip_from_file(path: Path, name: str, progress: bool = False):
    """The robot clip in `path`: a retargeted .npz as it is (checked to be made for this robot), or a .bvh or
    DeepMimic .txt/.json retargeted onto the H1 first, labelled `name`."""
    from metaworld_x.motion import load_clip, load_human_motion
    from metaworld_x.motion.retarget import SourceInfo, retarget

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such motion file; give a retargeted clip (.npz), a .bvh or a DeepMimic .txt")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        clip = load_clip(path)
    elif suffix in RETARGETED_SUFFIXES:
        motion = load_human_motion(path)
        clip = retarget(motion, name, source=SourceInfo(kind="mocap", file=path.name), progress=progress)
    else:
        raise UserError(f"{path}: unknown motion format {suffix or '(no suffix)'!r}; give a retargeted clip (.npz),"
                        " a .bvh or a DeepMimic .txt")
    return clip


def check_trainable(clip, path: Path) -> None:
    """Refuse a clip an own-motion expert cannot track: one that moves props, which its floor scene lacks."""
    if clip.prop_joints:
        raise UserError(f"{path} moves scene props ({', '.join(n for n, _ in clip.prop_joints)}), which the floor scene"
                        " an own-motion expert trains in does not have; give a clip of the robot alone")


def home_pose(model, keypoint_names):
    """The `HomePose` of `model`'s first keyframe (a scene with the robot first) for these keypoints."""
    import mujoco
    import numpy as np

    from metaworld_x.envs.tasks.tracking import SITE_KEYPOINTS
    from metaworld_x.motion.defaults import HomePose

    data = mujoco.MjData(model)
    data.qpos[:] = model.key_qpos[0]
    mujoco.mj_kinematics(model, data)
    root, quat = data.qpos[:3].copy(), data.qpos[3:7]
    yaw = 2.0 * np.arctan2(quat[3], quat[0])
    cos, sin = np.cos(-yaw), np.sin(-yaw)
    keypoints = {}
    for name in keypoint_names:
        rel = (data.site(name).xpos if name in SITE_KEYPOINTS else data.body(name).xpos) - root
        keypoints[name] = np.array([cos * rel[0] - sin * rel[1], sin * rel[0] + cos * rel[1], rel[2]])
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    return HomePose(keypoints=keypoints, root_height=float(root[2]), servo_home=model.key_ctrl[0].copy(),
                    half_range=(high - low) / 2)


def derive_settings(clip) -> dict:
    """Every `motion.defaults` setting of `clip`, measured against the floor scene's home pose."""
    from metaworld_x.envs.tasks.tracking import TrackingConfig
    from metaworld_x.motion.defaults import derive
    from metaworld_x.scene import build_model

    model = build_model("floor", "h1")
    control_dt = float(model.opt.timestep) * TrackingConfig().frame_skip
    return derive(clip, home_pose(model, clip.keypoint_names), control_dt)


def own_motion_spec(name: str, clip_file: Path, description: str, settings: dict, source: str = "",
                    **ppo_overrides) -> ExpertSpec:
    """The generic spec tracking the clip saved at `clip_file`, from its derived `settings` (`derive_settings`).

    `source`: the file the clip came from, recorded. `ppo_overrides`: PPOConfig fields (a short run's budget)."""
    tracking = {
        **settings["home_starts"].value,
        "action_scale": settings["action_scale"].value,
        "max_deviation": settings["max_deviation"].value,
        "episode_length": settings["episode_length"].value,
    }
    overrides = dict(ppo_overrides)
    ppo = ppo_settings(overrides.pop("total_env_steps", OWN_MOTION_STEPS), budget=TRACKING_ERROR_GOAL,
                       failure_error=settings["failure_error"].value, min_multiplier=settings["min_multiplier"].value,
                       **overrides)
    return ExpertSpec(
        name, description, (str(Path(clip_file).resolve()),), None, loop=settings["loop"].value, tracking=tracking,
        ppo=ppo, clip_settings={"source": source, **{key: s.record() for key, s in settings.items()}},
    )


def settings_lines(settings: dict) -> list[str]:
    """One line per derived setting: its name, value and why."""
    return [f"  {key}: {_shown(s.value)} ({s.why})" for key, s in settings.items()]


def _shown(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    return str(value)


__all__ = ["OWN_CLIP_FILE", "check_name", "check_trainable", "clip_from_file", "default_description", "derive_settings", "home_pose",
           "own_motion_spec", "settings_lines"]
