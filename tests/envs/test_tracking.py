"""Tracking environments: the reference is followed, rewarded and sampled as stated."""


import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.envs.physics_view import BatchViewReader
from metaworld_x.envs.reference import frame_at
from metaworld_x.envs.task import with_overrides
from metaworld_x.envs.tasks.tracking import IMITATION_TERMS, Tracking, TrackingConfig
from metaworld_x.errors import UserError
from metaworld_x.paths import MOTIONS_DIR

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")


def _task(**settings) -> Tracking:
    return Tracking(with_overrides(TrackingConfig(), settings))


@pytest.mark.parametrize("clip,loop", [("walk", True), ("sit", False), ("crawl", True)])
def test_replaying_the_reference_kinematically_scores_one_and_never_terminates(clip, loop):
    task = _task(clips=(clip,), loop=loop, episode_length=200)
    compiled = CompiledTask.build(task)
    batch = mujoco.batch.Batch(compiled.model, 1, 1)
    reader = BatchViewReader(batch, compiled.layout)
    qpos, qvel = batch.bind("qpos"), batch.bind("qvel")
    batch.reset(keyframe=0)
    ref = task.reference
    info = {**task.clip_info(0, 0.0), "last_action": jnp.zeros(19), "step": jnp.asarray(0)}
    terms_fn = jax.jit(lambda view, info: task.reward_terms(view, info, jnp.zeros(19)))
    done_fn = jax.jit(lambda view, info: jnp.stack(task.terminations(view, info)))
    worst = {}
    for _ in range(120):
        info = {**info, "ref_time": info["ref_time"] + task.control_dt}
        frame = frame_at(ref, 0, info["ref_time"])
        qpos[0, :3], qpos[0, 3:7], qpos[0, 7:26] = frame.root_pos, frame.root_quat, frame.joint_pos
        qvel[0, :3], qvel[0, 3:6], qvel[0, 6:25] = frame.root_lin_vel, frame.root_ang_vel, frame.joint_vel
        batch.forward(stage=mujoco.mjtStage.mjSTAGE_VEL)
        view = jax.tree.map(lambda x: x[0], reader.read())
        terms = terms_fn(view, info)
        for name in IMITATION_TERMS:
            scale = getattr(task.config.rewards, name)
            worst[name] = min(worst.get(name, 1.0), float(terms[name]) / scale)
        assert not bool(done_fn(view, info).any())
    # the centre of mass velocity is compared with the root's, so it is the loosest term
    assert worst["com"] > 0.6, worst
    for name in ("joint_pos", "keypoint_pos", "root_pos", "root_orientation", "end_effector"):
        assert worst[name] > 0.97, (name, worst)


def test_reference_state_initialisation_spreads_starts_and_keeps_some_at_zero():
    task = _task(clips=("walk",), loop=True, phase_zero_fraction=0.25)
    infos = jax.vmap(task.reset_info)(jax.random.split(jax.random.PRNGKey(0), 2000))
    starts = np.asarray(infos["ref_time"])
    duration = float(task.reference.duration(0))
    assert 0.18 < np.mean(starts == 0.0) < 0.32
    moving = starts[starts > 0]
    assert moving.max() <= duration and np.std(moving) > duration / 5


def test_a_start_window_keeps_random_starts_in_the_clips_beginning():
    task = _task(clips=("walk",), loop=True, phase_zero_fraction=0.0, start_window=0.4)
    starts = np.asarray(jax.vmap(task.reset_info)(jax.random.split(jax.random.PRNGKey(2), 1000))["ref_time"])
    assert float(task.reference.duration(0)) > 0.8
    assert starts.max() <= 0.4 and starts.min() >= 0.0 and np.std(starts) > 0.08


def test_a_start_window_must_be_positive():
    with pytest.raises(UserError, match="start_window"):
        _task(start_window=0.0)


def test_multi_clip_mode_samples_every_clip():
    task = _task(clips=("walk", "run"), loop=True)
    infos = jax.vmap(task.reset_info)(jax.random.split(jax.random.PRNGKey(1), 400))
    counts = np.bincount(np.asarray(infos["clip"]), minlength=2)
    assert counts.min() > 120, counts


def test_looping_reference_moves_on_by_one_cycle_each_repeat():
    task = _task(clips=("walk",), loop=True)
    ref = task.reference
    duration = float(ref.duration(0))
    a, b = frame_at(ref, 0, 0.3), frame_at(ref, 0, 0.3 + duration)
    np.testing.assert_allclose(np.asarray(b.root_pos - a.root_pos), np.asarray(ref.cycle_shift[0]), atol=1e-4)
    np.testing.assert_allclose(np.asarray(b.joint_pos), np.asarray(a.joint_pos), atol=1e-4)


def test_one_shot_reference_holds_its_last_frame():
    task = _task(clips=("sit",), loop=False)
    ref = task.reference
    end = float(ref.duration(0))
    np.testing.assert_allclose(np.asarray(frame_at(ref, 0, end + 3.0).joint_pos),
                               np.asarray(frame_at(ref, 0, end).joint_pos), atol=1e-6)


def test_a_held_last_pose_is_still():
    """Once a one-shot clip ends, the velocity rewards must ask for stillness, not the last frame's motion."""
    task = _task(clips=("stand",), loop=False)  # a short clip that ends in slight motion
    ref = task.reference
    end = float(ref.duration(0))
    playing, held = frame_at(ref, 0, end - 0.5 / ref.fps), frame_at(ref, 0, end + 0.5)
    assert np.abs(np.asarray(playing.joint_vel)).max() > 0
    for name in ("joint_vel", "root_lin_vel", "root_ang_vel"):
        np.testing.assert_array_equal(np.asarray(getattr(held, name)), 0.0, err_msg=name)


def test_facing_forward_turns_a_sideways_clip_rigidly_onto_plus_x():
    from metaworld_x.envs.reference import facing_forward
    from metaworld_x.motion.clip import load_clip

    clip = load_clip(MOTIONS_DIR / "crawl.npz")
    turned = facing_forward(clip)
    np.testing.assert_allclose(turned.root_pos[0, :2], 0.0, atol=1e-9)
    travel = turned.root_pos[-1, :2] - turned.root_pos[0, :2]
    assert travel[0] > 0.1 and abs(travel[1]) < 1e-6 * max(1.0, travel[0]), travel
    # rigid: forward kinematics of the turned pose puts the keypoints where the turned clip says
    task = _task(clips=("crawl",), face_forward=True)
    compiled = CompiledTask.build(task)
    model = compiled.model
    data = mujoco.MjData(model)
    names = turned.keypoint_names
    for t in (0, turned.num_frames // 2, turned.num_frames - 1):
        data.qpos[:3], data.qpos[3:7], data.qpos[7:26] = turned.root_pos[t], turned.root_quat[t], turned.joint_pos[t]
        mujoco.mj_kinematics(model, data)
        for k, name in enumerate(names):
            site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
            where = data.site_xpos[site] if site >= 0 else data.xpos[model.body(name).id]
            np.testing.assert_allclose(where, turned.keypoint_pos[t, k], atol=2e-3, err_msg=name)
    # velocities turn with the positions: the root's finite difference matches its velocity
    step = np.diff(turned.root_pos, axis=0).mean(axis=0) * turned.fps
    np.testing.assert_allclose(step[:2], turned.root_lin_vel.mean(axis=0)[:2], atol=0.02)
