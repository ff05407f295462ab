"""A one-shot clip ended standing: its own frames kept, then a lead-out that lets go and stands in the home pose."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.edits.lead_out import LeadOutConfig, with_lead_out
from metaworld_x.motion.keyframes import home_points
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import robot_spec

pytestmark = pytest.mark.skipif(
    not (MOTIONS_DIR / "pickup_carry_start.npz").is_file(), reason="assets/motions/pickup_carry_start.npz is missing"
)
PER_FRAME = ("root_pos", "root_quat", "joint_pos", "joint_vel", "root_lin_vel", "root_ang_vel", "keypoint_pos",
             "target_pos", "human_pos", "contacts", "object_pose")


@pytest.fixture(scope="module")
def made():
    """(the model, the carry clip (the take, ending at the set-down), it led out, the take's frame count)."""
    model = robot_spec("h1").compile()
    clip = read_clip(MOTIONS_DIR / "pickup_carry_start.npz")
    return model, clip, with_lead_out(clip, model=model), clip.num_frames


def test_the_takes_own_frames_are_kept_exactly(made):
    _, clip, led, take = made
    assert led.info["lead_out_s"] == pytest.approx((led.num_frames - take) / led.fps)
    for name in PER_FRAME:
        np.testing.assert_array_equal(getattr(led, name)[:take], getattr(clip, name), err_msg=name)
    # the take ends mid-step and bent over the table, which is why it needs one
    last = Rotation.from_quat(clip.root_quat[-1], scalar_first=True).as_euler("ZYX")
    assert np.degrees(last[1]) > 30 and not clip.contacts[-1].all()


def test_it_ends_standing_in_the_home_pose(made):
    model, _, led, _ = made
    home = home_points(model)
    end = led.num_frames - 1
    roll_pitch = Rotation.from_quat(led.root_quat[end], scalar_first=True).as_euler("ZYX")[1:]
    assert np.degrees(np.abs(roll_pitch)).max() < 1.0
    assert abs(led.root_pos[end, 2] - home["pelvis"][2]) < 0.01
    assert led.contacts[-int(LeadOutConfig().hold_s * led.fps):].all(), "both feet stand through the hold"
    feet = [led.keypoint_pos[end, led.keypoint_names.index(f"{side}_foot")] for side in ("left", "right")]
    stance = np.linalg.norm(home["left_foot"] - home["right_foot"])
    assert abs(np.linalg.norm(feet[0] - feet[1]) - stance) < 0.02, "the feet stand as wide apart as at home"
    assert np.abs(led.joint_vel[-10:]).max() < 0.05 and np.abs(led.root_lin_vel[-10:]).max() < 0.01


def test_the_hands_let_go_and_the_box_rests_where_the_take_left_it(made):
    _, clip, led, take = made
    np.testing.assert_array_equal(led.object_pose[take:], np.broadcast_to(clip.object_pose[-1], led.object_pose[take:].shape))
    box = clip.object_pose[-1, 4:7]
    hands = [led.keypoint_names.index(f"{side}_hand") for side in ("left", "right")]
    gap_then = np.linalg.norm(clip.keypoint_pos[-1, hands] - box, axis=-1)
    gap_end = np.linalg.norm(led.keypoint_pos[-1, hands] - box, axis=-1)
    assert (gap_end > gap_then + 0.1).all(), f"the hands stay by the box: {gap_then} -> {gap_end} m"


def test_the_lead_out_is_smooth_and_its_feet_do_not_skate(made):
    _, _, led, take = made
    assert np.abs(led.joint_vel[take:]).max() < 6.0
    assert np.abs(led.root_lin_vel[take:]).max() < 0.6
    quality = led.info["lead_out_quality"]
    assert quality["skating"] <= 0.02 and quality["penetration"] <= 0.01 and quality["limit_violations"] == 0


def test_bad_input_is_refused(made):
    model, clip, _, _ = made
    with pytest.raises(UserError, match="loops"):
        with_lead_out(replace(clip, info={**clip.info, "loop": True}), model=model)
    with pytest.raises(UserError, match="blend_s"):
        LeadOutConfig(blend_s=2.0)
    with pytest.raises(UserError, match="positive"):
        LeadOutConfig(rise_s=0.0)
