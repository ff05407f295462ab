"""scripts/trace_fetch.py: one episode's line, read from a traced log made here by hand."""

import importlib.util

import numpy as np

from metaworld_x.paths import PROJECT_DIR


def _script():
    spec = importlib.util.spec_from_file_location("trace_fetch", PROJECT_DIR / "scripts" / "trace_fetch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log(steps: int = 12) -> dict:
    """One world: sub-goals at steps 2, 4, 6 and 9; the box comes down 12 cm short at step 7, leans 40°
    at step 8, and the episode falls at step 10, whose view is already the reset world's."""
    phase = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 0, 0])[:steps, None]
    offset = np.tile([[-0.3, 0.0, 0.4]], (steps, 1))
    offset[7:10] = [[-0.12, 0.03, 0.08], [-0.05, 0.03, 0.02], [-0.01, 0.0, 0.0]]
    offset[10:] = [1.8, 0.0, 0.5]  # the reset world's box, back on its stand
    tilt = np.zeros(steps)
    tilt[8], tilt[9], tilt[10] = 40.0, 12.0, 0.0
    alive = np.arange(steps)[:, None] <= 10
    reason = np.zeros((steps, 1), int)
    reason[10] = 2
    clip_box = np.tile([[0.21, 0.20]], (steps, 1))  # the clip's box 21 cm from its place and 20 cm above it
    held = np.tile([[0.27, 0.0, -0.14]], (steps, 1))  # the box 27 cm ahead of the pelvis and 14 cm below it
    held[10:] = [0.9, 0.0, -0.6]  # the reset world's box, back on its stand
    clip_held = np.tile([[0.34, 0.0, -0.08]], (steps, 1))
    # the clip's pelvis walks along +y (turned 90° left), 1 m high; the robot's lags it by 6 cm, 2 cm to its right
    clip_root = np.stack([np.zeros(steps), 0.1 * np.arange(steps), np.ones(steps)], axis=1)
    clip_root_quat = np.tile([[np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)]], (steps, 1))
    root = clip_root + [0.02, -0.06, -0.03]
    # the palms on the box's side faces, 21.7 cm either side of its centre and 1.5 cm above it; at step 8 they open
    # to 24 cm and the box slips to 5 cm below them
    palms = np.tile([[[0.0, 0.217, 0.015], [0.0, -0.217, 0.015]]], (steps, 1, 1))
    palms[8] = [[0.0, 0.24, 0.05], [0.0, -0.24, 0.05]]
    return {"phase": phase, "offset": offset[:, None], "held": held[:, None], "palms": palms[:, None],
            "root": root[:, None], "tilt": tilt[:, None],
            "alive": alive, "reason": reason, "reasons": ("none", "time_limit", "fall"), "clip_box": clip_box,
            "clip_held": clip_held, "clip_root": clip_root, "clip_root_quat": clip_root_quat}


def test_an_episode_line_gives_each_subgoal_step_the_lowering_and_the_end_before_the_reset():
    line = _script().episode_line(_log(), 0)
    assert line.split()[:5] == ["0", "2", "4", "6", "9"]
    assert "lowered at 7: -12 +3 cm off (clip: 21 away, 20 up); lean 40°" in line
    assert "end 11 (fall)" in line
    assert "the box 1 cm off its place, leaning 12°" in line  # step 9's box, not the reset world's


def test_a_subgoal_never_reached_and_a_box_never_lowered_are_said_so():
    log = _log()
    log["phase"] = np.minimum(log["phase"], 2)
    log["offset"][:, 0, 2] = 0.4
    line = _script().episode_line(log, 0)
    assert line.split()[:5] == ["0", "2", "4", "—", "—"]
    assert "never lowered onto the table" in line


def test_the_reach_line_averages_the_running_episodes_and_sets_the_clip_beside_them():
    log = _log()
    # A second world, 31 cm ahead and 10 cm down, that ends on step 5 (its later views are the reset world's).
    for key, value in (("held", [0.31, 0.0, -0.10]), ("offset", [-0.3, 0.0, 0.4]), ("tilt", 0.0)):
        log[key] = np.concatenate([log[key], np.broadcast_to(value, log[key][:, :1].shape)], axis=1)
    log["alive"] = np.concatenate([log["alive"], np.arange(12)[:, None] <= 5], axis=1)
    script = _script()
    assert script.reach_line(log, 4) == (
        "   4  robot  29.0 ± 2.0 ahead, -12.0 ± 2.0 up (2 episodes);  clip  34.0 ahead,  -8.0 up")
    assert "(1 episodes)" in script.reach_line(log, 5)  # the second world's episode ended on step 5
    assert script.reach_line(log, 10) == "  10  no episode still running"


def test_the_pelvis_line_gives_the_robots_pelvis_in_the_clip_pelvis_heading_frame():
    log = _log()
    script = _script()
    # the clip faces +y, so the robot's 6 cm less y is 6 cm behind, and its 2 cm more x is 2 cm to the right
    assert script.pelvis_line(log, 4) == "   4   -6.0 ± 0.0 ahead,  -2.0 ± 0.0 left,  -3.0 ± 0.0 up"
    assert script.pelvis_line(log, 10) == "  10  no episode still running"


def test_the_grip_line_gives_the_palms_gap_across_the_box_and_the_box_below_them():
    script = _script()
    assert script.grip_line(_log(), 4) == "   4  palms  43.4 ± 0.0 cm apart, box   1.5 ± 0.0 cm below them"
    assert script.grip_line(_log(), 8) == "   8  palms  48.0 ± 0.0 cm apart, box   5.0 ± 0.0 cm below them"
    assert script.grip_line(_log(), 10) == "  10  no episode still running"
