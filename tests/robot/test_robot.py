"""The robot model: structure, fidelity to the real H1, and standing."""

import mujoco
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.robot import JOINT_NAMES, SITE_NAMES, VARIANTS, robot_spec
from metaworld_x.robot.model import pd_gains


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_has_h1_joints_actuators_and_sites(variant):
    model = robot_spec(variant).compile()
    assert (model.nq, model.nv, model.nu) == (26, 25, 19)
    assert tuple(model.joint(model.actuator_trnid[i, 0]).name for i in range(model.nu)) == JOINT_NAMES
    for site in SITE_NAMES:
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site) >= 0, site
    # position servos: ctrl is a joint target within the joint's range
    np.testing.assert_allclose(model.actuator_ctrlrange, model.jnt_range[model.actuator_trnid[:, 0]])
    assert (model.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE).all()


def test_collision_geometry_is_primitive():
    model = robot_spec("h1_hands").compile()
    primitive = {mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_SPHERE}
    assert {mujoco.mjtGeom(t) for t in model.geom_type} <= primitive


def test_hands_variant_adds_paddles_only():
    bare, hands = robot_spec("h1").compile(), robot_spec("h1_hands").compile()
    assert hands.nbody == bare.nbody + 2
    for side in ("left", "right"):
        assert mujoco.mj_name2id(hands, mujoco.mjtObj.mjOBJ_GEOM, f"{side}_paddle") >= 0


def _random_configs(model, rng, n):
    low, high = model.jnt_range[1:, 0], model.jnt_range[1:, 1]
    for _ in range(n):
        qpos = model.qpos0.copy()
        qpos[:3] = rng.uniform(-1, 1, 3)
        quat = rng.normal(size=4)
        qpos[3:7] = quat / np.linalg.norm(quat)
        qpos[7:] = rng.uniform(low, high)
        yield qpos


def test_kinematics_and_mass_match_reference_h1(reference_h1):
    ours = robot_spec("h1").compile()
    reference = mujoco.MjModel.from_xml_path(str(reference_h1))
    assert abs(ours.body_mass.sum() - reference.body_mass.sum()) <= 0.01 * reference.body_mass.sum()
    bodies = [reference.body(i).name for i in range(1, reference.nbody)]
    ours_data, ref_data = mujoco.MjData(ours), mujoco.MjData(reference)
    worst = 0.0
    for qpos in _random_configs(ours, np.random.default_rng(0), 100):
        ours_data.qpos[:] = qpos
        ref_data.qpos[:] = qpos
        mujoco.mj_kinematics(ours, ours_data)
        mujoco.mj_kinematics(reference, ref_data)
        for body in bodies:
            worst = max(worst, np.linalg.norm(ours_data.body(body).xpos - ref_data.body(body).xpos))
    assert worst <= 0.005, f"body positions differ by up to {worst * 1000:.1f} mm"


def test_menagerie_h1_by_path_gets_our_pd_servos_and_sites(reference_h1):
    model = robot_spec("h1", reference_h1.parent).compile()
    gains = pd_gains()
    for i, joint in enumerate(JOINT_NAMES):
        kp, kv, force_range = gains[joint]
        assert model.actuator_gainprm[i, 0] == pytest.approx(kp)
        assert model.actuator_biasprm[i, 2] == pytest.approx(-kv)
        np.testing.assert_allclose(model.actuator_forcerange[i], force_range)
    for site in SITE_NAMES:
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site) >= 0
    # floating without gravity or contacts, the servos drive every joint to its target
    model.opt.gravity[:] = 0
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    data = mujoco.MjData(model)
    target = np.clip(0.3, model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1])
    data.ctrl[:] = target
    for _ in range(1000):
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(data.qpos[7:], target, atol=0.02)


def test_model_that_is_not_an_h1_is_refused(tmp_path):
    xml = tmp_path / "arm.xml"
    xml.write_text(
        '<mujoco><worldbody><body><joint name="shoulder"/><geom size="0.1"/></body></worldbody></mujoco>'
    )
    with pytest.raises(UserError, match="not an H1"):
        robot_spec("h1", xml)


def test_bad_variant_and_missing_file_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="unknown robot variant"):
        robot_spec("h2")
    with pytest.raises(UserError, match="not found"):
        robot_spec("h1", tmp_path / "missing.xml")
    malformed = tmp_path / "bad.xml"
    malformed.write_text("<mujoco><worldbody><body")
    with pytest.raises(UserError, match="cannot load robot MJCF"):
        robot_spec("h1", malformed)


def test_robot_and_prop_geoms_split_a_scene_between_the_robot_the_floor_and_the_props():
    from metaworld_x.robot.parts import prop_geoms, robot_geoms
    from metaworld_x.scene import build_model

    alone, door = build_model("floor"), build_model("door")
    robot, props = robot_geoms(door), prop_geoms(door)
    assert len(robot_geoms(alone)) == len(robot) and len(prop_geoms(alone)) == 0
    assert not set(robot) & set(props)
    floor = set(np.flatnonzero(door.geom_bodyid == 0))
    assert set(robot) | set(props) | floor == set(range(door.ngeom))
    leaf = door.jnt_bodyid[door.joint("door_hinge").id]
    assert set(np.flatnonzero(door.geom_bodyid == leaf)) and set(np.flatnonzero(door.geom_bodyid == leaf)) <= set(props)
    assert all(door.body(door.geom_bodyid[g]).name != "world" for g in robot)
