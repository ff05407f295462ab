"""A one-shot clip led into from the home pose: it starts there at rest, steps each foot out, then is the clip."""

import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.edits.lead_in import LeadInConfig, with_lead_in
from metaworld_x.motion.ik import home_qpos
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import robot_spec
from metaworld_x.robot.constants import HOME_ROOT_HEIGHT

pytestmark = pytest.mark.skipif(
    not (MOTIONS_DIR / "pickup_carry.npz").is_file(), reason="assets/motions/pickup_carry.npz is missing"
)


@pytest.fixture(scope="module")
def made():
    """(the model, pickup_carry, it with a lead-in, the lead-in's frame count, the clip frame joined)."""
    model = robot_spec("h1").compile()
    clip = read_clip(MOTIONS_DIR / "pickup_carry.npz")
    led = with_lead_in(clip, model=model)
    config = LeadInConfig()
    join = int(round(config.join_at * clip.fps))
    lead = led.num_frames - (clip.num_frames - join)
    return model, clip, led, lead, join


def test_it_starts_at_rest_in_the_home_pose(made):
    model, clip, led, _, _ = made
    home = home_qpos(model, HOME_ROOT_HEIGHT)
    np.testing.assert_allclose(led.joint_pos[:10], np.broadcast_to(home[7:26], (10, 19)), atol=0.03)
    np.testing.assert_allclose(led.root_pos[0, :2], 0.0, atol=0.01)
    assert np.abs(led.joint_vel[:10]).max() < 0.1 and np.abs(led.root_lin_vel[:10]).max() < 0.02
    # the take itself does not: it starts mid-step, bent over
    assert np.abs(clip.joint_pos[0] - home[7:26]).max() > 0.5


def test_each_foot_steps_out_once_to_where_the_clips_foot_stands(made):
    _, clip, led, lead, join = made
    for side, column in (("left", 0), ("right", 1)):
        stance = led.contacts[:lead, column]
        lifts = np.flatnonzero(stance[:-1] & ~stance[1:])
        assert len(lifts) == 1, f"the {side} foot leaves the ground {len(lifts)} times in the lead-in"
        foot = led.keypoint_names.index(f"{side}_foot")
        np.testing.assert_allclose(led.keypoint_pos[lead - 1, foot, :2], clip.keypoint_pos[join, foot, :2], atol=0.01)
        assert abs(led.keypoint_pos[0, foot, 1]) < abs(clip.keypoint_pos[join, foot, 1]) - 0.05, "the stance widens"
    assert led.quality["skating"] <= 0.02 and led.quality["penetration"] <= 0.01


def test_after_the_lead_in_it_is_the_clip_from_the_join_and_the_box_waits_there_until_then(made):
    _, clip, led, lead, join = made
    # The whole sequence is solved again by the IK, on the clip's own keypoints as targets: the hands, which carry
    # the box, stay within 2 cm; feet pinned with this clip's contacts move a few cm in a few frames, and so do the
    # elbows of the grip (motion.edits.grip), where the IK bent the arms to press the hands on the box.
    off = np.linalg.norm(led.keypoint_pos[lead:] - clip.keypoint_pos[join:], axis=-1)
    hands = [led.keypoint_names.index(f"{side}_hand") for side in ("left", "right")]
    assert off[:, hands].max() < 0.02 and np.median(off) < 0.01 and np.percentile(off.max(axis=1), 90) < 0.04
    np.testing.assert_array_equal(led.object_pose[:lead], np.broadcast_to(clip.object_pose[join], (lead, 7)))
    np.testing.assert_array_equal(led.object_pose[lead:], clip.object_pose[join:])
    # the join is smooth in position: no frame-to-frame jump larger than the clip's own
    step = np.abs(np.diff(led.joint_pos[lead - 20 : lead + 20], axis=0)).max()
    assert step < 1.5 * np.abs(np.diff(clip.joint_pos, axis=0)).max()


def test_leading_into_a_time_when_a_foot_is_in_the_air_is_refused():
    model = robot_spec("h1").compile()
    clip = read_clip(MOTIONS_DIR / "pickup_carry.npz")
    with pytest.raises(UserError, match="foot is off the ground"):
        with_lead_in(clip, model=model, config=LeadInConfig(join_at=0.0))
    with pytest.raises(UserError, match="blend_s"):
        LeadInConfig(blend_s=2.0)
