"""Tasks on the cpu backend: shapes, determinism, reward bookkeeping, bad input."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.envs import make
from metaworld_x.envs.control_step import first_observation
from metaworld_x.envs.randomize import RandomizationConfig, apply, model_arrays, push, randomize
from metaworld_x.envs.rewards import tolerance
from metaworld_x.envs.tasks import TASKS, make_task
from metaworld_x.errors import UserError

WORLDS = 2
STEPS = 5


def random_actions(seed: int, steps: int, worlds: int = WORLDS, scale: float = 0.3):
    return np.random.default_rng(seed).uniform(-scale, scale, (steps, worlds, 19)).astype(np.float32)


def rollout(env, seed: int, steps: int = STEPS):
    state = env.reset(jax.random.PRNGKey(seed))
    states = [state]
    for action in random_actions(seed, steps, env.num_worlds):
        state = env.step(state, action)
        states.append(state)
    return states


@pytest.mark.parametrize("name", list(TASKS))
def test_every_task_steps_with_finite_values_of_declared_shapes(name):
    env = make(name, num_worlds=WORLDS, nthread=1)
    states = rollout(env, seed=0)
    proprio = env.compiled.proprioception_size
    for state in states:
        assert state.obs["state"].shape[0] == WORLDS and state.obs["state"].shape[1] >= proprio
        assert state.obs["privileged_state"].shape[0] == WORLDS
        assert state.obs["privileged_state"].shape[1] > state.obs["state"].shape[1]
        assert state.reward.shape == (WORLDS,) and state.done.shape == (WORLDS,)
        for value in [*state.obs.values(), state.reward, *state.metrics.values()]:
            assert value.dtype == jnp.float32 and np.isfinite(np.asarray(value)).all()
        expected = {f"reward/{n}" for n in env.task.reward_names} | {"success"} | set(env.task.metric_names)
        assert set(state.metrics) == expected
    final = states[-1]
    assert not np.asarray(final.done).any(), "a short random rollout should not end an episode"
    assert (np.asarray(final.info["step"]) == STEPS).all()


@pytest.mark.parametrize("name", ["walk", "push"])
def test_reward_is_the_sum_of_its_scaled_terms(name):
    env = make(name, num_worlds=WORLDS, nthread=1)
    for state in rollout(env, seed=1)[1:]:
        terms = sum(np.asarray(v) for k, v in state.metrics.items() if k.startswith("reward/"))
        np.testing.assert_allclose(np.asarray(state.reward), terms, rtol=1e-6, atol=1e-6)


def test_reward_scales_from_config_scale_the_terms():
    base = make("walk", num_worlds=WORLDS, nthread=1)
    doubled = make("walk", num_worlds=WORLDS, nthread=1, rewards={"locomotion": 2.0})
    r1, r2 = rollout(base, seed=2)[-1].reward, rollout(doubled, seed=2)[-1].reward
    np.testing.assert_allclose(2 * np.asarray(r1), np.asarray(r2), rtol=1e-6)


def test_same_seed_same_trajectory_other_seed_other_start():
    env = make("reach", num_worlds=WORLDS, nthread=1)
    a, b, c = rollout(env, seed=3), rollout(env, seed=3), rollout(env, seed=4)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x.obs["state"]), np.asarray(y.obs["state"]))
        np.testing.assert_array_equal(np.asarray(x.reward), np.asarray(y.reward))
    assert not np.array_equal(np.asarray(a[0].info["target"]), np.asarray(c[0].info["target"]))
    # the two worlds of one reset draw different targets
    assert not np.array_equal(*np.asarray(a[0].info["target"]))


def test_time_limit_truncates_and_auto_resets():
    env = make("stand", num_worlds=WORLDS, nthread=1, episode_length=3)
    states = rollout(env, seed=5, steps=4)
    ended = states[3]
    assert np.asarray(ended.done).all() and np.asarray(ended.info["truncation"]).all()
    assert [env.reason_names[c] for c in np.asarray(ended.info["termination_reason"])] == ["time_limit"] * WORLDS
    assert (np.asarray(ended.info["step"]) == 0).all(), "done worlds restart at once"
    assert (np.asarray(states[4].info["step"]) == 1).all()
    # the returned observation is the new episode's; the old one's last is kept
    assert not np.allclose(np.asarray(ended.obs["state"]), np.asarray(ended.info["final_obs"]["state"]))


def test_a_reset_worlds_first_observation_ignores_the_engines_force_buffers():
    # mujoco.batch leaves a reset at the velocity stage, where its contact and actuator force buffers hold
    # whichever simulation a thread computed last (it depends on scheduling); no force has acted on a fresh world.
    env = make("stand", num_worlds=1, nthread=1)
    state = env.step(env.reset(jax.random.PRNGKey(0)), np.zeros((1, 19), np.float32))
    view, info = jax.tree.map(lambda x: x[0], (state.data.view, state.info))
    assert np.abs(view.foot_force).sum() > 0 and np.abs(view.actuator_force).sum() > 0
    without = view.replace(foot_force=jnp.zeros_like(view.foot_force), actuator_force=jnp.zeros_like(view.actuator_force))
    with_forces, _ = first_observation(env.task, view, info)
    fresh, _ = first_observation(env.task, without, info)
    for key in fresh:
        np.testing.assert_array_equal(np.asarray(with_forces[key]), np.asarray(fresh[key]))


def test_fall_terminates_with_its_reason():
    env = make("stand", num_worlds=1, nthread=1, fall_height=2.0)  # the pelvis is always below 2 m
    state = env.step(env.reset(jax.random.PRNGKey(0)), np.zeros((1, 19), np.float32))
    assert bool(state.done[0]) and not bool(state.info["truncation"][0])
    assert env.reason_names[int(state.info["termination_reason"][0])] == "fall"


def test_nonfinite_action_terminates_that_world_only_and_never_reaches_the_physics():
    env = make("walk", num_worlds=WORLDS, nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    action = np.zeros((WORLDS, 19), np.float32)
    action[0, 3] = np.nan
    state = env.step(state, action)
    assert env.reason_names[int(state.info["termination_reason"][0])] == "nonfinite_action"
    assert np.asarray(state.done).tolist() == [True, False]
    assert float(state.reward[0]) == 0.0
    assert np.isfinite(env.batch.bind("qpos")).all() and np.isfinite(np.asarray(state.obs["state"])).all()


def test_diverged_physics_terminates_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo logs the divergence warning to MUJOCO_LOG.TXT in the working directory
    env = make("walk", num_worlds=WORLDS, nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    env.batch.bind("qvel")[1, 8] = np.nan  # the engine resets a diverged world on its own, with a warning
    state = env.step(state, np.zeros((WORLDS, 19), np.float32))
    assert env.reason_names[int(state.info["termination_reason"][1])] == "nonfinite_physics"
    assert np.asarray(state.done).tolist() == [False, True]
    assert np.isfinite(np.asarray(state.obs["state"])).all()


def test_wrong_action_shape_names_the_expected_shape():
    env = make("walk", num_worlds=WORLDS, nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"action must have shape \(2, 19\).*got \(19,\)"):
        env.step(state, np.zeros(19, np.float32))


def test_stale_state_is_refused_on_the_cpu_backend():
    env = make("walk", num_worlds=WORLDS, nthread=1)
    first = env.reset(jax.random.PRNGKey(0))
    env.step(first, np.zeros((WORLDS, 19), np.float32))
    with pytest.raises(ValueError, match="not the latest"):
        env.step(first, np.zeros((WORLDS, 19), np.float32))


def test_unknown_names_list_the_choices():
    with pytest.raises(UserError, match="unknown task 'fly'; tasks: stand, walk, run"):
        make_task("fly")
    with pytest.raises(UserError, match="unknown backend 'gpu'; backends: cpu, mjx"):
        make("walk", backend="gpu")
    with pytest.raises(UserError, match="unknown setting.*speed.*target_speed"):
        make_task("walk", speed=2.0)
    with pytest.raises(UserError, match="target_speed must be positive"):
        make_task("walk", target_speed=0.0)


def test_tolerance_matches_dm_control():
    # values computed with dm_control.utils.rewards.tolerance
    x = jnp.asarray([-1.0, 0.0, 0.5, 1.0, 1.5, 3.0])
    np.testing.assert_allclose(tolerance(x, bounds=(0, 1)), [0, 1, 1, 1, 0, 0])
    np.testing.assert_allclose(tolerance(x, bounds=(0, 1), margin=1.0), [0.1, 1, 1, 1, 0.1**0.25, 0.1**4], rtol=1e-5)
    np.testing.assert_allclose(
        tolerance(x, bounds=(1, float("inf")), margin=1.0, sigmoid="linear", value_at_margin=0.0),
        [0, 0, 0.5, 1, 1, 1], atol=1e-6,
    )
    np.testing.assert_allclose(
        tolerance(x, margin=2.0, sigmoid="quadratic", value_at_margin=0.0), [0.75, 1, 0.9375, 0.75, 0.4375, 0]
    )


def test_randomize_is_pure_and_keeps_servos_pd():
    env = make("stand", num_worlds=WORLDS, nthread=1)
    nominal = model_arrays(env.compiled.model)
    config = RandomizationConfig()
    keys = jax.random.split(jax.random.PRNGKey(0), WORLDS)
    drawn = jax.vmap(randomize, in_axes=(None, 0, None))(nominal, keys, config)
    again = jax.vmap(randomize, in_axes=(None, 0, None))(nominal, keys, config)
    np.testing.assert_array_equal(drawn.body_mass, again.body_mass)
    assert not np.allclose(drawn.body_mass[0], drawn.body_mass[1])
    np.testing.assert_allclose(drawn.actuator_gainprm[..., 0], -drawn.actuator_biasprm[..., 1], rtol=1e-6)
    ratio = np.asarray(drawn.geom_friction[..., 0] / nominal.geom_friction[:, 0])
    assert ((ratio >= config.friction[0] - 1e-6) & (ratio <= config.friction[1] + 1e-6)).all()

    apply(env, drawn)
    np.testing.assert_allclose(env.batch.expanded("body_mass"), drawn.body_mass, rtol=1e-6)
    state = env.reset(jax.random.PRNGKey(0))
    before = env.batch.bind("qvel")[:, :2].copy()
    push(env, state, jax.random.PRNGKey(1), config)
    kick = np.linalg.norm(env.batch.bind("qvel")[:, :2] - before, axis=1)
    assert (kick > 0).all() and (kick <= config.push_speed + 1e-6).all()
    for _ in range(3):
        state = env.step(state, np.zeros((WORLDS, 19), np.float32))
    assert np.isfinite(np.asarray(state.obs["state"])).all()


def test_task_configs_are_frozen_and_documented():
    for cls in TASKS.values():
        config = cls.Config()
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.episode_length = 3
        assert cls.__doc__ and "Success" in cls.__doc__, f"{cls.__name__} must state its success criterion"


def test_fetch_reaches_its_subgoals_in_order_only():
    env = make("fetch", num_worlds=1, nthread=1)
    task, state = env.task, env.reset(jax.random.PRNGKey(0))
    view = jax.tree.map(lambda x: np.array(x[0]), state.data.view)
    sites = view.layout.sites
    table = view.site_pos[sites.index("table")]

    def place(box, palms_at_box: bool):
        site_pos = view.site_pos.copy()
        site_pos[sites.index("box")] = box
        for palm, side in (("left_palm", 1), ("right_palm", -1)):
            site_pos[sites.index(palm)] = box + (np.array([0, side * 0.18, 0]) if palms_at_box else np.array([-1, 0, 0]))
        return view.replace(site_pos=site_pos)

    on_floor = view.site_pos[sites.index("box")]
    lifted = on_floor + np.array([0, 0, 0.15])
    over_table = table + np.array([0.1, 0, 0.4])
    on_table = table + np.array([0, 0, 0.15])
    info = {"phase": jnp.zeros((), jnp.int32)}
    assert int(task.advance(place(on_table, False), info)["phase"]) == 0, "placing first must not count"
    for expected, scene in enumerate([(on_floor, True), (lifted, True), (over_table, True), (on_table, False)], 1):
        info = task.advance(place(*scene), info)
        assert int(info["phase"]) == expected
    _, metrics = task.account(place(on_table, False), info, {})
    assert all(bool(v) for v in metrics.values()) and bool(task.success(view, info))
