"""What a clip's poses stand on (metaworld_x.motion.support): the lowest point and the centre of mass."""

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.ik import home_qpos
from metaworld_x.motion.support import (
    SupportTrace,
    lowest_points,
    polygon_margin,
    support_trace,
)
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import robot_spec
from metaworld_x.robot.constants import HOME_ROOT_HEIGHT

SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.5]])


@pytest.fixture(scope="module")
def model():
    return robot_spec("h1").compile()


def test_polygon_margin_is_the_signed_distance_to_the_hulls_edge():
    assert polygon_margin(SQUARE, np.array([0.5, 0.5])) == pytest.approx(0.5)
    assert polygon_margin(SQUARE, np.array([0.9, 0.5])) == pytest.approx(0.1)
    assert polygon_margin(SQUARE, np.array([1.3, 0.5])) == pytest.approx(-0.3)
    assert polygon_margin(SQUARE, np.array([1.3, 1.4])) == pytest.approx(-0.5)  # past a corner: to the corner


def test_a_support_without_area_has_no_inside():
    line = np.array([[0.0, 0.0], [0.5, 0.0], [1.0, 0.0]])
    assert polygon_margin(line, np.array([0.5, 0.0])) == pytest.approx(0.0)
    assert polygon_margin(line, np.array([0.5, 0.2])) == pytest.approx(-0.2)
    assert polygon_margin(line, np.array([1.5, 0.0])) == pytest.approx(-0.5)
    assert polygon_margin(np.array([[1.0, 1.0]]), np.array([1.0, 2.0])) == pytest.approx(-1.0)


def test_lowest_points_match_mujocos_distance_to_a_floor():
    """The hand-made geometry (capsule caps, sphere bottoms, box corners) against MuJoCo's own geom distance."""
    spec = robot_spec("h1")
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1])
    floored = spec.compile()
    data = mujoco.MjData(floored)
    rng = np.random.default_rng(0)
    floor = floored.geom("floor").id
    for _ in range(5):
        data.qpos[:] = home_qpos(floored, 1.2)
        data.qpos[3:7] = Rotation.from_rotvec(rng.normal(0, 0.6, 3)).as_quat(scalar_first=True)
        data.qpos[7:] += rng.normal(0, 0.4, floored.nq - 7)
        mujoco.mj_kinematics(floored, data)
        for geom in range(floored.ngeom):
            if geom == floor or not floored.geom_contype[geom]:
                continue
            distance = mujoco.mj_geomDistance(floored, data, geom, floor, 5.0, None)
            assert lowest_points(floored, data, [geom])[:, 2].min() == pytest.approx(distance, abs=1e-6)


def test_other_geom_kinds_are_refused():
    spec = robot_spec("h1")
    spec.body("pelvis").add_geom(name="can", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.05, 0.1, 0])
    odd = spec.compile()
    data = mujoco.MjData(odd)
    mujoco.mj_kinematics(odd, data)
    with pytest.raises(UserError, match="'can' is a mjGEOM_CYLINDER"):
        lowest_points(odd, data, [odd.geom("can").id])


def test_standing_at_home_is_on_the_floor_with_the_centre_of_mass_over_the_feet(model):
    home = home_qpos(model, HOME_ROOT_HEIGHT)
    trace = support_trace(model, home[None], fps=50)
    assert abs(trace.height[0]) < 0.005
    assert 0.05 < trace.margin[0] < 0.15  # the feet are 20 cm long, the centre of mass near their middle
    raised = home.copy()
    raised[2] += 0.1
    assert support_trace(model, raised[None], fps=50).height[0] == pytest.approx(trace.height[0] + 0.1)


def test_leaning_past_the_toes_leaves_the_support(model):
    """The whole robot tipped forward about its toes: the further, the further the centre of mass is past them."""
    margins = []
    for pitch in (0.0, 0.1, 0.2, 0.3):
        pose = home_qpos(model, HOME_ROOT_HEIGHT)
        pose[3:7] = Rotation.from_euler("y", pitch).as_quat(scalar_first=True)
        margins.append(support_trace(model, pose[None], fps=50).margin[0])
    assert margins[0] > 0 > margins[2] > margins[3]
    assert np.all(np.diff(margins) < 0)


def test_summary_counts_the_longest_stretches():
    trace = SupportTrace(height=np.array([0.0, 0.05, 0.05, 0.0, 0.05]), margin=np.array([0.1, -0.2, 0.0, -0.2, -0.2]), fps=10)
    assert trace.summary() == {"airborne_share": 0.6, "airborne_longest_s": 0.2, "margin_min_m": -0.2,
                               "outside_longest_s": 0.2}


def test_quiet_clips_stay_over_their_feet_and_the_crawl_get_down_dives(model):
    """Standing and the one-hand reach never leave the feet. crawl_get_down's way onto the hands (1.3-1.7 s) is a
    fall, more than 10 cm past the support throughout: in the kinematic dive, and in the crawl expert's
    simulated get-down that replaced it, which a body does make, caught on the hands."""
    for name in ("stand", "stand_2", "reach_one_hand"):
        clip = read_clip(MOTIONS_DIR / f"{name}.npz")
        trace = support_trace(model, clip.qpos, clip.fps)
        assert trace.height.max() < 0.01 and trace.margin.min() > 0.03, name
    clip = read_clip(MOTIONS_DIR / "crawl_get_down.npz")
    dive = clip.qpos[int(1.3 * clip.fps): int(1.7 * clip.fps)]
    trace = support_trace(model, dive, clip.fps)
    assert trace.margin.max() < -0.1 and trace.height.max() < 0.01
