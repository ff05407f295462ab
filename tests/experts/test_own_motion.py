"""Experts on a user's own motion: the settings derived from a clip move as the clip asks, and `train expert NAME
--clip` ships an expert that `eval expert` and `play --expert` load from its spec.json alone."""

import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from metaworld_x.cli import main
from metaworld_x.experts.specs import EXPERT_ACTION_SCALE, EXPERTS, HOME_STARTS, OWN_CLIP_FILE, installed_spec
from metaworld_x.motion.clip import save_clip
from metaworld_x.experts.own_motion import derive_settings
from metaworld_x.paths import MOTIONS_DIR

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from robot_clips import clip_from_poses, home_joints, joint, poses  # noqa: E402


def _swing(seconds: float, cycles: float, amplitude: float = 0.4, phase: float = 0.0) -> np.ndarray:
    """[T, 19] home with the arms swinging `cycles` times over the clip, starting `phase` (rad) into a swing."""
    times, joints = poses(seconds)
    wave = amplitude * np.sin(2 * np.pi * cycles * times / seconds + phase)
    joints[:, joint("left_shoulder_pitch")] += wave
    joints[:, joint("right_shoulder_pitch")] -= wave
    return joints


def _rest_to_rest(seconds: float, pose: np.ndarray) -> np.ndarray:
    """[T, 19] from home to `pose` [19] and back, still at both ends (a half cosine each way)."""
    times, joints = poses(seconds)
    weight = 0.5 - 0.5 * np.cos(2 * np.pi * times / seconds)
    return joints + weight[:, None] * (pose - home_joints())[None]


# ---- each derived setting moves as the clip asks ------------------------------------------------


def test_a_cycle_loops_and_a_motion_that_stops_or_does_not_meet_its_start_holds_its_last_frame():
    cycle = derive_settings(clip_from_poses(_swing(1.0, cycles=1.0)))
    assert cycle["loop"].value is True and cycle["loop"].why.startswith("loops")
    # three quarters of a swing: it starts mid-swing and ends with the arms out, far from where they began
    half = derive_settings(clip_from_poses(_swing(1.0, cycles=0.75, amplitude=0.8)))
    assert half["loop"].value is False and "does not meet its first" in half["loop"].why
    pose = home_joints()
    pose[joint("left_shoulder_roll")] += 0.8
    still = derive_settings(clip_from_poses(_rest_to_rest(2.0, pose)))  # ends where it began, at rest
    assert still["loop"].value is False and "at rest" in still["loop"].why
    # a loop's episode is the shipped length; a one-shot clip's covers it and a second of balance (50 steps)
    assert cycle["episode_length"].value == 500
    assert still["episode_length"].value == 100 + 50


def test_home_starts_only_where_the_clip_starts_near_home():
    pose = home_joints()
    pose[joint("left_shoulder_roll")] += 0.5
    near = derive_settings(clip_from_poses(_rest_to_rest(2.0, pose)))
    assert near["home_starts"].value == {**HOME_STARTS, "home_start_time": 0.0}
    # the same motion started crouched, the pelvis 0.3 m lower: a robot at home would first have to get there
    _, joints = poses(2.0)
    for side in ("left", "right"):
        joints[:, joint(f"{side}_hip_pitch")] = -1.2
        joints[:, joint(f"{side}_knee")] = 2.0
        joints[:, joint(f"{side}_ankle")] = -0.8
    root = np.tile([0.0, 0.0, 0.68], (len(joints), 1))
    far = derive_settings(clip_from_poses(joints, root_pos=root))
    assert far["home_starts"].value == {} and "no starts from the home pose" in far["home_starts"].why


def test_the_action_scale_reaches_the_clips_farthest_excursion_ankles_aside():
    small = derive_settings(clip_from_poses(_swing(2.0, cycles=1.0, amplitude=0.3)))
    assert small["action_scale"].value == EXPERT_ACTION_SCALE
    # the left shoulder roll's range is [-0.34, 3.11]: 2.4 rad from home is 1.39 of its half range
    pose = home_joints()
    pose[joint("left_shoulder_roll")] = 2.4
    wide = derive_settings(clip_from_poses(_rest_to_rest(2.0, pose)))
    assert wide["action_scale"].value == pytest.approx(1.45)  # 1.39 + 0.02, rounded up to 0.05
    assert "left_shoulder_roll" in wide["action_scale"].why
    ankle = home_joints()
    ankle[joint("left_ankle")] = 0.5  # far past 0.5 of its half range from home, but a foot on the floor turns it
    assert derive_settings(clip_from_poses(_rest_to_rest(2.0, ankle)))["action_scale"].value == EXPERT_ACTION_SCALE


def test_a_fast_turning_body_widens_the_deviation_limit_and_the_failure_charge_with_it():
    calm = derive_settings(clip_from_poses(_swing(2.0, cycles=1.0)))
    assert calm["max_deviation"].value == calm["failure_error"].value == 0.5
    times, joints = poses(2.0)
    yaw = 8.0 * times  # the pelvis spinning at 8 rad/s about the vertical
    quat = np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], axis=-1)
    spin = derive_settings(clip_from_poses(joints, root_quat=quat))
    assert 0.5 < spin["max_deviation"].value <= 1.0
    assert spin["failure_error"].value == spin["max_deviation"].value
    assert calm["min_multiplier"].value == spin["min_multiplier"].value == 2.0


# ---- the one command, and loading what it ships -----------------------------------------------


@pytest.mark.parametrize("args, expected", [
    (("train", "expert", "walk", "--clip", "x.npz"), "'walk' is a shipped expert"),
    (("train", "expert", "Hop!", "--clip", "x.npz"), "must be lower-case letters"),
    (("train", "expert", "hop", "--clip", "missing.npz"), "no such motion file"),
    (("train", "expert", "walk", "--describe", "a walk"), "add --clip"),
    (("train", "expert", "my_push", "--clip", str(MOTIONS_DIR / "push.npz")), "moves scene props (box)"),
    (("eval", "expert", "hop"), "train expert hop --clip FILE"),
])
def test_bad_input_is_one_line_and_exit_status_2(capsys, tmp_path, monkeypatch, args, expected):
    monkeypatch.chdir(tmp_path)
    code = main(list(args))
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and expected in err and "Traceback" not in err, err


@pytest.fixture
def compilation_cache(tmp_path):
    """A JAX compilation cache on disk for this test: `eval expert` then compiles nothing that shipping, which
    evaluated the same expert with the same clip read from another path, compiled already (51 s -> 9 s here)."""
    import jax
    from jax._src import compilation_cache as cache

    settings = {"jax_compilation_cache_dir": str(tmp_path / "jax_cache"), "jax_persistent_cache_min_compile_time_secs": 0,
                "jax_persistent_cache_min_entry_size_bytes": 0}
    before = {name: getattr(jax.config, name) for name in settings}
    for name, value in settings.items():
        jax.config.update(name, value)
    cache.reset_cache()  # the cache reads its settings once, at the process's first compilation
    yield
    for name, value in before.items():
        jax.config.update(name, value)
    cache.reset_cache()


def test_train_expert_with_a_clip_ships_an_expert_that_eval_and_play_load(capsys, tmp_path, compilation_cache):
    clip_file = save_clip(clip_from_poses(_swing(1.0, cycles=0.5, amplitude=0.3, phase=np.pi / 2), skill="wave"), tmp_path / "in.npz")
    experts = tmp_path / "experts"
    code = main(["train", "expert", "gentle_wave", "--clip", str(clip_file), "--describe", "wave both arms gently",
                 "--total-env-steps", "32", "--num-envs", "8", "--unroll-length", "4", "--num-minibatches", "2",
                 "--eval-every", "0", "--no-video", "--run-dir", str(tmp_path / "run"), "--out", str(experts / "gentle_wave")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "action_scale: 0.5" in out and "loop: False" in out  # the settings are printed with their reasons
    folder = experts / "gentle_wave"
    assert "gentle_wave" not in EXPERTS and (folder / OWN_CLIP_FILE).is_file()
    spec = json.loads((folder / "spec.json").read_text())
    settings = spec["clip_settings"]
    assert settings["source"] == str(clip_file)
    assert {"loop", "home_starts", "action_scale", "max_deviation", "failure_error", "min_multiplier",
            "episode_length"} <= set(settings)
    assert all(settings[key]["why"] for key in settings if key != "source")
    assert spec["tracking"]["episode_length"] == settings["episode_length"]["value"] == 100
    assert spec["ppo"]["constraint"]["min_multiplier"] == 2.0 and spec["objective"] is None
    # the router loads it from spec.json, and its language prior reads the description
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.pipeline import expert_catalog
    from metaworld_x.routing.scene import load_expert_spec

    routed, scale = load_expert_spec(folder)
    assert routed.clips == (str((folder / OWN_CLIP_FILE).resolve()),) and scale == settings["action_scale"]["value"]
    catalog = expert_catalog(ExpertSet.load({"gentle_wave": folder}))
    assert catalog.descriptions["gentle_wave"] == "wave both arms gently"

    # moved elsewhere, the folder still finds its clip
    moved = tmp_path / "elsewhere" / "gentle_wave"
    shutil.copytree(folder, moved)
    assert installed_spec("gentle_wave", moved).clips == (str((moved / OWN_CLIP_FILE).resolve()),)

    code = main(["eval", "expert", "gentle_wave", "--expert-dir", str(moved)])
    out = capsys.readouterr().out
    assert code == 0, out
    # the figures the expert shipped with, now measured from its moved folder: the same episodes, the same outcome
    shipped = json.loads((folder / "metrics.json").read_text())
    assert f"success: {shipped['success']}/10" in out and "from the home pose: success " in out, out
    assert f"tracking error: {shipped['tracking_error_m'] * 100:.1f} cm" in out and "goals: " in out, out
    code = main(["play", "--expert", "gentle_wave", "--experts-dir", str(moved.parent), "--steps", "5",
                 "--video", str(tmp_path / "wave.mp4"), "--width", "64", "--height", "48", "--no-shadows", "--no-plots"])
    out = capsys.readouterr().out
    assert code == 0 and "return: " in out, out
    assert (tmp_path / "wave.mp4").stat().st_size > 0
    assert math.isfinite(float(next(line for line in out.splitlines() if line.startswith("return: ")).split()[1]))


def test_a_deepmimic_file_is_retargeted_first(shared, tmp_path):
    source = shared / "mocap" / "deepmimic" / "humanoid3d_jump.txt"
    if not source.is_file():
        pytest.skip(f"{source} is absent")
    from metaworld_x.experts.own_motion import clip_from_file, own_motion_spec

    clip = clip_from_file(source, "jump")
    settings = derive_settings(clip)
    assert clip.skill == "jump" and clip.quality["limit_violations"] == 0
    spec = own_motion_spec("jump", save_clip(clip, tmp_path / "clip.npz"), "jump", settings, source=str(source))
    assert spec.tracking["action_scale"] == settings["action_scale"].value > EXPERT_ACTION_SCALE
    assert spec.ppo.constraint.failure_error == settings["failure_error"].value
