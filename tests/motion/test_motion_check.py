"""`metaworld-x motion check`: each problem is found on a clip made to have it, a clean clip passes, bad input is one
line with exit status 2."""

import sys
from pathlib import Path

import numpy as np
import pytest

from metaworld_x.cli import main
from metaworld_x.cli.motion import PROBLEMS_FOUND
from metaworld_x.motion.clip import save_clip
from metaworld_x.motion.support import support_trace
from metaworld_x.robot import robot_spec

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from robot_clips import clip_from_poses, joint, poses  # noqa: E402


def _check(capsys, path) -> tuple[int, str, str]:
    code = main(["motion", "check", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _verdicts(out: str) -> dict[str, str]:
    """{check: 'ok' or 'PROBLEM'} from the report's lines."""
    found = {}
    for line in out.splitlines():
        for check in ("joint limits", "self-collision", "floor", "balance", "joint speed"):
            if line.startswith(check + " ") and ": " in line:
                found[check] = line[len(check):].split(":")[0].strip()
    return found


def _waving(seconds: float = 2.0) -> np.ndarray:
    """[T, 19] home with the arms swinging gently: a clip the robot can follow."""
    times, joints = poses(seconds)
    joints[:, joint("left_shoulder_pitch")] += 0.3 * np.sin(2 * np.pi * times / seconds)
    joints[:, joint("right_shoulder_pitch")] -= 0.3 * np.sin(2 * np.pi * times / seconds)
    return joints


def test_a_clip_the_robot_can_follow_is_clean(capsys, tmp_path):
    path = save_clip(clip_from_poses(_waving()), tmp_path / "wave.npz")
    code, out, err = _check(capsys, path)
    assert code == 0, out + err
    assert set(_verdicts(out).values()) == {"ok"} and len(_verdicts(out)) == 5, out
    assert "clean" in out


def _flagged(capsys, tmp_path, clip, expected: str, *fragments: str) -> str:
    path = save_clip(clip, tmp_path / f"{expected.replace(' ', '_')}.npz")
    code, out, err = _check(capsys, path)
    assert code == PROBLEMS_FOUND == 1, out + err
    verdicts = _verdicts(out)
    assert verdicts[expected] == "PROBLEM", out
    assert [check for check, verdict in verdicts.items() if verdict == "PROBLEM"] == [expected], out
    line = next(line for line in out.splitlines() if line.startswith(expected))
    for fragment in fragments:
        assert fragment in line, line
    assert "fix: " in out.split(line, 1)[1].splitlines()[1], out  # the fix follows on the next line
    return out


def test_a_joint_past_its_range_is_named(capsys, tmp_path):
    joints = _waving()
    joints[40:60, joint("left_knee")] = -0.5  # the knee's range starts at -0.26
    _flagged(capsys, tmp_path, clip_from_poses(joints), "joint limits", "left_knee", "past its range at 0.80-1.18 s")


def test_an_arm_through_the_torso_is_a_self_collision(capsys, tmp_path):
    times, _ = poses(2.0)
    # the upper arm turned inwards and forward a little, the elbow straight: the forearm passes through the chest;
    # eased in and out over 0.4 s, so that no joint turns faster than its motor
    through = _waving()
    through[:, joint("left_shoulder_yaw")] = -1.3
    through[:, joint("left_shoulder_pitch")] = 0.5
    through[:, joint("left_elbow")] = 0.0
    blend = (np.clip((times - 0.6) / 0.4, 0, 1) * np.clip((1.9 - times) / 0.4, 0, 1))[:, None]
    joints = (1 - blend) * _waving() + blend * through
    _flagged(capsys, tmp_path, clip_from_poses(joints), "self-collision", "left_elbow_link into torso_link", "cm")


def test_a_body_below_the_floor_is_found(capsys, tmp_path):
    joints = _waving()
    clip = clip_from_poses(joints)
    root = clip.root_pos.copy()
    root[:, 2] -= 0.05  # 5 cm down: the feet in the floor
    _flagged(capsys, tmp_path, clip_from_poses(joints, root_pos=root), "floor", "below the floor")


def test_a_centre_of_mass_off_its_feet_for_long_is_found(capsys, tmp_path):
    model = robot_spec("h1").compile()
    times, joints = poses(2.0)
    pitch = np.radians(25) * np.clip(times / 0.2, 0, 1)  # leaning 25° forward over the toes, held
    quat = np.stack([np.cos(pitch / 2), np.zeros_like(pitch), np.sin(pitch / 2), np.zeros_like(pitch)], axis=-1)
    leaning = clip_from_poses(joints, root_quat=quat)
    root = leaning.root_pos.copy()
    root[:, 2] -= support_trace(model, leaning.qpos, leaning.fps).height  # the lowest point on the floor
    clip = clip_from_poses(joints, root_pos=root, root_quat=quat)
    _flagged(capsys, tmp_path, clip, "balance", "past the support polygon")


def test_joints_faster_than_their_motors_are_found(capsys, tmp_path):
    times, joints = poses(2.0)
    # 5 Hz at 0.5 rad: up to 15.7 rad/s where the shoulder's motor turns at 9
    joints[:, joint("right_shoulder_pitch")] += 0.5 * np.sin(2 * np.pi * 5 * times)
    out = _flagged(capsys, tmp_path, clip_from_poses(joints), "joint speed", "right_shoulder_pitch", "motor limit 9")
    assert "times slower" in out


@pytest.mark.parametrize("make, expected", [
    (lambda tmp: tmp / "missing.npz", "no such motion file"),
    (lambda tmp: (tmp / "bad.npz").write_bytes(b"not a zip") and tmp / "bad.npz", "not a readable clip"),
    (lambda tmp: (tmp / "notes.csv").write_text("1,2") and tmp / "notes.csv", "unknown motion format '.csv'"),
])
def test_bad_input_is_one_line_and_exit_status_2(capsys, tmp_path, make, expected):
    code, out, err = _check(capsys, make(tmp_path))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in err, err


def test_a_deepmimic_file_is_retargeted_then_checked(capsys, shared):
    source = shared / "mocap" / "deepmimic" / "humanoid3d_getup_faceup.txt"
    if not source.is_file():
        pytest.skip(f"{source} is absent")
    code, out, err = _check(capsys, source)
    # the get-up's arms pass through the body and swing faster than the shoulder motors turn
    assert code == PROBLEMS_FOUND, out + err
    verdicts = _verdicts(out)
    assert verdicts["self-collision"] == verdicts["joint speed"] == "PROBLEM", out
    assert verdicts["joint limits"] == verdicts["floor"] == "ok", out
