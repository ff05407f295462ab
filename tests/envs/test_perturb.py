"""Perturbation suites: each changes what it says and nothing else; `none` is the nominal env itself."""

import subprocess
import sys

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import metaworld_x  # noqa: F401  (registers the gymnasium ids)
from metaworld_x.envs import make
from metaworld_x.envs.perturb import (
    JOINT_POS,
    JOINT_VEL,
    ROOT_QUAT,
    SUITES,
    PerturbConfig,
    PerturbedEnv,
    _before_step,
    _start,
    delay_action,
    perturb_suite,
    perturbed,
    push_gap_steps,
)
from metaworld_x.envs.rotations import conjugate, multiply
from metaworld_x.errors import UserError
from metaworld_x.robot.parts import robot_bodies

WORLDS = 4
NU = 19


def _rollout(env, actions, seed=0):
    """States after reset and after each of actions [T, B, nu]."""
    states = [env.reset(jax.random.PRNGKey(seed))]
    for action in actions:
        states.append(env.step(states[-1], action))
    return states


def test_suites_are_presets_and_a_bad_name_lists_them():
    assert tuple(SUITES) == ("none", "push", "model", "latency", "noise", "all")
    assert SUITES["none"].nominal and not any(SUITES[s].nominal for s in SUITES if s != "none")
    everything = SUITES["all"]
    assert everything.push_speed == (0.0, 0.5) and everything.latency_steps == (1, 2)
    assert everything.friction == (0.5, 1.5) and everything.mass == everything.gains == (0.8, 1.2)
    assert (everything.joint_pos_noise, everything.joint_vel_noise, everything.orientation_noise_deg) == (0.01, 0.1, 1)
    with pytest.raises(UserError, match="unknown perturbation suite 'shove'; suites: none, push, model"):
        perturb_suite("shove")
    with pytest.raises(UserError, match="latency_steps"):
        PerturbConfig(latency_steps=(2, 1))


def test_none_is_the_nominal_env_itself():
    env = make("stand", num_worlds=WORLDS, nthread=1)
    assert perturbed(env, "none") is env and perturbed(env, None) is env
    assert isinstance(perturbed(env, "push"), PerturbedEnv)


def test_eval_none_equals_the_unperturbed_evaluation():
    from metaworld_x.experts.training import evaluate_expert
    from metaworld_x.paths import EXPERTS_DIR

    kwargs = dict(seed=3, episodes=2, steps=15, other_starts=False)
    nominal = evaluate_expert(EXPERTS_DIR / "walk", **kwargs)
    none = evaluate_expert(EXPERTS_DIR / "walk", perturb="none", **kwargs)
    noisy = evaluate_expert(EXPERTS_DIR / "walk", perturb="noise", **kwargs)
    for result in (nominal, none, noisy):
        result.pop("eval_seconds")
    assert none == nominal
    assert noisy["perturb"]["suite"] == "noise" and noisy["tracking_error_m"] != nominal["tracking_error_m"]


def test_delay_action_applies_the_action_submitted_delay_steps_ago():
    actions = jnp.arange(1.0, 6.0)[:, None] * jnp.ones((1, 3))
    for delay in (0, 1, 2):
        queue, applied = jnp.zeros((2, 3)), []
        for a in actions:
            out, queue = delay_action(queue, a, jnp.asarray(delay))
            applied.append(float(out[0]))
        assert applied == [0.0] * delay + [1.0, 2.0, 3.0, 4.0, 5.0][: 5 - delay]


def test_latency_delays_the_applied_action_by_the_drawn_steps_and_changes_nothing_else():
    rng = np.random.default_rng(0)
    actions = rng.uniform(-0.3, 0.3, (12, WORLDS, NU)).astype(np.float32)
    late = _rollout(perturbed(make("stand", num_worlds=WORLDS, nthread=1), "latency"), actions)
    delay = np.asarray(late[0].info["perturb/delay"])
    assert set(delay) <= {1, 2} and len(set(delay)) == 2  # both delays drawn among 4 worlds at this seed
    padded = np.concatenate([np.zeros((2, WORLDS, NU), np.float32), actions])
    expected = np.stack([padded[2 + t - delay, np.arange(WORLDS)] for t in range(len(actions))])
    applied = np.stack([np.asarray(s.info["last_action"]) for s in late[1:]])
    np.testing.assert_array_equal(applied, expected)
    # the nominal env driven by the delayed actions is the same physics
    by_hand = _rollout(make("stand", num_worlds=WORLDS, nthread=1), expected)
    np.testing.assert_array_equal(late[-1].data.view.qpos, by_hand[-1].data.view.qpos)
    np.testing.assert_array_equal(late[-1].obs["state"], by_hand[-1].obs["state"])


def test_noise_has_the_stated_deviation_on_the_observation_and_leaves_the_physics_alone():
    config = SUITES["noise"]
    actions = np.zeros((60, WORLDS, NU), np.float32)
    noisy = _rollout(perturbed(make("stand", num_worlds=WORLDS, nthread=1), config), actions)
    clean = _rollout(make("stand", num_worlds=WORLDS, nthread=1), actions)
    np.testing.assert_array_equal(noisy[-1].data.view.qpos, clean[-1].data.view.qpos)
    np.testing.assert_array_equal(noisy[-1].data.view.qvel, clean[-1].data.view.qvel)
    np.testing.assert_array_equal(noisy[-1].obs["privileged_state"], clean[-1].obs["privileged_state"])
    obs = np.stack([np.asarray(s.obs["state"]) for s in noisy])
    exact = np.stack([np.asarray(s.obs["state"]) for s in clean])
    error = obs - exact
    untouched = np.ones(error.shape[-1], bool)
    for part in (ROOT_QUAT, JOINT_POS, JOINT_VEL):
        untouched[part] = False
    assert not error[..., untouched].any()
    assert np.std(error[..., JOINT_POS]) == pytest.approx(config.joint_pos_noise, rel=0.1)
    assert np.std(error[..., JOINT_VEL]) == pytest.approx(config.joint_vel_noise, rel=0.1)
    assert np.abs(error[..., JOINT_POS].mean()) < 0.1 * config.joint_pos_noise
    turn = np.asarray(multiply(conjugate(jnp.asarray(exact[..., ROOT_QUAT])), jnp.asarray(obs[..., ROOT_QUAT])))
    axis_angles = 2 * turn[..., 1:] * np.sign(turn[..., :1])  # small angles: the rotation vector
    assert np.std(axis_angles) == pytest.approx(np.deg2rad(config.orientation_noise_deg), rel=0.1)
    np.testing.assert_allclose(np.linalg.norm(obs[..., ROOT_QUAT], axis=-1), 1.0, atol=1e-5)


def test_model_scales_friction_link_masses_and_gains_within_the_stated_ranges():
    config = SUITES["model"]
    env = make("push", num_worlds=8, nthread=1)
    model = env.compiled.model
    nominal = {f: np.array(getattr(model, f)) for f in ("geom_friction", "body_mass", "actuator_gainprm",
                                                        "actuator_biasprm")}
    clean_start = make("push", num_worlds=8, nthread=1).reset(jax.random.PRNGKey(0))
    state = perturbed(env, config).reset(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(state.data.view.qpos, clean_start.data.view.qpos)  # the same episode starts

    def within(ratio, bounds):
        return (ratio >= bounds[0] - 1e-5).all() and (ratio <= bounds[1] + 1e-5).all()

    friction = env.batch.expanded("geom_friction")[:, :, 0] / nominal["geom_friction"][:, 0]
    assert within(friction, config.friction) and np.ptp(friction, axis=1).max() < 1e-5  # one factor per world
    np.testing.assert_allclose(env.batch.expanded("geom_friction")[:, :, 1:], np.broadcast_to(
        nominal["geom_friction"][:, 1:], (8,) + nominal["geom_friction"][:, 1:].shape), rtol=1e-6)
    robot = robot_bodies(model) & (nominal["body_mass"] > 0)
    mass = env.batch.expanded("body_mass")
    assert within(mass[:, robot] / nominal["body_mass"][robot], config.mass)
    assert np.ptp(mass[:, robot] / nominal["body_mass"][robot]) > 0.2  # drawn per link and world
    np.testing.assert_allclose(mass[:, ~robot], np.broadcast_to(nominal["body_mass"][~robot], mass[:, ~robot].shape),
                               rtol=1e-6)  # the box keeps its mass
    kp = env.batch.expanded("actuator_gainprm")[..., 0] / nominal["actuator_gainprm"][:, 0]
    kv = env.batch.expanded("actuator_biasprm")[..., 2] / nominal["actuator_biasprm"][:, 2]
    assert within(kp, config.gains) and within(kv, config.gains)
    np.testing.assert_allclose(env.batch.expanded("actuator_biasprm")[..., 1],
                               -env.batch.expanded("actuator_gainprm")[..., 0], rtol=1e-6)  # still PD servos


def test_push_schedule_gives_two_to_four_shoves_per_10_s_of_at_most_half_a_metre_per_second():
    config, dt = SUITES["push"], 0.02
    gap = push_gap_steps(config, dt)
    assert gap == (125, 250)
    steps = 5000

    def run(key):
        book = _start(key, config, gap, NU)

        def body(book, step):
            _, shove, book = _before_step(book, step, jnp.zeros(NU), config, gap)
            return book, shove

        return jax.lax.scan(body, book, jnp.arange(steps))[1]

    shoves = np.asarray(jax.jit(jax.vmap(run))(jax.random.split(jax.random.PRNGKey(0), 16)))  # [16, T, 2]
    speed = np.linalg.norm(shoves, axis=-1)
    assert speed.max() <= 0.5 + 1e-6 and speed.max() > 0.45
    for world in speed:
        times = np.flatnonzero(world > 0)
        assert gap[0] <= times[0] <= gap[1]
        assert (np.diff(times) >= gap[0]).all() and (np.diff(times) <= gap[1]).all()
        per_window = [((times >= t) & (times < t + round(10 / dt))).sum() for t in range(0, steps - 500, 50)]
        assert 2 <= min(per_window) and max(per_window) <= 4


def test_push_changes_only_the_root_velocity_and_nothing_before_the_first_shove():
    env = make("stand", num_worlds=WORLDS, nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    before = env.batch.bind("qvel").copy()
    delta = np.array([[0.3, -0.4], [0.0, 0.0], [0.5, 0.0], [-0.1, 0.2]])
    env.add_root_velocity(state, delta)
    after = env.batch.bind("qvel")
    np.testing.assert_allclose(after[:, :2] - before[:, :2], delta, atol=1e-12)
    np.testing.assert_array_equal(after[:, 2:], before[:, 2:])

    actions = np.zeros((140, WORLDS, NU), np.float32)
    pushed = _rollout(perturbed(make("stand", num_worlds=WORLDS, nthread=1), "push"), actions)
    clean = _rollout(make("stand", num_worlds=WORLDS, nthread=1), actions)
    first = np.asarray(pushed[0].info["perturb/next_push"])  # the step number the first shove precedes
    for t, (p, c) in enumerate(zip(pushed, clean)):
        same = np.all(np.asarray(p.data.view.qpos) == np.asarray(c.data.view.qpos), axis=1)
        np.testing.assert_array_equal(same, t <= first)


def test_mjx_shove_traces_at_the_velocity_stage():
    env = make("stand", backend="mjx", num_worlds=2, impl="jax")
    state = jax.eval_shape(env._reset_fn, env.model, jax.random.split(jax.random.PRNGKey(0), 2))
    shoved = jax.eval_shape(env._shove_fn, env.model, state, jnp.zeros((2, 2)))  # traces, without compiling
    assert jax.tree.structure(shoved) == jax.tree.structure(state)


def test_gym_ids_take_a_suite():
    env = gym.make("MetaWorldX/H1-Stand-v0", perturb="all")
    assert isinstance(env.unwrapped._env, PerturbedEnv)
    check_env(env.unwrapped, skip_render_check=True)
    env.reset(seed=0)
    for _ in range(5):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and np.isfinite(reward)
    envs = gym.make_vec("MetaWorldX/H1-Walk-v0", num_envs=2, perturb="noise")
    obs, _ = envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(np.zeros((2, NU), np.float32))
    assert obs.shape == (2,) + envs.single_observation_space.shape and np.isfinite(reward).all()
    with pytest.raises(UserError, match="unknown perturbation suite"):
        gym.make("MetaWorldX/H1-Stand-v0", perturb="wind")


def test_cli_bad_suite_is_one_line_with_exit_2():
    result = subprocess.run([sys.executable, "-m", "metaworld_x.cli", "eval", "expert", "stand", "--perturb", "wind"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: unknown perturbation suite 'wind'; suites: none, push, model, latency,"
                                     " noise, all")
