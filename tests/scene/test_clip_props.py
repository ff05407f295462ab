"""The keyframed push and door clips carry their prop's state, and reference-state starts put the props there.

An episode that starts late in the push clip starts with the box as far as
the clip has pushed it, and one late in the door clip with the door as far
open as the clip has swung it (`TrackingConfig.clip_props`), so that the
robot does not start inside them and get thrown out within a few steps.
"""

import jax
import mujoco
import numpy as np
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.experts.environment import expert_task
from metaworld_x.envs.reference import frame_at, props_at
from metaworld_x.envs.task import with_overrides
from metaworld_x.envs.tasks import make_task
from metaworld_x.envs.tasks.tracking import Tracking, TrackingConfig
from metaworld_x.errors import UserError
from metaworld_x.experts.specs import EXPERTS
from metaworld_x.motion.clip import load_clip
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.scene.compose import PUSH_BOX

pytestmark = pytest.mark.skipif(
    not (MOTIONS_DIR / "push.npz").is_file(), reason="the shipped keyframed clips are missing"
)

# Late start times (s): the box pushed its 0.2 m; the door open about 1.2 rad with the body in the doorway.
LATE = {"push": 3.4, "door": 5.2}
PROP = {"push": "box", "door": "door_hinge"}


@pytest.fixture(scope="module", params=["push", "door"])
def expert(request):
    """(skill, its expert task, compiled task, (clip time) -> reference start PhysicsInit)."""
    skill = request.param
    task = expert_task(EXPERTS[skill])
    compiled = CompiledTask.build(task)
    start = jax.jit(lambda time: task.reset_physics(
        jax.random.PRNGKey(0), compiled.home, task.clip_info(0, time)
    ))
    return skill, task, compiled, start


def _prop_qpos(compiled, skill, qpos):
    joint = compiled.layout.joint(PROP[skill])
    return np.asarray(qpos)[joint.qpos_start : joint.qpos_start + joint.qpos_size]


def test_a_late_start_puts_the_prop_where_the_clip_has_moved_it(expert):
    skill, task, compiled, start = expert
    clip = load_clip(MOTIONS_DIR / f"{skill}.npz")
    frame = int(round(LATE[skill] * clip.fps))
    state = _prop_qpos(compiled, skill, start(LATE[skill]).qpos)
    np.testing.assert_allclose(state, clip.prop(PROP[skill])[frame], atol=1e-5)
    if skill == "push":
        assert state[0] - PUSH_BOX[0] > 0.15, "the box has been pushed"
        np.testing.assert_allclose(state[1:3], PUSH_BOX[1:], atol=1e-6)  # along the table top
    else:
        assert state[0] > 1.0, "the door is open"
    at_zero = _prop_qpos(compiled, skill, start(0.0).qpos)
    np.testing.assert_allclose(at_zero, _prop_qpos(compiled, skill, compiled.home.qpos), atol=1e-6)


@pytest.mark.parametrize("time", [0.35, 0.6, 0.85])  # shares of the clip's duration
def test_a_late_start_is_not_thrown_out(expert, time):
    """With the reference targets held for a few control steps, the prop stays by the clip's and the robot upright."""
    skill, task, compiled, start = expert
    model = compiled.model
    begin = time * float(task.reference.duration(0))
    init = start(begin)
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = init.qpos, init.qvel
    reference = jax.jit(lambda t: (frame_at(task.reference, 0, t), props_at(task.reference, 0, t).qpos))
    for k in range(1, 4):
        frame, props = reference(begin + k * task.control_dt)
        data.ctrl[:] = frame.joint_pos
        mujoco.mj_step(model, data, nstep=task.config.frame_skip)
        off = _prop_qpos(compiled, skill, data.qpos) - np.asarray(props)
        if skill == "push":
            assert np.linalg.norm(off[:3]) < 0.02, f"t = {begin:.2f} s: the box is {np.linalg.norm(off[:3]) * 100:.1f} cm off"
        else:
            assert abs(np.degrees(off[0])) < 3.0, f"t = {begin:.2f} s: the door is {np.degrees(off[0]):.1f} deg off"
        assert abs(data.qpos[2] - frame.root_pos[2]) < 0.05, f"t = {begin:.2f} s: the pelvis is thrown"


def test_the_pushed_box_is_a_prop_not_an_object_to_refit_to_the_hands():
    # held_object would centre an object_pose between the hands, which rest on the box's top edge
    clip = load_clip(MOTIONS_DIR / "push.npz")
    assert clip.object_pose is None and clip.prop_joints == (("box", 7),)
    assert load_clip(MOTIONS_DIR / "door.npz").prop_joints == (("door_hinge", 1),)


def test_clip_props_are_opt_in():
    assert not TrackingConfig().clip_props
    for skill in ("stand", "walk", "sit", "run", "crawl", "carry"):
        assert "clip_props" not in EXPERTS[skill].tracking
    plain = Tracking(with_overrides(TrackingConfig(), {"clips": ("door",)}), objective=make_task("door"))
    compiled = CompiledTask.build(plain)
    info = Tracking.clip_info(0, 5.0)
    init = plain.reset_physics(jax.random.PRNGKey(0), compiled.home, info)
    np.testing.assert_array_equal(np.asarray(init.qpos)[26:], np.asarray(compiled.home.qpos)[26:])


def test_bad_prop_settings_are_user_errors():
    key = jax.random.PRNGKey(0)
    info = Tracking.clip_info(0, 1.0)
    for clips, objective, message in ((("walk",), "walk", "record no props"), (("door",), "walk", "has no joint")):
        task = Tracking(with_overrides(TrackingConfig(), {"clips": clips, "clip_props": True}), objective=make_task(objective))
        with pytest.raises(UserError, match=message):
            task.reset_physics(key, CompiledTask.build(task).home, info)
