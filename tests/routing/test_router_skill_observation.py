"""Each expert's observation inside a router episode: its own clock, its reference re-anchored to the robot."""

import sys
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.experts.environment import expert_task, make_env
from metaworld_x.errors import UserError
from metaworld_x.experts.specs import expert_spec
from metaworld_x.routing.scene import ExpertScene, expert_obs_layout
from metaworld_x.routing.skill_observation import SkillObservation, reference_features

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from observed_alike import observed_alike_for_six_steps  # noqa: E402


@pytest.mark.parametrize("skill", ["walk", "sit"])
def test_expert_observation_equals_the_tracking_observation_in_its_own_scene(skill):
    """Right after a tracking reset (phase 0 or any other) the robot is on its reference, so re-anchoring is the identity."""
    tracking = expert_task(expert_spec(skill))
    env = make_env(tracking, 6, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(3))
    assert np.any(np.asarray(state.info["ref_time"]) == 0.0)  # some worlds start at phase 0
    skill_obs = SkillObservation(skill, tracking, "scene")
    scene = ExpertScene(objective=tracking.objective, skills=(skill_obs,))
    objective_keys = tuple(tracking.objective.reset_info(jax.random.PRNGKey(0)))

    def composite(view, info):
        own = {k: info[k] for k in objective_keys}
        scene_info = {**info, "skill_time": info["ref_time"][None], "skill_info": {skill: own}}
        return scene.observe(view, scene_info)[f"expert/{skill}"]

    ours = np.asarray(jax.vmap(composite)(state.data.view, state.info))
    theirs = np.asarray(state.obs["state"])
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    layout = expert_obs_layout(skill, {"observation_size": theirs.shape[1]}, tracking, 3 if skill == "sit" else 1)
    assert sum(size for _, size in layout) == theirs.shape[1]


def test_a_recorded_layout_that_does_not_add_up_to_the_policys_input_is_refused():
    layout = [["proprioception", 49], ["phase", 2]]
    spec = {"obs_layout": layout, "observation_size": 51}
    assert expert_obs_layout("walk", spec, None, 0) == layout
    with pytest.raises(UserError, match="'walk': its observation layout adds up to 51 entries but its policy reads 53"):
        expert_obs_layout("walk", {**spec, "observation_size": 53}, None, 0)


def _yaw_quat(angle):
    return jnp.asarray([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)], jnp.float32)


def test_reference_is_re_anchored_wherever_the_robot_stands_or_faces():
    """Offsets in the heading frame do not change; the target orientation (a world quaternion, as in training) turns with the robot."""
    from metaworld_x.envs.rotations import multiply

    tracking = expert_task(expert_spec("walk"))
    features = jax.jit(lambda pos, quat, t: reference_features(tracking, SimpleNamespace(root_pos=pos, root_quat=quat), t))
    here = (jnp.asarray([0.0, 0.0, 0.98]), _yaw_quat(0.0))
    there = (jnp.asarray([3.0, -2.0, 0.98]), _yaw_quat(2.0))
    block = 19 + 3 + 4 + 3 * len(tracking.reference.keypoint_names)
    quats = [2 + i * block + 22 for i in range(len(tracking.config.future_steps))]
    for t in (0.0, 0.37, 5.0):  # 5 s: the looping walk clip several cycles on
        a, b = np.asarray(features(*here, t)), np.asarray(features(*there, t))
        mask = np.ones(a.size, bool)
        for q in quats:
            mask[q : q + 4] = False
            np.testing.assert_allclose(np.asarray(multiply(_yaw_quat(2.0), jnp.asarray(a[q : q + 4]))), b[q : q + 4], atol=1e-5)
        np.testing.assert_allclose(a[mask], b[mask], atol=1e-5)


def test_an_objective_the_scene_cannot_compute_is_frozen_at_its_training_start_values():
    tracking = expert_task(expert_spec("sit"))
    frozen = SkillObservation("sit", tracking, "frozen", (0.1, -0.2, 0.3))
    view = SimpleNamespace(root_pos=jnp.asarray([1.0, 2.0, 0.98]), root_quat=_yaw_quat(0.5))
    features = np.asarray(frozen.features(view, {}, 0.4, {}))
    np.testing.assert_allclose(features[:-3], np.asarray(reference_features(tracking, view, 0.4)))
    np.testing.assert_allclose(features[-3:], [0.1, -0.2, 0.3])
    assert frozen.reset_info(jax.random.PRNGKey(0)) == {}


def test_experts_with_different_action_scales_are_mixed_as_servo_targets(tmp_path):
    """An expert trained with a wider action scale joins the others: the scene takes the widest scale, and the
    executed servo target is the weighted sum of the targets each expert's own action map would have set."""
    import json
    import shutil

    from metaworld_x.envs.tasks import make_task
    from metaworld_x.paths import EXPERTS_DIR
    from metaworld_x.experts.policy import act
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.rollouts import SceneRunner
    from metaworld_x.routing.scene import build_expert_scene

    if not (EXPERTS_DIR / "walk" / "policy.json").is_file():
        pytest.skip("needs the shipped walk expert")
    shutil.copytree(EXPERTS_DIR / "walk", tmp_path / "walk")
    shutil.copytree(EXPERTS_DIR / "walk", tmp_path / "walk_wide")
    spec = json.loads((tmp_path / "walk_wide" / "spec.json").read_text())
    (tmp_path / "walk_wide" / "spec.json").write_text(json.dumps({**spec, "action_scale": 2 * spec["action_scale"]}))
    dirs = {p.name: p for p in sorted(tmp_path.iterdir())}
    experts = ExpertSet.load(dirs)
    scene, record = build_expert_scene(make_task("walk"), dirs, dict(zip(experts.names, experts.specs)))
    assert scene.action_gains == (0.5, 1.0) and scene.config.action_scale == 2 * spec["action_scale"]
    assert record["walk"]["action_gain"] == 0.5

    runner = SceneRunner(scene, experts.params, 2)
    state = runner.env.reset(jax.random.PRNGKey(0))
    weights = np.asarray([[0.3, 0.7], [0.8, 0.2]], np.float32)
    executed = np.asarray(runner.act(state, weights))
    own = [np.asarray(act(p, o)) for p, o in zip(experts.params, runner.expert_obs(state.obs))]  # each in its own units
    half_range = np.asarray(runner.env.compiled.action_map.scale) / scene.config.action_scale
    home = np.asarray(runner.env.compiled.action_map.home)
    own_targets = [home + a * s * half_range for a, s in zip(own, (spec["action_scale"], 2 * spec["action_scale"]))]
    mixed = weights[:, :1] * own_targets[0] + weights[:, 1:] * own_targets[1]
    np.testing.assert_allclose(home + executed * np.asarray(runner.env.compiled.action_map.scale), mixed, atol=1e-5)


def test_an_expert_in_a_scene_of_its_own_task_reads_the_scenes_task_variables():
    """In the reach scene the reach expert must aim at the target the scene drew (and shows), not at one drawn for it
    alone: with its own draw ("scene") the router's reach episodes scored 0/10 while the expert alone scored 8/10."""
    from metaworld_x.envs.backends import make

    tracking = expert_task(expert_spec("reach_one_hand"))
    reach = tracking.objective
    size = 6  # the target relative to the robot (3) and the hand's offset to it (3)
    worlds = 4
    for source, agrees in (("shared", True), ("scene", False)):
        scene = ExpertScene(objective=reach, skills=(SkillObservation("reach_one_hand", tracking, source),))
        state = make(scene, "cpu", worlds).reset(jax.random.PRNGKey(1))
        expert_view = np.asarray(state.obs["expert/reach_one_hand"])[:, -size:]
        scene_view = np.asarray(state.obs["state"])[:, -size:]  # the router's observation ends with the task's features
        assert np.allclose(expert_view, scene_view, atol=1e-5) == agrees, source


def test_a_prop_expert_sees_its_clip_in_place_only_in_a_scene_laid_out_as_its_own():
    """The door clip opens the door where the door stands; re-anchored, the reference drifts with every step the
    robot falls behind (the door router fell after passing through). Elsewhere, clips are re-anchored."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.robot import JOINT_NAMES
    from metaworld_x.routing.skill_observation import clip_in_place

    def in_place(expert, task):
        scene = make_task(task)
        model = scene.build_model()
        tracking = expert_task(expert_spec(expert))
        start = tracking.home_start_time(model.key_qpos[0][7 : 7 + len(JOINT_NAMES)])  # as the router starts it
        return clip_in_place(model, tracking, start, scene.start_root(model))

    assert in_place("door", "door") and in_place("push", "push")
    assert not in_place("door", "push") and not in_place("push", "door")
    assert in_place("carry", "fetch")  # the fetch scene is laid out along the carry clip
    assert not in_place("carry", "push")
    assert not in_place("walk", "walk")  # its clip moves no props: nothing to be in place with


def test_in_place_the_expert_observation_equals_its_tracking_observation_after_the_robot_strays():
    """In its own scene the door expert sees what it saw in training, also once the robot is off its reference."""
    tracking = expert_task(expert_spec("door"))
    env = make_env(tracking, 3, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(5))
    rng = np.random.default_rng(0)
    for _ in range(15):  # random actions: the robot leaves the clip's path
        state = env.step(state, jnp.asarray(rng.uniform(-1, 1, (3, env.action_size)), jnp.float32))
    theirs = np.asarray(state.obs["state"])

    def ours(in_place):
        skill_obs = SkillObservation("door", tracking, "shared", in_place=in_place)
        scene = ExpertScene(objective=tracking.objective, skills=(skill_obs,))
        composite = lambda view, info: scene.observe(view, {**info, "skill_time": info["ref_time"][None], "skill_info": {"door": {}}})["expert/door"]
        return np.asarray(jax.vmap(composite)(state.data.view, state.info))

    np.testing.assert_allclose(ours(True), theirs, atol=1e-5)
    assert not np.allclose(ours(False), theirs, atol=1e-3)


def test_rise_plays_in_place_where_rise_walk_seats_the_robot_and_nowhere_else():
    """Re-anchored at every step, the rise clip's slide forward on the seat is never ahead of the robot; where
    the scene seats the robot as the clip starts, on its own chair, the clip is shown where it has it."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing.skill_observation import clip_in_place

    rise, walk = expert_task(expert_spec("rise")), expert_task(expert_spec("walk"))
    assert rise.config.plays_in_place and not walk.config.plays_in_place
    rise_walk, walk_sit = make_task("rise_walk"), make_task("walk_sit")
    seated, standing = rise_walk.build_model(), walk_sit.build_model()
    assert clip_in_place(seated, rise, 0.0, rise_walk.start_root(seated))
    assert not clip_in_place(seated, walk, 0.0, rise_walk.start_root(seated))
    assert not clip_in_place(standing, rise, 0.0, walk_sit.start_root(standing)), "it starts standing there"


def test_an_anchored_expert_sees_its_training_observation_where_its_sub_goal_anchors_its_clip():
    """The stop trains with its clip anchored once on the home spot, from walking starts up to 0.3 m off it. Shown
    its clip anchored on that spot, it sees its training observation at every step wherever the robot goes; with
    the anchor inactive it sees the clip re-anchored onto the robot, as every other expert does."""
    from metaworld_x.envs.observations import proprioception
    from metaworld_x.envs.tasks.tracking import Tracking
    from metaworld_x.envs.task import with_overrides

    stop = expert_task(expert_spec("stop"))
    assert stop.config.home_anchor == "once"
    tracking = Tracking(with_overrides(stop.config, {"handover_start_fraction": 1.0}), objective=stop.objective)
    start = tracking.home_start_time(None)
    skill = SkillObservation("stop", tracking, "scene", start_time=start, anchored=True)
    home_spot = jnp.asarray(tracking._home_anchor[1])
    env = make_env(tracking, 3, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(2))
    off = np.linalg.norm(np.asarray(state.data.view.root_pos[:, :2]) - np.asarray(home_spot[:2]), axis=-1)
    assert off.max() > 0.05, "handover starts begin off the spot the clip is anchored on"

    def observed(view, info, active):
        features = skill.features(view, info, info["ref_time"], {}, anchor=(home_spot, active))
        return jnp.concatenate([proprioception(view), features])

    anchored = jax.jit(jax.vmap(lambda v, i: observed(v, i, jnp.asarray(True))))
    followed = jax.jit(jax.vmap(lambda v, i: observed(v, i, jnp.asarray(False))))
    state = observed_alike_for_six_steps(env, state, anchored)
    plain = SkillObservation("stop", tracking, "scene", start_time=start)
    expected = jax.vmap(lambda v, i: jnp.concatenate([proprioception(v), plain.features(v, i, i["ref_time"], {})]))
    np.testing.assert_allclose(np.asarray(followed(state.data.view, state.info)),
                               np.asarray(expected(state.data.view, state.info)), atol=1e-6)
    assert np.abs(np.asarray(followed(state.data.view, state.info)) - np.asarray(state.obs["state"])).max() > 0.05


def test_a_sequence_scene_shows_an_anchored_expert_its_clip_at_the_current_sub_goals_anchor():
    """ExpertScene reads the anchor from its sequence: in the anchored sub-goal's phase the expert sees its clip
    there, in any other phase re-anchored onto the robot."""
    from metaworld_x.envs.backends import make
    from metaworld_x.envs.tasks import TASKS
    from metaworld_x.envs.tasks.sequence import Sequence, Subgoal

    walk_sit = TASKS["walk_sit"]
    anchor = (2.2, 0.1, 0.0)
    sequence = type("WalkStopSit", (Sequence,), {
        "name": "walk_stop_sit", "scene": walk_sit.scene, "__module__": __name__,
        "__doc__": "walk_sit with an anchored stop.\n\nSuccess: all sub-goals.",
        "subgoals": (walk_sit.subgoals[0], Subgoal("still", "stop", "come to a halt", "chair", anchor=anchor),
                     *walk_sit.subgoals[1:])})()
    tracking = expert_task(expert_spec("stop"))
    skill = SkillObservation("stop", tracking, "scene", start_time=0.0, anchored=True)
    scene = ExpertScene(objective=sequence, skills=(skill,))
    state = make(scene, "cpu", 1, nthread=1).reset(jax.random.PRNGKey(0))
    view = jax.tree.map(lambda x: x[0], state.data.view)
    info = jax.tree.map(lambda x: x[0], state.info)
    pose = jnp.asarray(anchor, jnp.float32)
    for phase, active in ((0, False), (1, True), (2, False)):
        at = {**info, "phase": jnp.asarray(phase, jnp.int32)}
        seen = np.asarray(scene.observe(view, at)["expert/stop"])
        expected = skill.features(view, at, at["skill_time"][0], at["skill_info"]["stop"], anchor=(pose, jnp.asarray(active)))
        np.testing.assert_allclose(seen[-expected.shape[0]:], np.asarray(expected), atol=1e-6)
    anchored, followed = (np.asarray(skill.reference(view, 0.0, anchor=(pose, jnp.asarray(a)))) for a in (True, False))
    assert np.abs(anchored - followed).max() > 0.1, "the anchor is 2.2 m from where the robot stands"
