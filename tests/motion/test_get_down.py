"""Getting down from standing into the crawl (metaworld_x.motion.edits.get_down): a get-up played backwards."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion import load_human_motion
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.edits.gait_transition import GaitCycle
from metaworld_x.motion.edits.get_down import GetDownConfig, get_down, reversed_poses, splice
from metaworld_x.motion.ik import home_qpos
from metaworld_x.motion.quality import GOALS
from metaworld_x.motion.retarget import PoseKinematics, SourceInfo, retarget
from metaworld_x.paths import MOTIONS_DIR, shared_dir
from metaworld_x.robot import JOINT_NAMES, robot_spec
from metaworld_x.robot.constants import HOME_JOINT_POSE, HOME_ROOT_HEIGHT

FPS = 50


@pytest.fixture(scope="module")
def model():
    return robot_spec("h1").compile()


@pytest.fixture(scope="module")
def shipped():
    return read_clip(MOTIONS_DIR / "crawl_get_down.npz")


@pytest.fixture(scope="module")
def crawl():
    return GaitCycle.of(read_clip(MOTIONS_DIR / "crawl.npz"))


@pytest.fixture(scope="module")
def get_up(model):
    """DeepMimic's get-up from lying face down, retargeted as the library builds it."""
    shared = shared_dir()
    path = None if shared is None else shared / "mocap" / "deepmimic" / "humanoid3d_getup_facedown.txt"
    if path is None or not path.is_file():
        pytest.skip("needs ../shared/mocap (DeepMimic's get-up), the reference data; absent on a user's machine")
    return retarget(load_human_motion(path), "crawl", model=model, source=SourceInfo(kind="mocap", file=path.name))


def _home_joints() -> np.ndarray:
    return np.array([HOME_JOINT_POSE.get(name, 0.0) for name in JOINT_NAMES])


def test_a_get_up_backwards_stands_first_at_the_origin_facing_x_and_slows_by_its_rate(get_up):
    lead = reversed_poses(get_up, rate=0.5)
    assert len(lead) == pytest.approx(2 * get_up.num_frames, abs=2)
    assert np.allclose(lead[0, :2], 0.0) and lead[0, 2] == pytest.approx(get_up.root_pos[-1, 2])
    yaw = Rotation.from_quat(lead[0, 3:7], scalar_first=True).as_euler("ZYX")[0]
    assert abs(yaw) < 1e-6
    assert np.allclose(lead[0, 7:], get_up.joint_pos[-1]) and np.allclose(lead[-1, 7:], get_up.joint_pos[0], atol=1e-6)
    # the get-down moves forward, along +x, as the hands go down ahead of the feet
    assert lead[-1, 0] > 0.15 and abs(lead[-1, 1]) < 0.1


def test_the_splice_finds_the_crawl_pose_and_passes_over_poses_lying_below_the_crawl(model, crawl):
    home = home_qpos(model, HOME_ROOT_HEIGHT)
    joints, offset, rotation = crawl.at(np.array([0.5]))
    crawling = np.concatenate([offset[0], rotation[0].as_quat(scalar_first=True), joints[0]])
    poses = np.repeat(home[None], 12, axis=0)
    poses[7] = crawling
    frame, phase = splice(poses, crawl, height_weight=3.0)
    assert frame == 7 and phase == pytest.approx(0.5, abs=1.5 / len(crawl.joint_pos))
    poses[7, 2] = crawl.offset[:, 2].min() - 0.05  # the same angles lying on the floor: no crawl pose
    assert splice(poses, crawl, height_weight=3.0)[0] != 7


def test_get_down_starts_in_the_home_pose_goes_down_smoothly_and_crawls(model, get_up, shipped, crawl):
    config = GetDownConfig(total_s=7.0)
    clip = get_down(get_up, read_clip(MOTIONS_DIR / "crawl.npz"), "crawl", model=model, config=config)
    held = int(config.hold_s * FPS)
    # A foot stays down from home until the hands are on the floor: one stance, pinned at one place, a little
    # out from home's, which turns the held pose's ankle by up to 0.12 rad (0.07 in the shipped clip).
    assert np.abs(clip.joint_pos[:held] - _home_joints()).max() < 0.15
    assert clip.root_pos[0, 2] == pytest.approx(HOME_ROOT_HEIGHT, abs=0.03)
    # the get-up splices where the shipped clip's kinematic version did
    assert clip.info["splice_phase"] == pytest.approx(shipped.info["splice_phase"], abs=0.05)
    crawling = int((clip.info["splice_s"] + config.blend_s) * FPS)
    assert clip.root_pos[crawling:, 2].max() < crawl.offset[:, 2].max() + 0.05
    speed = (clip.root_pos[-1, 0] - clip.root_pos[crawling, 0]) / ((clip.num_frames - 1 - crawling) / FPS)
    assert speed > 0.7 * crawl.stride / crawl.period
    # no cut on the way down where the get-up joins the home pose: under 0.25 rad a frame at every joint (the
    # crawl cycle itself turns a joint by up to 0.4 rad in a frame, the IK's speed limit; a foot's pin released
    # as it lifts turns its ankle by 0.18)
    assert np.abs(np.diff(clip.joint_pos[: int(clip.info["splice_s"] * FPS)], axis=0)).max() < 0.25
    for figure, goal in GOALS.items():
        assert clip.quality[figure] <= goal, figure


def test_the_shipped_get_down_keeps_a_foot_on_the_floor_until_the_hands_are_down(model, shipped):
    """crawl_start, the home pose blended into the crawl's angles, folds the legs with the pelvis high and lifts
    both feet 8 cm off the floor 2 s in; no policy followed it from home. The shipped get-down, the crawl expert's
    own from home (simulated_opening), stands on its feet while it bends and puts the hands down. Its first step
    folds the knees faster than the body falls, and the feet leave the floor by up to 6 cm for 0.1 s."""
    kinematics = PoseKinematics(model)
    window = int(2.0 * FPS)
    lowest, _, _ = kinematics.floor_view(shipped.qpos[:window])
    assert lowest[5:].max() < 0.025 and lowest.max() < 0.07
    assert shipped.info["simulated_opening"]["splice_s"] >= 3.0  # the hands are down (2.2 s) before the clip resumes
    blended, _, _ = kinematics.floor_view(read_clip(MOTIONS_DIR / "crawl_start.npz").qpos[:window])
    assert blended.max() > 0.05
    assert shipped.info["get_down"] == ["humanoid3d_getup_facedown.txt", "crawl"]
    assert shipped.duration >= 20.0  # a router's 1000-step episode never reaches a held last frame


def test_bad_get_down_settings_and_clips_are_refused(model, get_up):
    with pytest.raises(UserError, match="rate"):
        GetDownConfig(rate=0.0)
    with pytest.raises(UserError, match="blend_s"):
        GetDownConfig(blend_s=0.0)
    crawl = read_clip(MOTIONS_DIR / "crawl.npz")
    with pytest.raises(UserError, match="different rates"):
        get_down(replace(get_up, fps=30.0), crawl, "crawl", model=model)
