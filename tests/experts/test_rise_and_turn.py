"""The two experts the sequential tasks add: rise (get up from the chair, rise_walk) and turn (turn round before
sitting, walk_sit and door_sit). Their keyframed clips, their tasks, and the seated handover that starts rise."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.experts.environment import expert_task
from metaworld_x.envs.tasks import make_task
from metaworld_x.envs.tasks.sequence import seated_qpos
from metaworld_x.envs.tasks.turn import heading_off
from metaworld_x.experts.specs import expert_spec
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.keyframes import KEYFRAMED, compose, home_points, key_tracks, turn_keys
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import JOINT_NAMES, robot_spec

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from handover_starts import handover_starts  # noqa: E402

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "sit.npz").is_file(), reason="the shipped clip library is missing")
FPS = 50.0


@pytest.fixture(scope="module")
def model():
    return robot_spec("h1").compile()


def _yaw(quat_wxyz) -> np.ndarray:
    w, x, y, z = np.moveaxis(np.asarray(quat_wxyz), -1, 0)
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def test_the_turn_clip_turns_round_on_the_spot_each_sole_still_while_it_bears_weight(model):
    clip = compose(KEYFRAMED["turn"], model=model)
    assert clip.source == "keyframed"
    assert abs(np.angle(np.exp(1j * (_yaw(clip.root_quat[-1]) - math.pi)))) < math.radians(5)
    assert np.linalg.norm(clip.root_pos[:, :2], axis=1).max() < 0.15  # on the spot
    tracks = key_tracks(KEYFRAMED["turn"], home_points(model), FPS)
    for side in ("left", "right"):
        sole, heading = tracks[f"{side}_foot"], tracks[f"{side}_foot_yaw"][:, 0]
        down = sole[:, 2] < 1e-6
        moving = np.linalg.norm(np.diff(sole[:, :2], axis=0), axis=1) > 1e-4
        turning = np.abs(np.diff(heading)) > 1e-4
        # a sole on the floor neither slides nor twists: it moves only while lifted (the frame it lands excepted)
        assert not np.any((moving | turning) & down[:-1] & down[1:]), side
        assert heading[-1] == pytest.approx(math.pi, abs=1e-6)
    assert clip.quality["penetration"] <= 0.5 and clip.quality["limit_violations"] == 0


@pytest.mark.parametrize("name", ["rise", "turn", "sit"])
def test_a_shipped_keyframed_clip_is_rebuilt_from_its_keys(model, name):
    """Every keyframed clip in the library has its keys in KEYFRAMED, and they rebuild it: a library rebuilt by
    scripts/make_motion_library.py would not silently lose or change one."""
    shipped = sorted(p.stem for p in MOTIONS_DIR.glob("*.npz") if read_clip(p).source == "keyframed")
    assert sorted(KEYFRAMED) == shipped
    np.testing.assert_allclose(compose(KEYFRAMED[name], model=model).joint_pos, read_clip(MOTIONS_DIR / f"{name}.npz").joint_pos, atol=1e-4)


def test_a_turn_to_the_right_steps_with_the_right_foot_first():
    keys = turn_keys(-math.pi / 2, steps=4)
    first_lifted = next(k for k in keys[1:] if max(k.left_foot[2], k.right_foot[2]) > 0)  # keys[0]: home
    assert first_lifted.right_foot[2] > 0 and first_lifted.left_foot[2] == 0
    assert keys[-1].pelvis_rpy[2] == pytest.approx(-math.pi / 2)


def test_feet_follow_the_pelvis_heading_where_a_key_gives_none(model):
    tracks = key_tracks(KEYFRAMED["sit"], home_points(model), FPS)
    np.testing.assert_array_equal(tracks["left_foot_yaw"][:, 0], tracks["rpy"][:, 2])


def test_the_rise_clip_begins_where_sit_ends_and_ends_standing_in_the_home_pose(model):
    rise, sit = read_clip(MOTIONS_DIR / "rise.npz"), read_clip(MOTIONS_DIR / "sit.npz")
    np.testing.assert_allclose(rise.joint_pos[0], sit.joint_pos[-1], atol=2e-3)
    np.testing.assert_allclose(rise.root_pos[0], sit.root_pos[-1], atol=2e-3)
    np.testing.assert_allclose(rise.root_pos[-1], (0.0, 0.0, 0.98), atol=0.02)
    # the home pose's joint angles at the end (a keyframed clip's first frame stands in it): as a walk expert starts
    home = read_clip(MOTIONS_DIR / "reach_one_hand.npz").joint_pos[0]
    assert np.abs(rise.joint_pos[-1] - home).max() < 0.15
    assert np.abs(rise.joint_pos[-1] - rise.joint_pos[-2]).max() < 1e-3  # held at the end


def test_the_rise_clip_never_enters_the_chair():
    """The chair's base is solid to the seat's front edge: feet stepped back under it made a clip no robot can
    follow. The robot's geoms keep clear of the chair's (a contact within 1 cm counts)."""
    import mujoco

    model = make_task("rise").build_model()
    data = mujoco.MjData(model)
    clip = read_clip(MOTIONS_DIR / "rise.npz")
    chair = {model.geom(name).id for name in ("chair_seat", "chair_base", "chair_back")}
    deepest = 0.0
    for i in range(0, clip.joint_pos.shape[0], 2):
        data.qpos[:3], data.qpos[3:7], data.qpos[7:26] = clip.root_pos[i], clip.root_quat[i], clip.joint_pos[i]
        mujoco.mj_forward(model, data)
        for contact in data.contact[: data.ncon]:
            if contact.geom1 in chair or contact.geom2 in chair:
                deepest = max(deepest, -contact.dist)
    assert deepest < 0.01, f"the rise clip is {deepest * 100:.1f} cm inside the chair"


def test_rise_handover_starts_begin_seated_on_the_chair_where_the_sit_clip_ends():
    task = expert_task(expert_spec("rise"))
    assert task.config.handover_in_place
    n = len(JOINT_NAMES)
    starts = handover_starts(task)
    for info, state, sit in starts:
        np.testing.assert_allclose(np.asarray(state.qpos[:3]), np.asarray(sit.root_pos), atol=1e-6)  # on the seat
        assert float(info["ref_time"]) == 0.0  # the rise clip from its first, seated, frame
        np.testing.assert_allclose(np.asarray(state.qpos[7 : 7 + n]), np.asarray(seated_qpos()[7:]), atol=0.05)
    assert len(starts) >= 2


def test_rise_succeeds_standing_and_turn_succeeds_facing_back():
    import mujoco
    from mujoco import mjx

    from metaworld_x.envs.physics_view import view_from_mjx

    for name, turned, seated in (("rise", False, False), ("rise", False, True), ("turn", False, False),
                                 ("turn", True, False)):
        task = make_task(name)
        compiled = CompiledTask.build(task)
        data = mujoco.MjData(compiled.model)
        mujoco.mj_resetDataKeyframe(compiled.model, data, 0)  # the home pose: standing, facing +x
        if turned:
            data.qpos[3:7] = (0.0, 0.0, 0.0, 1.0)  # facing -x
        if seated:
            data.qpos[: len(seated_qpos())] = seated_qpos()  # on the chair as sit ends
        mujoco.mj_forward(compiled.model, data)
        view = view_from_mjx(mjx.put_data(compiled.model, data), compiled.statics.layout)
        assert bool(task.success(view, {})) is ((name == "rise" and not seated) or turned), (name, turned, seated)
        assert float(heading_off(view.root_quat)) == pytest.approx(0.0 if turned else math.pi, abs=1e-5)
