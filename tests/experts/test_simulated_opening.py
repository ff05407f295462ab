"""A clip's opening remade from the simulated robot (metaworld_x.experts.simulated_opening)."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from metaworld_x.envs.reference import ground_pose
from metaworld_x.errors import UserError
from metaworld_x.motion.clip import read_clip
from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR
from metaworld_x.robot import robot_spec
from metaworld_x.robot.constants import HOME_ROOT_HEIGHT
from metaworld_x.experts.simulated_opening import (
    OpeningConfig,
    Rollouts,
    best_rollout,
    poses_moved_on_ground,
    spliced_qpos,
    with_simulated_opening,
)

CRAWL = EXPERTS_DIR / "crawl"


def _pose(x: float, y: float, heading: float, pitch: float = 0.0, joints: float = 0.0) -> np.ndarray:
    quat = Rotation.from_euler("ZY", [heading, pitch]).as_quat(scalar_first=True)
    return np.concatenate([[x, y, 0.5], quat, np.full(19, joints)])


def _walk(start: np.ndarray, steps: int, heading: float, joints: float) -> np.ndarray:
    """Poses moving 1 cm a frame along `heading` from `start`'s x, y."""
    return np.stack([_pose(start[0] + 0.01 * k * np.cos(heading), start[1] + 0.01 * k * np.sin(heading), heading,
                           joints=joints) for k in range(steps)])


def _ground_pose(qpos: np.ndarray) -> np.ndarray:
    """[..., 3] `envs.reference.ground_pose` of [..., 26] poses."""
    return np.asarray(ground_pose(qpos[..., :3], qpos[..., 3:7]))


# a crawling pelvis points its x axis at the floor: pitched 100°, its x axis's heading is the opposite way
@pytest.mark.parametrize("heading, pitch", [(-2.0, 0.0), (0.3, np.radians(100)), (3.1, np.radians(100)),
                                            (-3.1, np.radians(-120))])
def test_the_ground_pose_of_a_pose_is_its_x_y_and_its_twist_about_the_vertical(heading, pitch):
    qpos = _pose(1.5, -0.7, heading, pitch)
    flipped = qpos.copy()
    flipped[3:7] *= -1  # the same orientation
    for qpos in (qpos, flipped):
        x, y, turn = _ground_pose(qpos)
        twist = 2.0 * np.arctan2(qpos[6], qpos[3])  # q and -q give twists 2 pi apart
        assert (x, y) == pytest.approx((1.5, -0.7), abs=1e-6)
        assert np.angle(np.exp(1j * (turn - twist))) == pytest.approx(0.0, abs=1e-6)
        assert np.angle(np.exp(1j * (turn - heading))) == pytest.approx(0.0, abs=1e-6)


def test_moving_on_the_ground_takes_one_ground_pose_onto_another_and_keeps_the_motion_rigid():
    poses = _walk(np.array([0.5, -0.2]), 20, heading=0.4, joints=0.3)
    destination = np.array([2.0, 1.0, -1.2])
    moved = poses_moved_on_ground(poses, _ground_pose(poses[0]), destination)
    assert np.allclose(_ground_pose(moved[0]), destination, atol=1e-6)
    assert np.allclose(_ground_pose(moved[-1])[2], destination[2], atol=1e-6)
    assert np.allclose(np.diff(moved[:, :2], axis=0), 0.01 * np.array([np.cos(-1.2), np.sin(-1.2)]))
    assert np.array_equal(moved[:, 2], poses[:, 2]) and np.array_equal(moved[:, 7:], poses[:, 7:])


def test_the_splice_keeps_the_simulated_poses_then_blends_into_the_clip_moved_onto_the_robot():
    clip = _walk(np.zeros(2), 100, heading=0.0, joints=0.5)
    simulated = _walk(np.array([0.3, 0.2]), 60, heading=0.5, joints=0.0)  # drifted and turned
    splice, blend = 40, 10
    qpos = spliced_qpos(clip, simulated, splice, blend)
    assert len(qpos) == len(clip)
    assert np.allclose(qpos[: splice + 1], simulated[: splice + 1])
    # after the blend: the clip's own poses and heading, carried on from where the robot stood at the splice
    after = qpos[splice + blend :]
    assert np.allclose(after[:, 7:], 0.5)
    assert np.allclose(_ground_pose(after[0])[2], 0.0, atol=1e-6)
    assert np.allclose(after[0, :2], simulated[splice, :2] + [0.01 * blend, 0.0])
    # and no jump anywhere: at most the 1 cm a frame both walks move, plus the blend's share of their gap
    assert np.abs(np.diff(qpos[:, :2], axis=0)).max() < 0.02
    assert np.abs(np.diff(qpos[:, 7:], axis=0)).max() < 0.5 / blend * 1.9  # minimum jerk peaks at 1.875x the mean
    with pytest.raises(UserError, match="runs past"):
        spliced_qpos(clip, simulated, 55, blend)


def test_the_splice_carries_a_crawling_clip_across_the_floor_exactly_keeping_its_heading():
    """Pitched past vertical and facing about pi, where the heading wraps: the clip after the blend is only moved
    by the simulated root's x, y offset at the splice, to float64 precision."""
    clip = np.stack([_pose(4.0 + 0.01 * k, -3.0, 3.1 + 0.002 * k, pitch=np.radians(100), joints=0.5)
                     for k in range(100)])
    simulated = _walk(np.array([0.3, 0.2]), 60, heading=-3.0, joints=0.0)
    splice, blend = 40, 10
    after = spliced_qpos(clip, simulated, splice, blend)[splice + blend + 1 :]
    offset = simulated[splice, :2] - clip[splice, :2]
    np.testing.assert_allclose(after[:, :2], clip[splice + blend + 1 :, :2] + offset, rtol=0, atol=1e-12)
    np.testing.assert_allclose(after[:, 2:], clip[splice + blend + 1 :, 2:], rtol=0, atol=1e-12)


def test_the_best_rollout_is_the_survivor_that_tracked_best_spliced_where_it_tracked_best():
    error = np.full((3, 100), 0.05)
    error[0] = 0.01  # tracked best, but fell
    error[2, 70] = 0.02  # the best frame of the better survivor, inside the window (frames 60-80)
    error[2, 10] = 0.0  # outside it
    error[1] += 0.01
    rollouts = Rollouts(qpos=np.zeros((3, 101, 26)), error=error, survived=np.array([False, True, True]),
                        control_dt=0.02, expert="test")
    assert best_rollout(rollouts, (1.2, 1.6)) == (2, 71)  # error[k] is measured at pose k + 1
    with pytest.raises(UserError, match="shorter than the splice window"):
        best_rollout(rollouts, (1.2, 2.5))
    dead = Rollouts(qpos=rollouts.qpos, error=error, survived=np.zeros(3, bool), control_dt=0.02, expert="test")
    with pytest.raises(UserError, match="train it further"):
        best_rollout(dead, (1.2, 1.6))


def test_bad_opening_settings_are_refused():
    with pytest.raises(UserError, match="splice_window"):
        OpeningConfig(splice_window=(3.0, 2.0))
    with pytest.raises(UserError, match="rollouts"):
        OpeningConfig(rollouts=0)


@pytest.mark.skipif(not (CRAWL / "policy.msgpack").is_file() or not (MOTIONS_DIR / "crawl_get_down.npz").is_file(),
                    reason="the shipped crawl expert or its clip is missing")
def test_an_opening_simulated_with_the_crawl_expert_starts_at_home_and_resumes_the_clip():
    model = robot_spec("h1").compile()
    clip = read_clip(MOTIONS_DIR / "crawl_get_down.npz")
    config = OpeningConfig(splice_window=(1.0, 1.2), blend_s=0.2, rollouts=2)
    remade = with_simulated_opening(clip, CRAWL, model=model, config=config)
    opening = remade.info["simulated_opening"]
    assert opening["survived"] >= 1 and opening["rollout"] in (0, 1)
    # the expert is named as router.json names it; the shipped clip's opening came from an earlier crawl expert
    assert len(opening["expert_params_sha256"]) == 16 and clip.info["simulated_opening"]["expert_params_sha256"] == "97e1e909814b1a56"
    assert 1.0 < opening["splice_s"] <= 1.22
    assert remade.num_frames == clip.num_frames and remade.fps == clip.fps
    assert remade.root_pos[0, 2] == pytest.approx(HOME_ROOT_HEIGHT, abs=0.02)
    # the opening moves: the expert's get-down starts at once, whatever the clip's first frames do
    assert np.abs(remade.joint_pos[int(1.0 * clip.fps)] - remade.joint_pos[0]).max() > 0.3
    # after the blend, the clip's own joint angles (through the IK again, whose feet are pinned where the moved
    # clip's stances are: 0.03 rad apart on average, where the crawl's frames 0.1 s apart differ by 0.2), its trunk
    # height, and its travel
    after = int(round((opening["splice_s"] + config.blend_s) * clip.fps)) + 1
    assert np.abs(remade.joint_pos[after:] - clip.joint_pos[after:]).mean() < 0.04
    assert np.abs(clip.joint_pos[after + 5 :] - clip.joint_pos[after:-5]).mean() > 0.1
    assert np.abs(remade.root_pos[after:, 2] - clip.root_pos[after:, 2]).mean() < 0.01
    travel = lambda c: np.linalg.norm(c.root_pos[-1, :2] - c.root_pos[after, :2])  # noqa: E731
    assert travel(remade) == pytest.approx(travel(clip), abs=0.02)
