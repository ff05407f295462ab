"""Home starts: a share of tracking episodes begins, and goes on, as a router runs an expert."""

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.envs import rotations
from metaworld_x.experts.environment import expert_task, make_env
from metaworld_x.envs.observations import twist_yaw, yaw
from metaworld_x.envs.reference import closest_frame_time, frame_at, ground_pose, moved_on_ground, reanchor
from metaworld_x.envs.task import with_overrides
from metaworld_x.envs.tasks.tracking import Tracking, TrackingConfig
from metaworld_x.errors import UserError
from metaworld_x.experts.specs import expert_spec
from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR
from metaworld_x.robot import JOINT_NAMES
from metaworld_x.routing.scene import ExpertScene
from metaworld_x.routing.skill_observation import SkillObservation

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from observed_alike import observed_alike_for_six_steps  # noqa: E402

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")


def _walk(**tracking) -> Tracking:
    """The walk expert's task with `tracking` settings changed."""
    task = expert_task(expert_spec("walk"))
    return Tracking(with_overrides(task.config, tracking), objective=task.objective)


def test_moving_a_frame_on_the_ground_turns_it_rigidly_and_moves_back():
    ref = _walk().reference
    frame = frame_at(ref, 0, 0.4)
    source, destination = jnp.asarray([0.3, -0.2, 0.4]), jnp.asarray([2.0, 1.0, -1.1])
    moved = moved_on_ground(frame, source, destination)
    back = moved_on_ground(moved, destination, source)
    for name in ("root_pos", "root_quat", "root_lin_vel", "keypoint_pos"):
        np.testing.assert_allclose(np.asarray(getattr(back, name)), np.asarray(getattr(frame, name)), atol=1e-5)
    # heights, joints, speeds and pelvis-frame rates stay; distances between points stay
    np.testing.assert_allclose(np.asarray(moved.keypoint_pos[:, 2]), np.asarray(frame.keypoint_pos[:, 2]), atol=1e-6)
    np.testing.assert_allclose(np.asarray(moved.joint_pos), np.asarray(frame.joint_pos))
    np.testing.assert_allclose(np.linalg.norm(moved.root_lin_vel), np.linalg.norm(frame.root_lin_vel), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(moved.root_ang_vel), np.asarray(frame.root_ang_vel))
    spread = lambda f: np.linalg.norm(np.asarray(f.keypoint_pos - f.root_pos), axis=-1)  # noqa: E731
    np.testing.assert_allclose(spread(moved), spread(frame), atol=1e-5)
    turned = np.asarray(ground_pose(moved.root_pos, moved.root_quat) - ground_pose(frame.root_pos, frame.root_quat))
    assert abs(turned[2] - (-1.5)) < 1e-4
    identity = moved_on_ground(frame, jnp.zeros(3), jnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(identity.keypoint_pos), np.asarray(frame.keypoint_pos))


def test_twist_yaw_is_the_heading_of_a_turned_and_pitched_body_up_to_a_pitch_past_vertical():
    rng = np.random.default_rng(0)
    heading, pitch = rng.uniform(-np.pi, np.pi, 64), rng.uniform(-1.7, 1.7, 64)  # up to 97 degrees either way
    turn = np.stack([np.cos(heading / 2), 0 * heading, 0 * heading, np.sin(heading / 2)], axis=-1)
    tip = np.stack([np.cos(pitch / 2), 0 * pitch, np.sin(pitch / 2), 0 * pitch], axis=-1)
    quat = rotations.multiply(jnp.asarray(turn), jnp.asarray(tip))
    wrapped = lambda a: np.angle(np.exp(1j * np.asarray(a)))  # noqa: E731
    np.testing.assert_allclose(wrapped(twist_yaw(quat) - heading), 0.0, atol=1e-4)
    np.testing.assert_allclose(wrapped(twist_yaw(-quat) - heading), 0.0, atol=1e-4)  # q and -q: one rotation
    upright = np.abs(pitch) < 1.2
    np.testing.assert_allclose(wrapped(twist_yaw(quat) - yaw(quat))[upright], 0.0, atol=1e-4)


def test_reanchoring_a_crawl_keeps_its_heading_when_the_pelvis_points_at_the_floor():
    # crawl_get_down where the pelvis's x axis points most nearly straight down (its heading flips there)
    task = Tracking(TrackingConfig(clips=("crawl_get_down",), face_forward=True))
    x_axis_z = 2 * (np.asarray(task.reference.root_quat[0, :, 1]) * np.asarray(task.reference.root_quat[0, :, 3])
                    - np.asarray(task.reference.root_quat[0, :, 0]) * np.asarray(task.reference.root_quat[0, :, 2]))
    frame = int(np.argmin(x_axis_z[: int(3.0 / task.control_dt)]))
    assert x_axis_z[frame] < -0.99
    now = frame_at(task.reference, 0, frame * task.control_dt)
    tilt = jnp.asarray([np.cos(np.radians(2.5)), 0.0, -np.sin(np.radians(2.5)), 0.0])  # 5 degrees less pitch
    robot_quat = rotations.multiply(now.root_quat, tilt)
    moved = reanchor(now, now, now.root_pos, robot_quat)
    # a robot a few degrees off the clip's pitch gets the clip where it is, not turned about the vertical
    shift = np.linalg.norm(np.asarray(moved.keypoint_pos - now.keypoint_pos), axis=-1)
    assert shift.max() < 0.05, f"re-anchoring moved a keypoint {shift.max():.2f} m"
    # the pelvis x axis's own heading would have turned it by more than a radian
    assert abs(np.angle(np.exp(1j * float(yaw(robot_quat) - yaw(now.root_quat))))) > 1.0


def test_home_start_puts_the_robot_at_rest_in_the_home_pose_and_the_clip_on_it():
    task = _walk(home_start_fraction=1.0, reset_noise=0.0)
    env = make_env(task, 4, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    home = env.compiled.model.key_qpos[0]
    n = 7 + len(JOINT_NAMES)
    view = state.data.view
    np.testing.assert_allclose(np.asarray(view.robot_qpos), np.broadcast_to(home[:n], (4, n)), atol=1e-6)
    np.testing.assert_allclose(np.asarray(view.robot_qvel), 0.0, atol=1e-6)
    start = closest_frame_time(task.reference, home[7:n])
    np.testing.assert_allclose(np.asarray(state.info["ref_time"]), start, atol=1e-6)
    assert np.all(np.asarray(state.info["from_home"]))
    # the reference the robot is asked to follow stands where the robot stands and faces where it faces
    frames = jax.vmap(task._frame)(view, state.info)
    np.testing.assert_allclose(np.asarray(ground_pose(frames.root_pos, frames.root_quat)),
                               np.asarray(ground_pose(view.root_pos, view.root_quat)), atol=1e-5)
    clip_height = float(frame_at(task.reference, 0, start).root_pos[2])
    np.testing.assert_allclose(np.asarray(frames.root_pos[:, 2]), clip_height, atol=1e-6)


def _matches_the_router_for_six_steps(task: Tracking, skill: SkillObservation):
    """Steps two home-start episodes of `task` with small random actions, asserting at each step that its
    observation equals the one a router builds for `skill`; returns the last state."""
    env = make_env(task, 2, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(1))
    scene = ExpertScene(objective=task.objective, skills=(skill,))
    objective_keys = tuple(task.objective.reset_info(jax.random.PRNGKey(0)))

    def routed(view, info):
        own = {k: info[k] for k in objective_keys}
        observed = scene.observe(view, {**info, "skill_time": info["ref_time"][None], "skill_info": {skill.name: own}})
        return observed[f"expert/{skill.name}"]

    return observed_alike_for_six_steps(env, state, jax.jit(jax.vmap(routed)))


def test_a_home_start_episode_sees_what_the_router_shows_the_expert_at_every_step():
    """Both re-anchor the clip onto the robot each step, so the observations agree after the robot has moved too."""
    task = _walk(home_start_fraction=1.0)
    _matches_the_router_for_six_steps(task, SkillObservation("walk", task, "scene"))


def test_a_home_start_anchored_once_keeps_its_clip_where_it_began_while_the_robot_moves_off_it():
    """home_anchor "once": the clip is moved once onto the home pose, then stays; a robot that drifts is off it."""
    once, every = (_walk(home_start_fraction=1.0, reset_noise=0.0, home_anchor=a) for a in ("once", "every_step"))
    env = make_env(once, 2, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    frames = jax.vmap(once._frame)(state.data.view, state.info)
    np.testing.assert_allclose(np.asarray(ground_pose(frames.root_pos, frames.root_quat)),
                               np.asarray(ground_pose(state.data.view.root_pos, state.data.view.root_quat)), atol=1e-5)
    rng = np.random.default_rng(0)
    for _ in range(25):
        state = env.step(state, jnp.asarray(rng.uniform(-0.3, 0.3, (2, env.action_size)), jnp.float32))
    assert not np.any(np.asarray(state.info["step"]) == 0), "an episode ended; the comparison needs live ones"
    view, info = state.data.view, state.info
    source, destination = once._home_anchor
    for i in range(2):
        clip = frame_at(once.reference, 0, float(info["ref_time"][i]))
        expected = moved_on_ground(clip, jnp.asarray(source), jnp.asarray(destination))
        got = once._frame(jax.tree.map(lambda a: a[i], view), jax.tree.map(lambda a: a[i], info))
        np.testing.assert_allclose(np.asarray(got.keypoint_pos), np.asarray(expected.keypoint_pos), atol=1e-5)
    # where the robot has got to now counts: the re-anchored clip follows its root, the anchored-once one does not
    follows = jax.vmap(every._frame)(view, info)
    robot_xy = np.asarray(view.root_pos[:, :2])
    assert np.abs(np.asarray(follows.root_pos[:, :2]) - robot_xy).max() < 1e-5
    kept = jax.vmap(once._frame)(view, info)
    assert np.linalg.norm(np.asarray(kept.root_pos[:, :2]) - robot_xy, axis=-1).min() > 1e-3
    errors_once = np.asarray(jax.vmap(once.keypoint_errors)(view, info)).mean()
    errors_every = np.asarray(jax.vmap(every.keypoint_errors)(view, info)).mean()
    assert errors_once > errors_every


def test_the_crawl_clip_anchored_once_stands_where_the_clip_is_and_a_bad_anchoring_is_refused():
    """The crawl clip faces forward from the origin at its home start time 0, where the home pose stands: anchored
    once, a home start's clip is the clip where it is, as a clip start at 0 s follows it. Within a degree: its
    simulated get-down ends a few centimetres to the side, and facing forward lines its whole travel up with +x."""
    task = expert_task(expert_spec("crawl"))
    once = Tracking(with_overrides(task.config, {"home_anchor": "once"}), objective=task.objective)
    source, destination = once._home_anchor
    np.testing.assert_allclose(source, destination, atol=0.02)
    with pytest.raises(UserError, match="home_anchor"):
        with_overrides(task.config, {"home_anchor": "sideways"})


def _pickup_carry(**tracking) -> Tracking:
    """Tracking of pickup_carry (squat, pick the box up off the floor, carry it, set it down) as a carry expert
    that a router can start from home trains on it: the box where the clip has it, home starts at its t = 0."""
    from metaworld_x.envs.tasks import make_task

    settings = {"clips": ("pickup_carry",), "face_forward": True, "object_joint": "box", "scene_from_clip": True,
                "episode_length": 300, "action_scale": 0.85, "home_start_time": 0.0, **tracking}
    return Tracking(with_overrides(TrackingConfig(), settings), objective=make_task("carry"))


@pytest.mark.skipif(not (MOTIONS_DIR / "pickup_carry.npz").is_file(), reason="assets/motions/pickup_carry.npz is missing")
def test_a_prop_clips_home_start_puts_the_robot_at_home_beside_the_untouched_box_where_the_clip_has_it():
    from metaworld_x.envs.compiled import CompiledTask
    from metaworld_x.envs.reference import object_at
    from metaworld_x.scene.props import default_box_height

    task = _pickup_carry(home_start_fraction=1.0)
    compiled = CompiledTask.build(task)
    init, info = jax.jit(compiled.sample_resets)(jax.random.split(jax.random.PRNGKey(0), 4))
    home, box_q = compiled.model.key_qpos[0], compiled.layout.joint("box").qpos_start
    first_box = np.asarray(object_at(task.reference, 0, 0.0).pos)
    assert np.all(np.asarray(info["ref_time"]) == 0.0)
    for qpos in np.asarray(init.qpos):
        np.testing.assert_allclose(qpos[7:26], home[7:26], atol=0.1)  # the home pose, with reset noise
        np.testing.assert_allclose(qpos[box_q : box_q + 3], first_box, atol=1e-5)
    # the scene laid out along the clip rests that box on the floor (the clip's grip holds it 5 cm up)
    assert first_box[2] - default_box_height(None) < 0.1 and home[box_q + 2] == default_box_height(None)
    np.testing.assert_allclose(home[box_q : box_q + 2], first_box[:2], atol=1e-6)
    with pytest.raises(UserError, match="needs home_start_time"):
        _pickup_carry(home_start_fraction=0.5, home_start_time=None)


@pytest.mark.skipif(not (MOTIONS_DIR / "pickup_carry.npz").is_file(), reason="assets/motions/pickup_carry.npz is missing")
def test_a_prop_clips_home_start_keeps_the_clip_in_place_as_a_router_shows_it_in_a_scene_laid_out_as_its_own():
    """Its box lies where the clip has it, so a home start is not re-anchored: the expert's observation is the
    in-place one a router builds in a scene laid out as the expert's own, also once the robot moves."""
    task = _pickup_carry(home_start_fraction=1.0)
    state = _matches_the_router_for_six_steps(task, SkillObservation("carry", task, "shared", in_place=True))
    assert np.all(np.asarray(state.info["from_home"]))
    frames = jax.vmap(task._frame)(state.data.view, state.info)
    clip = frame_at(task.reference, 0, float(state.info["ref_time"][0]))
    np.testing.assert_allclose(np.asarray(frames.root_pos[0]), np.asarray(clip.root_pos), atol=1e-6)  # not moved


def test_a_share_of_episodes_starts_from_home_and_the_rest_on_the_clip_where_it_is():
    task = _walk(home_start_fraction=0.3)
    infos = jax.vmap(task.reset_info)(jax.random.split(jax.random.PRNGKey(2), 2000))
    from_home = np.asarray(infos["from_home"])
    assert 0.25 < from_home.mean() < 0.35
    home = task.build_model().key_qpos[0][7 : 7 + len(JOINT_NAMES)]
    np.testing.assert_allclose(np.asarray(infos["ref_time"])[from_home], closest_frame_time(task.reference, home))
    # an episode that starts on the clip follows the clip where it is, exactly
    view = SimpleNamespace(root_pos=jnp.asarray([5.0, -3.0, 0.9]), root_quat=jnp.asarray([0.0, 0.0, 0.0, 1.0]))
    info = task.clip_info(0, 0.7)
    np.testing.assert_array_equal(np.asarray(task._frame(view, info).keypoint_pos),
                                  np.asarray(frame_at(task.reference, 0, 0.7).keypoint_pos))


def test_home_starts_of_a_multi_clip_expert_use_its_first_clip_as_the_router_does():
    task = Tracking(with_overrides(expert_task(expert_spec("stand")).config, {"home_start_fraction": 0.5}),
                    objective=expert_task(expert_spec("stand")).objective)
    infos = jax.vmap(task.reset_info)(jax.random.split(jax.random.PRNGKey(3), 400))
    from_home, clips = np.asarray(infos["from_home"]), np.asarray(infos["clip"])
    assert np.all(clips[from_home] == 0)
    assert set(clips[~from_home]) == {0, 1}


def test_home_starts_have_their_own_looser_deviation_limit():
    """A home start begins off the clip's pose; the router it prepares for never ends an episode for that."""
    task = _walk(home_start_fraction=1.0, reset_noise=0.0)
    env = make_env(task, 1, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    view, info = jax.tree.map(lambda x: x[0], state.data.view), jax.tree.map(lambda x: x[0], state.info)
    worst = float(jnp.max(jnp.linalg.norm(task._keypoints(view) - task._frame(view, info).keypoint_pos, axis=-1)))
    assert worst > 0.1  # the home pose is not the clip's
    strict = Tracking(with_overrides(task.config, {"max_deviation": worst - 0.05, "home_max_deviation": worst + 0.05}),
                      objective=task.objective)
    assert not bool(strict._terminate_deviation(view, info))
    assert bool(strict._terminate_deviation(view, {**info, "from_home": jnp.asarray(False)}))


@pytest.mark.parametrize("settings,words", [
    ({"home_start_fraction": 1.5}, "home_start_fraction must be in [0, 1]"),
    ({"home_start_fraction": 0.2, "object_joint": "box"}, "needs home_start_time"),
    ({"home_start_fraction": 0.2, "clip_props": True}, "needs home_start_time"),
])
def test_impossible_home_start_settings_are_refused(settings, words):
    with pytest.raises(UserError, match=words.replace("[", r"\[").replace("]", r"\]")):
        with_overrides(TrackingConfig(), settings)


def test_a_named_home_start_time_replaces_the_closest_frame_for_home_starts_and_the_router_alike(tmp_path):
    """run_start's frame closest to home lies mid-speed-up; a clip made to start from rest names its start."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.experts.policy import load_policy
    from metaworld_x.routing.scene import build_expert_scene

    if not (EXPERTS_DIR / "run" / "policy.json").is_file():
        pytest.skip("the shipped run expert is missing (train it with `metaworld-x train expert run`)")

    base = expert_task(expert_spec("walk"))
    clip = {"clips": ("run_start",), "home_start_fraction": 1.0}
    closest, named = (Tracking(with_overrides(base.config, {**clip, **extra}), objective=base.objective)
                      for extra in ({}, {"home_start_time": 0.0}))
    home = closest.build_model().key_qpos[0][7 : 7 + len(JOINT_NAMES)]
    assert closest.home_start_time(home) > 1.0  # the reason for the setting
    assert named.home_start_time(home) == 0.0
    infos = jax.jit(jax.vmap(named.reset_info))(jax.random.split(jax.random.PRNGKey(4), 50))  # as an env resets
    assert np.all(np.asarray(infos["ref_time"]) == 0.0) and np.all(np.asarray(infos["from_home"]))
    # a router's clock for the expert starts where its home starts did
    expert = tmp_path / "run"
    shutil.copytree(EXPERTS_DIR / "run", expert)
    spec = {**json.loads((expert / "spec.json").read_text()), "clips": ["run_start"], "tracking": {"home_start_time": 0.0}}
    (expert / "spec.json").write_text(json.dumps(spec))
    _, policy = load_policy(expert)
    _, record = build_expert_scene(make_task("run"), {"run": expert}, {"run": policy})
    assert record["run"]["start_time"] == 0.0
    with pytest.raises(UserError, match="home_start_time"):
        TrackingConfig(home_start_time=-1.0)
