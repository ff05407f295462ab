"""Transition clips made from the library's cycles (metaworld_x.motion.edits.gait_transition): walk to run,
standing to crawl, and walking to a stop."""

from dataclasses import replace

import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.edits.gait_transition import (
    GaitCycle,
    TransitionConfig,
    blend_weight,
    from_rest,
    gait_transition,
    to_rest,
    transition_qpos,
)
from metaworld_x.motion.ik import home_qpos
from metaworld_x.motion.quality import GOALS
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import JOINT_NAMES, robot_spec
from metaworld_x.robot.constants import HOME_JOINT_POSE, HOME_ROOT_HEIGHT

FPS = 50


@pytest.fixture(scope="module")
def cycles():
    return read_clip(MOTIONS_DIR / "walk.npz"), read_clip(MOTIONS_DIR / "run.npz")


@pytest.fixture(scope="module")
def short_transition(cycles):
    walk, run = cycles
    config = TransitionConfig(before_s=1.3, ramp_s=1.5, total_s=5.0)
    return gait_transition(walk, run, "run", model=robot_spec("h1").compile(), config=config), config


def _speed(clip, start_s: float, stop_s: float) -> float:
    """Mean forward speed (m/s) of the root between two times."""
    start, stop = int(start_s * FPS), int(stop_s * FPS)
    return float((clip.root_pos[stop, 0] - clip.root_pos[start, 0]) / (stop_s - start_s))


def test_a_cycle_starts_at_left_touchdown_and_closes_on_itself(cycles):
    walk, run = cycles
    for clip in (walk, run):
        cycle = GaitCycle.of(clip)
        assert cycle.period == pytest.approx((clip.num_frames - 1) / clip.fps)
        joints, offset, rotation = cycle.at(np.array([0.0, 1.0 - 1e-9]))
        # One cycle on, the pose is the same: the gait is periodic in its phase.
        np.testing.assert_allclose(joints[0], joints[1], atol=1e-6)
        np.testing.assert_allclose(offset[0], offset[1], atol=1e-6)
        assert (rotation[0].inv() * rotation[1]).magnitude() < 1e-6
    assert GaitCycle.of(walk).stride == pytest.approx(1.17, abs=0.02)
    assert GaitCycle.of(run).stride == pytest.approx(2.66, abs=0.02)


def test_the_transition_walks_at_walk_speed_then_runs_at_run_speed(short_transition, cycles):
    clip, config = short_transition
    walk, run = (GaitCycle.of(c) for c in cycles)
    assert clip.num_frames == int(config.total_s * FPS) + 1
    assert _speed(clip, 0.0, walk.period) == pytest.approx(walk.stride / walk.period, rel=0.1)
    end = config.before_s + config.ramp_s
    assert _speed(clip, end, end + 3 * run.period) == pytest.approx(run.stride / run.period, rel=0.1)
    # Flight phases (both feet off the floor) only once running.
    both_up = ~clip.contacts.any(axis=1)
    assert not both_up[: int(config.before_s * FPS)].any()
    assert both_up[int(end * FPS):].mean() > 0.2


def test_the_transition_meets_the_library_quality_goals(short_transition):
    clip, _ = short_transition
    for figure, goal in GOALS.items():
        assert clip.quality[figure] <= goal, figure
    assert clip.info["transition"] == ["walk", "run"] and clip.info["loop"] is False


def test_the_shipped_run_start_is_the_transition_of_the_shipped_cycles():
    shipped = read_clip(MOTIONS_DIR / "run_start.npz")
    assert shipped.info["transition"] == ["walk", "run"]
    assert shipped.num_frames == int(TransitionConfig().total_s * FPS) + 1
    assert shipped.source_file == "humanoid3d_walk.txt + humanoid3d_run.txt"


def test_a_one_shot_clip_is_refused(cycles):
    walk, _ = cycles
    one_shot = replace(walk, info={**walk.info, "loop": False})
    with pytest.raises(UserError, match="not a looping cycle"):
        GaitCycle.of(one_shot)
    with pytest.raises(UserError, match="ramp_s > 0"):
        TransitionConfig(ramp_s=0.0)


@pytest.fixture(scope="module")
def crawl_from_rest():
    config = TransitionConfig(before_s=0.3, ramp_s=1.5, total_s=4.0)
    return from_rest(read_clip(MOTIONS_DIR / "crawl.npz"), "crawl", model=robot_spec("h1").compile(), config=config), config


def test_a_cycle_from_rest_starts_standing_in_the_home_pose_and_ends_crawling(crawl_from_rest):
    clip, config = crawl_from_rest
    home = np.array([HOME_JOINT_POSE.get(name, 0.0) for name in JOINT_NAMES])
    still = int(config.before_s * FPS)
    assert np.abs(clip.joint_pos[:still] - home).max() < 0.05
    assert abs(clip.root_pos[0, 2] - HOME_ROOT_HEIGHT) < 0.03 and np.ptp(clip.root_pos[:still], axis=0).max() < 0.01
    crawl = read_clip(MOTIONS_DIR / "crawl.npz")
    down = int((config.before_s + config.ramp_s) * FPS)
    assert clip.root_pos[down:, 2].max() < crawl.root_pos[:, 2].max() + 0.05  # down on hands and knees, and stays
    assert _speed(clip, config.before_s + config.ramp_s, config.total_s) > 0.7 * GaitCycle.of(crawl).stride / GaitCycle.of(crawl).period
    for figure, goal in GOALS.items():
        assert clip.quality[figure] <= goal, figure
    assert clip.info["transition"] == ["home", "crawl"]


def test_the_shipped_crawl_start_is_the_crawl_cycle_from_rest():
    shipped = read_clip(MOTIONS_DIR / "crawl_start.npz")
    assert shipped.info["transition"] == ["home", "crawl"] and shipped.skill == "crawl"
    assert shipped.num_frames == int(TransitionConfig().total_s * FPS) + 1
    assert shipped.root_pos[0, 2] == pytest.approx(HOME_ROOT_HEIGHT, abs=0.03)


def _forward_speed(qpos: np.ndarray, window: int) -> np.ndarray:
    """Root speed along +x (m/s), averaged over `window` frames: a gait's own sway cancels over a cycle."""
    return (qpos[window:, 0] - qpos[:-window, 0]) / (window / FPS)


def test_from_rest_a_speed_blend_ramps_the_speed_itself_and_a_cadence_blend_its_square(cycles):
    _, run = cycles
    cycle, still = GaitCycle.of(run), GaitCycle.still(home_qpos(robot_spec("h1").compile(), HOME_ROOT_HEIGHT))
    window = int(round(cycle.period * FPS))
    for speed_blend, power in ((True, 1), (False, 2)):
        config = TransitionConfig(before_s=0.0, ramp_s=6.0, total_s=9.0, speed_blend=speed_blend)
        qpos = transition_qpos(still, cycle, config, FPS)
        times = np.arange(len(qpos)) / FPS
        expected = blend_weight(times, config) ** power * cycle.speed
        measured = _forward_speed(qpos, window)
        centres = times[:-window] + window / FPS / 2  # a window's mean speed is the profile near its centre
        np.testing.assert_allclose(measured, np.interp(centres, times, expected), atol=0.15)
    # The speed blend keeps the run's cadence from the first frame (speed / stride, both 0 there), so the joints
    # swing at the run's period from the start, with the weight's amplitude.
    qpos = transition_qpos(still, cycle, TransitionConfig(before_s=0.0, ramp_s=6.0, total_s=9.0, speed_blend=True), FPS)
    assert np.isfinite(qpos).all()
    for seconds in (0.5, 3.0, 7.5):
        frame = int(seconds * FPS)
        weight = blend_weight(np.array([seconds]), TransitionConfig(before_s=0.0, ramp_s=6.0))[0]
        swing = cycle.at(np.array([seconds / cycle.period]))[0][0]
        np.testing.assert_allclose(qpos[frame, 7:], (1 - weight) * still.joint_pos[0] + weight * swing, atol=1e-5)


def test_the_shipped_run_rest_starts_at_home_and_speeds_up_no_faster_than_the_run_expert_can():
    shipped = read_clip(MOTIONS_DIR / "run_rest.npz")
    assert shipped.info["transition"] == ["home", "run"] and shipped.info["speed_blend"] is True
    home = np.array([HOME_JOINT_POSE.get(name, 0.0) for name in JOINT_NAMES])
    assert np.abs(shipped.joint_pos[0] - home).max() < 0.05
    run = GaitCycle.of(read_clip(MOTIONS_DIR / "run.npz"))
    window = int(round(run.period * FPS))
    speed = _forward_speed(shipped.root_pos, window)
    acceleration = np.diff(speed[::window]) / (window / FPS)  # cycle to cycle: the stride's own surge cancels
    # A run expert paid for speed went from rest to 4.4 m/s in about 4.5 s from home.
    assert acceleration.max() < 1.5
    ramp_end = int((shipped.info["before_s"] + shipped.info["ramp_s"]) * FPS)
    assert speed[ramp_end:].mean() == pytest.approx(run.speed, rel=0.05)
    for figure, goal in GOALS.items():
        assert shipped.quality[figure] <= goal, figure


def test_to_rest_walks_at_walk_speed_then_stops_in_the_home_pose_and_stands(cycles):
    walk, _ = cycles
    config = TransitionConfig(before_s=0.0, ramp_s=1.5, total_s=3.0, speed_blend=True)
    clip = to_rest(walk, "stop", model=robot_spec("h1").compile(), config=config)
    assert clip.info["transition"] == ["walk", "home"] and clip.skill == "stop"
    cycle = GaitCycle.of(walk)
    start_speed = (clip.root_pos[12, 0] - clip.root_pos[0, 0]) / (12 / FPS)  # about a step: the gait's surge evens out
    assert 0.7 * cycle.speed < start_speed < 1.4 * cycle.speed
    stopped = int((config.before_s + config.ramp_s) * FPS)
    assert np.ptp(clip.root_pos[stopped:, :2], axis=0).max() < 0.01, "still after the ramp"
    assert 0.3 < clip.root_pos[stopped, 0] < cycle.speed * config.ramp_s, "it runs out under the ramp at full speed"
    home = np.array([HOME_JOINT_POSE.get(name, 0.0) for name in JOINT_NAMES])
    assert np.abs(clip.joint_pos[-1] - home).max() < 0.05 and clip.contacts[stopped:].all(), "both feet down at home"
    for figure, goal in GOALS.items():
        assert clip.quality[figure] <= goal, figure


def test_the_shipped_walk_stop_is_the_walk_slowed_to_rest():
    shipped = read_clip(MOTIONS_DIR / "walk_stop.npz")
    assert shipped.info["transition"] == ["walk", "home"] and shipped.skill == "stop" and shipped.info["speed_blend"]
    assert not shipped.info["loop"], "a one-shot clip: it holds its last frame, standing"
    speed = np.linalg.norm(np.diff(shipped.root_pos[:, :2], axis=0), axis=1) * FPS
    assert speed[:3].mean() > 0.7 and speed[-50:].max() < 0.01
