"""Scenes: every variant and scene loads in MuJoCo and MJX, and the robot stands."""

import itertools

import mujoco
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.robot import VARIANTS
from metaworld_x.scene import SCENES, build_model, build_scene

ALL = list(itertools.product(SCENES, VARIANTS))


@pytest.mark.parametrize("scene,variant", ALL)
def test_robot_stands_for_ten_seconds_holding_home_targets(scene, variant):
    model = build_model(scene, variant)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    lowest_head = np.inf
    for _ in range(round(10.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        lowest_head = min(lowest_head, data.site("head").xpos[2])
    assert np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()
    assert lowest_head > 1.5, f"head dropped to {lowest_head:.2f} m: the robot fell"
    assert np.linalg.norm(data.qpos[:2]) < 0.1, "the robot wandered off while standing"


@pytest.mark.parametrize("scene,variant", ALL)
def test_every_scene_converts_to_mjx(scene, variant):
    from mujoco import mjx

    mjx_model = mjx.put_model(build_model(scene, variant), impl="jax")
    assert mjx_model.nu == 19


@pytest.mark.slow
@pytest.mark.parametrize("scene,variant", [("floor", "h1")])
def test_mjx_jax_steps_finite_and_matches_c_engine(scene, variant):
    import jax
    from mujoco import mjx

    model = build_model(scene, variant)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mjx_model = mjx.put_model(model, impl="jax")
    mjx_data = mjx.put_data(model, data, impl="jax")

    @jax.jit
    def hundred_steps(d):
        return jax.lax.fori_loop(0, 100, lambda _, d: mjx.step(mjx_model, d), d)

    mjx_data = hundred_steps(mjx_data)
    for _ in range(100):
        mujoco.mj_step(model, data)
    qpos = np.asarray(mjx_data.qpos)
    assert np.isfinite(qpos).all()
    # float32 MJX vs float64 C over 0.2 s of standing: same motion to a millimetre
    np.testing.assert_allclose(qpos[:3], data.qpos[:3], atol=1e-3)


def test_mjx_warp_loads_where_warp_is_installed():
    pytest.importorskip("warp", reason="warp-lang is not installed (149 MB wheel); impl='warp' is for NVIDIA GPUs")
    import jax
    from mujoco import mjx

    if jax.default_backend() != "gpu":
        pytest.skip("impl='warp' needs an NVIDIA GPU")
    assert mjx.put_model(build_model("floor"), impl="warp").nu == 19


def test_props_compose_on_request():
    model = build_model(("chair", "box"), "h1_hands")
    for body in ("chair", "box", "pelvis"):
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) >= 0
    assert model.nq == 26 + 7  # the box's free joint


def test_door_and_box_are_movable_and_table_is_static():
    model = build_model("carry", "h1_hands")
    assert model.joint("box").type == mujoco.mjtJoint.mjJNT_FREE
    door = build_model("door")
    assert door.joint("door_hinge").type == mujoco.mjtJoint.mjJNT_HINGE


def test_unknown_scene_or_prop_is_a_user_error():
    with pytest.raises(UserError, match="unknown scene 'kitchen'.*floor"):
        build_scene("kitchen")
    with pytest.raises(UserError, match="unknown prop"):
        build_scene(("box", "sofa"))


def test_door_opens_away_from_the_robot():
    """The robot stands at -x; a positive hinge angle must move the handle along +x, so pushing opens it."""
    model = build_model("door")
    data = mujoco.MjData(model)
    hinge = model.jnt_qposadr[model.joint("door_hinge").id]
    mujoco.mj_kinematics(model, data)
    closed = data.site("door_handle").xpos.copy()
    data.qpos[hinge] = 0.5
    mujoco.mj_kinematics(model, data)
    opened = data.site("door_handle").xpos
    assert opened[0] - closed[0] > 0.3, (closed, opened)
    assert model.jnt_range[model.joint("door_hinge").id][0] == 0.0  # it cannot swing towards the robot
