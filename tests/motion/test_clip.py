"""The clip format: round trip, validation, the robot fingerprint, atomic writes."""

import dataclasses
import json

import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.motion import clip as clip_module
from metaworld_x.motion.clip import Clip, load_clip, read_clip, save_clip
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS
from metaworld_x.motion.scaling import KEYPOINT_NAMES
from metaworld_x.robot import robot_spec
from metaworld_x.robot.fingerprint import robot_hash
from metaworld_x.scene import build_model


@pytest.fixture(scope="module")
def model():
    return robot_spec("h1").compile()


def _clip(model, frames=10, with_object=True) -> Clip:
    rng = np.random.default_rng(0)
    quat = rng.normal(size=(frames, 4))
    return Clip(
        skill="walk", fps=50.0,
        root_pos=rng.normal(size=(frames, 3)), root_quat=quat / np.linalg.norm(quat, axis=1, keepdims=True),
        joint_pos=rng.normal(size=(frames, 19)), joint_vel=rng.normal(size=(frames, 19)),
        root_lin_vel=rng.normal(size=(frames, 3)), root_ang_vel=rng.normal(size=(frames, 3)),
        keypoint_pos=rng.normal(size=(frames, len(KEYPOINT_NAMES), 3)),
        target_pos=rng.normal(size=(frames, len(KEYPOINT_NAMES), 3)),
        human_pos=rng.normal(size=(frames, len(CANONICAL_KEYPOINTS), 3)),
        contacts=rng.random((frames, 2)) > 0.5,
        keypoint_names=KEYPOINT_NAMES, human_names=CANONICAL_KEYPOINTS,
        source="mocap", source_file="walk.txt", licence="MIT", attribution="someone",
        robot_hash=robot_hash(model), quality={"penetration": 0.0}, info={"segment_s": [0.0, 0.2]},
        object_pose=np.tile([1.0, 0, 0, 0, 0.5, 0, 0.2], (frames, 1)) if with_object else None,
    )


def test_round_trip_keeps_every_array_and_the_metadata(model, tmp_path):
    original = _clip(model)
    loaded = load_clip(save_clip(original, tmp_path / "walk.npz"), model)
    for field in ("root_pos", "root_quat", "joint_pos", "joint_vel", "keypoint_pos", "human_pos", "object_pose"):
        np.testing.assert_allclose(getattr(loaded, field), getattr(original, field), rtol=1e-6, atol=1e-6)
    assert (loaded.contacts == original.contacts).all() and loaded.contacts.dtype == bool
    assert loaded.root_pos.dtype == np.float32
    assert (loaded.skill, loaded.source, loaded.licence, loaded.info) == ("walk", "mocap", "MIT", original.info)
    assert loaded.keypoint_names == KEYPOINT_NAMES and loaded.num_frames == 10


def test_a_keypoint_is_looked_up_by_name_and_an_unknown_one_is_refused_listing_the_known(model):
    clip = _clip(model)
    name = KEYPOINT_NAMES[3]
    np.testing.assert_array_equal(clip.keypoint(name), clip.keypoint_pos[:, 3])
    with pytest.raises(UserError, match=f"no keypoint 'left_paw'; it has .*{KEYPOINT_NAMES[0]}"):
        clip.keypoint("left_paw")


def test_the_motion_fingerprint_survives_a_save_and_float_noise_but_not_a_changed_or_added_frame(model, tmp_path):
    original = _clip(model)
    loaded = read_clip(save_clip(original, tmp_path / "walk.npz"))
    assert loaded.fingerprint == original.fingerprint and len(original.fingerprint) == 16
    # a rebuilt clip's zero velocities come back as +-1e-14: the same motion
    still = dataclasses.replace(original, root_lin_vel=np.zeros_like(original.root_lin_vel))
    noisy = dataclasses.replace(still, joint_vel=still.joint_vel + 1e-13, root_lin_vel=-still.root_lin_vel)
    assert noisy.fingerprint == still.fingerprint
    bent = original.joint_pos.copy()
    bent[3, 2] += 1e-3
    assert dataclasses.replace(original, joint_pos=bent).fingerprint != original.fingerprint
    # the same frames and the last one held once more: a longer clip, so every frame's phase moves
    arrays = (*clip_module._FLOAT_ARRAYS, "contacts", "object_pose")
    longer = dataclasses.replace(original, **{name: np.concatenate([getattr(original, name), getattr(original, name)[-1:]])
                                              for name in arrays})
    assert longer.fingerprint != original.fingerprint
    assert dataclasses.replace(original, fps=60.0).fingerprint != original.fingerprint


def test_clip_without_object_round_trips(model, tmp_path):
    loaded = load_clip(save_clip(_clip(model, with_object=False), tmp_path / "a.npz"), model)
    assert loaded.object_pose is None


def test_the_fingerprint_ignores_scenes_and_paddles_but_not_kinematics_or_mass(model):
    reference = robot_hash(model)
    assert robot_hash(build_model("chair", "h1")) == reference
    assert robot_hash(robot_spec("h1_hands").compile()) == reference
    for change in ("pos", "mass"):
        spec = robot_spec("h1")
        body = spec.body("left_knee_link")
        if change == "pos":
            body.pos = body.pos + np.array([0.0, 0.0, 0.01])
        else:
            body.mass = body.mass * 1.1
        assert robot_hash(spec.compile()) != reference, change


def test_a_clip_for_another_robot_is_refused_naming_both_hashes(model, tmp_path):
    path = save_clip(_clip(model), tmp_path / "walk.npz")
    spec = robot_spec("h1")
    spec.joint("left_knee").range = np.array([-0.2, 2.0])
    other = spec.compile()
    with pytest.raises(UserError) as error:
        load_clip(path, other)
    message = str(error.value)
    assert robot_hash(model) in message and robot_hash(other) in message
    assert "metaworld-x motion retarget" in message


def test_a_failed_write_leaves_no_partial_file_and_keeps_the_old_one(model, tmp_path, monkeypatch):
    path = save_clip(_clip(model), tmp_path / "walk.npz")
    before = path.read_bytes()

    def fail_midway(stream, **arrays):
        stream.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(clip_module.np, "savez_compressed", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        save_clip(_clip(model, frames=5), path)
    assert path.read_bytes() == before
    with pytest.raises(OSError):
        save_clip(_clip(model), tmp_path / "new.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.npz"]


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda a: a.update(joint_pos=a["joint_pos"][:, :18]), "joint_pos must have shape"),
        (lambda a: a["root_pos"].__setitem__((3, 0), np.nan), "root_pos is not finite"),
        (lambda a: a.update(joint_vel=a["joint_vel"].astype(np.float64)), "joint_vel must be float32"),
        (lambda a: a.update(contacts=a["contacts"].astype(np.float32)), "contacts must be bool"),
        (lambda a: a.pop("root_quat"), "arrays missing"),
        (lambda a: a.update(metadata=np.array("{not json")), "not JSON"),
    ],
)
def test_a_damaged_clip_is_refused_with_the_reason(model, tmp_path, change, message):
    path = save_clip(_clip(model), tmp_path / "walk.npz")
    with np.load(path) as data:
        arrays = {key: data[key].copy() for key in data.files}
    change(arrays)
    np.savez(path, **arrays)
    with pytest.raises(UserError, match=message):
        read_clip(path)


def test_pickled_content_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, metadata=np.array([{"a": 1}], dtype=object))
    with pytest.raises(UserError):
        read_clip(path)


def test_metadata_is_plain_json(model, tmp_path):
    path = save_clip(_clip(model), tmp_path / "walk.npz")
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["metadata"][()]))
    assert meta["robot_hash"] == robot_hash(model) and meta["num_frames"] == 10


def test_a_clip_with_wrong_shapes_cannot_be_built(model):
    with pytest.raises(UserError, match="contacts must have shape"):
        dataclasses.replace(_clip(model), contacts=np.zeros((3, 2), dtype=bool))


def _with_props(model, frames=10) -> Clip:
    angles = np.linspace(0.0, 1.0, frames)[:, None]
    box = np.tile([0.8, 0.0, 0.15, 1.0, 0.0, 0.0, 0.0], (frames, 1))
    return dataclasses.replace(_clip(model, frames), prop_joints=(("door_hinge", 1), ("box", 7)),
                               prop_qpos=np.concatenate([angles, box], axis=1))


def test_props_round_trip_by_joint(model, tmp_path):
    original = _with_props(model)
    loaded = load_clip(save_clip(original, tmp_path / "door.npz"), model)
    assert loaded.prop_joints == (("door_hinge", 1), ("box", 7))
    np.testing.assert_allclose(loaded.prop("door_hinge")[:, 0], np.linspace(0.0, 1.0, 10), atol=1e-6)
    np.testing.assert_allclose(loaded.prop("box"), original.prop("box"), atol=1e-6)
    with pytest.raises(UserError, match="records no scene joint 'lid'"):
        loaded.prop("lid")


def test_a_version_1_clip_reads_as_one_without_props(model, tmp_path):
    path = save_clip(_clip(model), tmp_path / "walk.npz")
    with np.load(path) as data:
        arrays = {key: data[key].copy() for key in data.files}
    meta = json.loads(str(arrays["metadata"][()]))
    del meta["prop_joints"]
    np.savez(path, **{**arrays, "metadata": np.array(json.dumps({**meta, "format_version": 1}))})
    assert read_clip(path).prop_joints == () and read_clip(path).prop_qpos is None
    np.savez(path, **{**arrays, "metadata": np.array(json.dumps({**meta, "format_version": 3}))})
    with pytest.raises(UserError, match="clip format 3"):
        read_clip(path)


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(prop_joints=(("door_hinge", 1),)), "prop_qpos must have shape"),
        (dict(prop_joints=(("door_hinge", 1), ("ball", 4))), "sizes must be in"),
        (dict(prop_joints=(("box", 1), ("box", 7))), "names a joint twice"),
        (dict(prop_qpos=None), "come together"),
        (dict(prop_qpos=np.tile([0.0, 0.8, 0.0, 0.15, 2.0, 0.0, 0.0, 0.0], (10, 1))), "quaternion is not unit length"),
    ],
)
def test_bad_props_cannot_be_built(model, change, message):
    with pytest.raises(UserError, match=message):
        dataclasses.replace(_with_props(model), **change)
