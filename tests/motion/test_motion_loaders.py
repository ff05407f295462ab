"""Human motion loaders: BVH forward kinematics, bad input, unit detection, shared clips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion import CANONICAL_KEYPOINTS, HumanMotion, canonical_keypoints, load_human_motion
from metaworld_x.motion.bvh import load_bvh
from metaworld_x.motion.deepmimic import load_deepmimic
from metaworld_x.paths import shared_dir

# A small legged robot, in centimetres, y-up: (name, parent, offset, channels).
# Channel orders differ per joint on purpose; "foot" has an End Site below.
ROBOT = (
    ("pelvis", None, (0.0, 0.0, 0.0), "Xposition Yposition Zposition Xrotation Zrotation Yrotation"),
    ("torso", "pelvis", (0.0, 25.0, 2.0), "Xrotation Zrotation Yrotation"),
    ("head", "torso", (0.0, 30.0, 0.0), "Zrotation Xrotation Yrotation"),
    ("left_thigh", "pelvis", (10.0, -5.0, 0.0), "Yrotation Xrotation Zrotation"),
    ("left_shin", "left_thigh", (0.0, -42.0, 0.0), "Xrotation Zrotation Yrotation"),
    ("left_foot", "left_shin", (0.0, -42.0, 3.0), "Zrotation Yrotation Xrotation"),
)
END_SITES = {"head": (0.0, 20.0, 0.0), "left_foot": (0.0, -5.0, 10.0)}
# Lines from MOTION to the first frame line: MOTION, Frames:, Frame Time:.
HEADER_LINES = 3


def _elementary(axis: str, degrees: float) -> np.ndarray:
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return {
        "X": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
        "Y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
        "Z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
    }[axis]


def _hierarchy_text() -> str:
    children = {name: [child for child, parent, _, _ in ROBOT if parent == name] for name, *_ in ROBOT}
    spec = {name: (offset, channels) for name, _, offset, channels in ROBOT}

    def block(name: str, depth: int) -> list[str]:
        pad = "  " * depth
        offset, channels = spec[name]
        lines = [f"{pad}{'ROOT' if depth == 0 else 'JOINT'} {name}", f"{pad}{{",
                 f"{pad}  OFFSET {offset[0]} {offset[1]} {offset[2]}",
                 f"{pad}  CHANNELS {len(channels.split())} {channels}"]
        for child in children[name]:
            lines += block(child, depth + 1)
        if name in END_SITES:
            end = END_SITES[name]
            lines += [f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET {end[0]} {end[1]} {end[2]}", f"{pad}  }}"]
        return lines + [f"{pad}}}"]

    return "\n".join(["HIERARCHY"] + block("pelvis", 0))


def _robot_frames(count: int = 5) -> np.ndarray:
    rng = np.random.default_rng(0)
    frames = []
    for _ in range(count):
        row = []
        for name, _, _, channels in ROBOT:
            for channel in channels.split():
                if channel.endswith("position"):
                    row.append({"X": 3.0, "Y": 95.0, "Z": -7.0}[channel[0]] + rng.uniform(-5, 5))
                else:
                    row.append(rng.uniform(-60, 60))
        frames.append(row)
    return np.array(frames)


def _write_bvh(path: Path, frames: np.ndarray, frame_count: int | None = None) -> Path:
    count = len(frames) if frame_count is None else frame_count
    lines = [_hierarchy_text(), "MOTION", f"Frames: {count}", "Frame Time: 0.0333333"]
    lines += [" ".join(f"{value:.6f}" for value in row) for row in frames]
    path.write_text("\n".join(lines) + "\n")
    return path


def _first_frame_line(path: Path) -> int:
    lines = path.read_text().splitlines()
    return lines.index("MOTION") + HEADER_LINES + 1


def _expected_world(frames: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{joint: ([T, 3] position, [T, 3, 3] orientation)} in cm, y-up, by 4x4 chaining."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, _, _, _ in ROBOT:
        out[name] = (np.zeros((len(frames), 3)), np.zeros((len(frames), 3, 3)))
    for t, row in enumerate(frames):
        column, world = 0, {}
        for name, parent, offset, channels in ROBOT:
            transform, translation, rotation = np.eye(4), np.array(offset, dtype=float), np.eye(3)
            for channel in channels.split():
                value = row[column]
                column += 1
                if channel.endswith("position"):
                    translation["XYZ".index(channel[0])] = value
                else:
                    rotation = rotation @ _elementary(channel[0], value)
            transform[:3, :3], transform[:3, 3] = rotation, translation
            world[name] = transform if parent is None else world[parent] @ transform
            out[name][0][t] = world[name][:3, 3]
            out[name][1][t] = world[name][:3, :3]
    return out


def _to_z_up_metres(points: np.ndarray) -> np.ndarray:
    # BVH y-up, facing +z  ->  z-up, facing +x: (x, y, z) -> (z, x, y).
    return points[..., [2, 0, 1]] / 100.0


def test_bvh_round_trip_matches_independent_kinematics(tmp_path):
    frames = _robot_frames()
    motion = load_bvh(_write_bvh(tmp_path / "robot.bvh", frames), units="cm")
    expected = _expected_world(frames)
    y_up_to_z_up = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    for name, (position, orientation) in expected.items():
        np.testing.assert_allclose(motion.joint(name), _to_z_up_metres(position), atol=1e-3)
        got = Rotation.from_quat(motion.rotations[:, motion.joint_names.index(name)], scalar_first=True)
        np.testing.assert_allclose(got.as_matrix(), y_up_to_z_up @ orientation, atol=1e-6)
    foot = expected["left_foot"]
    toe = foot[0] + np.einsum("tij,j->ti", foot[1], END_SITES["left_foot"])
    np.testing.assert_allclose(motion.joint("left_foot_end"), _to_z_up_metres(toe), atol=1e-3)
    assert motion.fps == 30.0 and motion.num_frames == len(frames)


def test_bvh_detects_units_and_up_axis_and_reports_them(tmp_path):
    path = _write_bvh(tmp_path / "robot.bvh", _robot_frames())
    motion = load_bvh(path)
    meta = motion.metadata
    assert (meta["units"], meta["units_source"], meta["up_axis"], meta["up_axis_source"]) == (
        "cm", "detected", "y", "detected",
    )
    assert meta["scale"] == 0.01

    in_metres = load_bvh(path, units="m", up_axis="z")
    assert (in_metres.metadata["units_source"], in_metres.metadata["up_axis_source"]) == ("given", "given")
    # Given units and axis are taken as they are: no scaling, no rotation.
    raw = _expected_world(_robot_frames())["head"][0]
    np.testing.assert_allclose(in_metres.joint("head"), raw, atol=1e-6)
    assert load_bvh(path, scale=0.02).metadata["units"] == "custom"
    with pytest.raises(UserError, match="pass one"):
        load_bvh(path, units="cm", scale=0.02)


def test_bvh_refuses_to_guess_units_of_a_tiny_skeleton(tmp_path):
    text = _write_bvh(tmp_path / "robot.bvh", _robot_frames()).read_text()
    tiny = re.sub(r"OFFSET (\S+) (\S+) (\S+)", lambda m: "OFFSET " + " ".join(
        str(float(v) / 30) for v in m.groups()), text)
    (tmp_path / "tiny.bvh").write_text(tiny)
    with pytest.raises(UserError, match="cannot tell the units"):
        load_bvh(tmp_path / "tiny.bvh")
    assert load_bvh(tmp_path / "tiny.bvh", scale=0.3).metadata["scale"] == 0.3


def test_bvh_drops_a_leading_rest_pose_only_when_there_is_one(tmp_path):
    frames = _robot_frames()
    assert load_bvh(_write_bvh(tmp_path / "moving.bvh", frames)).metadata["skipped_frames"] == 0
    rest = frames.copy()
    rest[0, 3:] = 0.0  # every rotation zero, root position kept
    motion = load_bvh(_write_bvh(tmp_path / "tpose.bvh", rest))
    assert motion.metadata["tpose_detected"] and motion.num_frames == len(frames) - 1
    assert load_bvh(tmp_path / "tpose.bvh", skip_frames=0).num_frames == len(frames)


def test_truncated_motion_names_file_and_line(tmp_path):
    frames = _robot_frames(5)
    path = _write_bvh(tmp_path / "truncated.bvh", frames[:3], frame_count=5)
    end_line = _first_frame_line(path) + 3
    with pytest.raises(UserError, match=rf"truncated\.bvh, line {end_line}: .*ends after 3 frames"):
        load_bvh(path)


def test_wrong_channel_count_names_file_and_line(tmp_path):
    path = _write_bvh(tmp_path / "short_line.bvh", _robot_frames(5))
    lines = path.read_text().splitlines()
    bad_line = _first_frame_line(path) + 2
    lines[bad_line - 1] = " ".join(lines[bad_line - 1].split()[:-1])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=rf"short_line\.bvh, line {bad_line}: .*declares 21 channels"):
        load_bvh(path)


def test_non_numeric_value_names_file_and_line(tmp_path):
    path = _write_bvh(tmp_path / "word.bvh", _robot_frames(5))
    lines = path.read_text().splitlines()
    bad_line = _first_frame_line(path) + 4
    values = lines[bad_line - 1].split()
    values[7] = "oops"
    lines[bad_line - 1] = " ".join(values)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=rf"word\.bvh, line {bad_line}: non-numeric value 'oops'"):
        load_bvh(path)


def test_missing_sections_name_file_and_line(tmp_path):
    good = _write_bvh(tmp_path / "good.bvh", _robot_frames()).read_text()
    (tmp_path / "no_motion.bvh").write_text(good.split("MOTION")[0])
    with pytest.raises(UserError, match=r"no_motion\.bvh, line \d+: no MOTION section"):
        load_bvh(tmp_path / "no_motion.bvh")
    (tmp_path / "no_hierarchy.bvh").write_text(good.replace("HIERARCHY", "HIERARCHI"))
    with pytest.raises(UserError, match=r"no_hierarchy\.bvh, line 1: .*HIERARCHY"):
        load_bvh(tmp_path / "no_hierarchy.bvh")
    bad_offset = good.replace("OFFSET 0.0 25.0 2.0", "OFFSET 0.0 x 2.0")
    (tmp_path / "bad_offset.bvh").write_text(bad_offset)
    line = bad_offset.splitlines().index("    OFFSET 0.0 x 2.0") + 1
    with pytest.raises(UserError, match=rf"bad_offset\.bvh, line {line}: OFFSET needs 3 numbers"):
        load_bvh(tmp_path / "bad_offset.bvh")


def _two_joint_motion(frames: int = 121, fps: float = 120.0) -> HumanMotion:
    t = np.arange(frames) / fps
    positions = np.stack([np.stack([t, 0 * t, 0 * t + 1], -1), np.stack([t, 0 * t + 1, 0 * t], -1)], axis=1)
    angle = np.pi / 2 * t / t[-1]
    quats = np.stack([np.cos(angle / 2), 0 * angle, 0 * angle, np.sin(angle / 2)], -1)
    pose = np.concatenate([quats, positions[:, 0]], axis=-1)
    return HumanMotion(("a", "b"), (-1, 0), positions, fps, "mem", pose, np.stack([quats, quats], 1))


def test_resample_and_trim_keep_time_and_interpolate():
    motion = _two_joint_motion()
    slow = motion.resample(30.0)
    assert slow.num_frames == 31 and slow.duration == pytest.approx(motion.duration)
    np.testing.assert_allclose(slow.joint("a")[:, 0], slow.times, atol=1e-12)
    # Slerp keeps a constant-rate rotation about z at constant rate.
    yaw = Rotation.from_quat(slow.rotations[:, 0], scalar_first=True).as_euler("xyz")[:, 2]
    np.testing.assert_allclose(yaw, np.pi / 2 * slow.times / slow.duration, atol=1e-9)
    middle = motion.trim(0.25, 0.5)
    assert middle.num_frames == 31 and middle.object_pose.shape == (31, 7)
    np.testing.assert_allclose(middle.joint("a")[0, 0], 0.25)
    with pytest.raises(UserError, match="holds no frames"):
        motion.trim(5.0, 6.0)


def test_played_faster_the_same_poses_take_less_time():
    motion = _two_joint_motion()  # joint a moves along x at 1 m/s for 1 s
    fast = motion.played_at(1.25)
    np.testing.assert_array_equal(fast.positions, motion.positions)
    assert fast.duration == pytest.approx(motion.duration / 1.25)
    speed = np.diff(fast.joint("a")[:, 0]) * fast.fps
    np.testing.assert_allclose(speed, 1.25)
    assert fast.played_at(2.0).metadata["playback_rate"] == pytest.approx(2.5)
    with pytest.raises(UserError, match="playback rate must be a positive number"):
        motion.played_at(0.0)


def test_bad_motion_arrays_are_named():
    good = _two_joint_motion(4)
    with pytest.raises(UserError, match="no joint named 'c'.*a, b"):
        good.joint("c")
    broken = good.positions.copy()
    broken[2, 1, 0] = np.nan
    with pytest.raises(UserError, match="non-finite.*frame 2, joint 'b'"):
        HumanMotion(("a", "b"), (-1, 0), broken, 30.0, "mem")
    with pytest.raises(UserError, match=r"positions must be \[T>=1, J, 3\]"):
        HumanMotion(("a", "b"), (-1, 0), np.zeros((4, 2)), 30.0, "mem")
    with pytest.raises(UserError, match="object_pose must have shape"):
        HumanMotion(("a", "b"), (-1, 0), good.positions, 30.0, "mem", object_pose=np.zeros((4, 6)))


def test_dispatch_refuses_unknown_formats(tmp_path):
    (tmp_path / "clip.fbx").write_text("binary")
    with pytest.raises(UserError, match="unknown motion format '.fbx'"):
        load_human_motion(tmp_path / "clip.fbx")
    (tmp_path / "notes.txt").write_text("not json")
    with pytest.raises(UserError, match="must be DeepMimic JSON"):
        load_human_motion(tmp_path / "notes.txt")


def test_deepmimic_frame_width_is_checked(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text(json.dumps({"Loop": "none", "Frames": [[0.1] * 43]}))
    with pytest.raises(UserError, match="frame 0 has 43 values; humanoid3d frames have 44"):
        load_deepmimic(path)


# ------------------------------------------------------------ shared clips

MOCAP = None if shared_dir() is None else shared_dir() / "mocap"
NO_SHARED = "no shared data folder (set METAWORLD_X_SHARED to the folder holding mocap/)"


def _readme_clips() -> list[Path]:
    if MOCAP is None or not (MOCAP / "README.md").is_file():
        return []
    listed = set(re.findall(r"`([\w.]+\.(?:bvh|txt|npz))`", (MOCAP / "README.md").read_text()))
    return sorted(path for path in MOCAP.glob("*/*") if path.name in listed)


def _lowest_foot(keypoints: dict[str, np.ndarray]) -> np.ndarray:
    """[T] height of the lowest ankle or toe keypoint."""
    return np.min([keypoints[f"{side}_{part}"][:, 2] for side in ("left", "right") for part in ("ankle", "toe")], 0)


# The README says the crawl clip never stands (root 0.17-0.40 m).
NEVER_STANDS = {"humanoid3d_crawl.txt"}


@pytest.mark.skipif(MOCAP is None, reason=NO_SHARED)
def test_readme_lists_clips_of_every_format():
    suffixes = {path.suffix for path in _readme_clips()}
    assert suffixes == {".bvh", ".txt", ".npz"}


@pytest.mark.skipif(MOCAP is None, reason=NO_SHARED)
@pytest.mark.parametrize("path", _readme_clips(), ids=lambda path: path.name)
def test_shared_clip_loads_as_a_plausible_human(path):
    motion = load_human_motion(path)
    keypoints = canonical_keypoints(motion)
    assert tuple(keypoints) == CANONICAL_KEYPOINTS
    assert np.isfinite(motion.positions).all() and motion.num_frames > 10
    thigh = np.linalg.norm(keypoints["left_hip"] - keypoints["left_knee"], axis=-1)
    shin = np.linalg.norm(keypoints["left_knee"] - keypoints["left_ankle"], axis=-1)
    assert 0.6 < np.median(thigh + shin) < 1.1, "leg length is not a human's in metres"
    if path.name in NEVER_STANDS:
        return
    # Top of the skeleton above its lowest foot, frame by frame: tallest when standing.
    height = motion.positions[:, :, 2].max(axis=1) - _lowest_foot(keypoints)
    stature = height.max()
    assert 1.3 <= stature <= 2.0
    standing = height >= 0.9 * stature
    assert np.all(keypoints["head"][standing, 2] > keypoints["pelvis"][standing, 2] + 0.2)


@pytest.mark.skipif(MOCAP is None, reason=NO_SHARED)
def test_omomo_keeps_the_object_pose():
    path = MOCAP / "omomo" / "sub3_largebox_003.npz"
    motion = load_human_motion(path)
    with np.load(path) as raw:
        np.testing.assert_allclose(motion.object_pose, raw["object_pose"], atol=1e-6)
    assert motion.metadata["up_axis"] == "z" and motion.fps == 30.0


@pytest.mark.skipif(MOCAP is None, reason=NO_SHARED)
def test_deepmimic_walk_stands_tall_and_moves_forward():
    motion = load_human_motion(MOCAP / "deepmimic" / "humanoid3d_walk.txt")
    keypoints = canonical_keypoints(motion)
    assert 1.4 < np.median(keypoints["head"][:, 2]) < 1.7  # head centre; its top is 0.1 m higher
    assert -0.05 < _lowest_foot(keypoints).min() < 0.1
    travel = keypoints["pelvis"][-1] - keypoints["pelvis"][0]
    assert travel[0] > 1.0 and abs(travel[1]) < 0.1
    assert motion.num_frames == 39 and motion.fps == 30.0


@pytest.mark.skipif(MOCAP is None, reason=NO_SHARED)
def test_cmu_units_are_detected_and_reported():
    motion = load_human_motion(MOCAP / "cmu" / "131_01.bvh")
    assert motion.metadata["units"] == "cmu" and motion.metadata["units_source"] == "detected"
    assert motion.metadata["up_axis"] == "y" and motion.fps == 120.0
    # README: standing hip height about 0.95 m.
    assert 0.85 < np.median(motion.joint("Hips")[:, 2]) < 1.0
