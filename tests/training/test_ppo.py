"""PPO: the loss and the imitation constraint by hand, learning on a trivial task, devices, the adaptive step size."""

import dataclasses
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.training.config import PPOConfig
from metaworld_x.training.constraint import ConstraintConfig, combine_advantages, update_multiplier
from metaworld_x.training.evaluate import success_interval
from metaworld_x.training.losses import LossSettings, Rollout, clipped_surrogate, ppo_loss
from metaworld_x.training.networks import init_params, make_networks
from metaworld_x.training.train import make_train

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from point_mass import SMALL, PointMassEnv, quiet  # noqa: E402





def test_clipped_surrogate_matches_hand_computation():
    log_ratio = jnp.log(jnp.array([1.5, 0.5, 1.1, 0.9]))
    advantage = jnp.array([2.0, 2.0, -1.0, -1.0])
    # min(ρA, clip(ρ,0.8,1.2)A): 1.2·2, 0.5·2, min(-1.1, -1.1), min(-0.9, -0.9)
    expected = -np.mean([2.4, 1.0, -1.1, -0.9])
    assert float(clipped_surrogate(log_ratio, advantage, 0.2)) == pytest.approx(expected, rel=1e-6)


def test_ppo_loss_matches_hand_computed_case():
    """One terminal step in two environments: every term recomputed by hand in numpy."""
    from brax.training.acme import running_statistics, specs

    sizes = {"state": (2,), "privileged_state": (2,)}
    nets = make_networks(sizes, 1, (4,), (4,), normalize_observations=False)
    params = init_params(nets, jax.random.PRNGKey(0))
    normalizer = running_statistics.init_state({k: specs.Array(v, jnp.float32) for k, v in sizes.items()})
    obs = {"state": jnp.array([[[0.3, -0.2], [-0.5, 0.1]]]), "privileged_state": jnp.array([[[0.1, 0.4], [0.2, -0.3]]])}
    raw = jnp.array([[[0.25], [-0.4]]])
    old_log_prob = jnp.array([[-1.0, -0.7]])
    reward, cost = np.array([1.0, 0.2]), np.array([0.5, 0.1])
    rollout = Rollout(
        obs=obs, raw_action=raw, log_prob=old_log_prob, reward=jnp.asarray([reward]), cost=jnp.asarray([cost]),
        done=jnp.ones((1, 2)), truncation=jnp.zeros((1, 2)), final_obs={k: v[0] for k, v in obs.items()},
    )
    settings = LossSettings(discounting=0.9, gae_lambda=0.95, clipping_epsilon=0.2, entropy_cost=0.0,
                            value_cost=0.5, reward_scaling=1.0)
    multiplier = 2.0
    total, parts = ppo_loss(params, normalizer, rollout, jnp.asarray(multiplier), jax.random.PRNGKey(1), nets,
                            settings, ConstraintConfig(mode="lagrangian"))

    logits = np.asarray(nets.policy.apply(normalizer, params.policy, obs))[0]
    v_r = np.asarray(nets.reward_value.apply(normalizer, params.reward_value, obs))[0]
    v_c = np.asarray(nets.cost_value.apply(normalizer, params.cost_value, obs))[0]
    loc, scale = logits[:, 0], np.log1p(np.exp(logits[:, 1])) + 1e-3
    x = np.asarray(raw)[0, :, 0]
    tanh_log_det = 2 * (np.log(2) - x - np.log1p(np.exp(-2 * x)))
    log_prob = -0.5 * ((x - loc) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi) - tanh_log_det
    # terminal steps: the targets are the immediate reward and cost
    advantage = ((reward - v_r) - multiplier * (cost - v_c)) / (1 + multiplier)
    advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    ratio = np.exp(log_prob - np.asarray(old_log_prob)[0])
    policy_loss = -np.mean(np.minimum(ratio * advantage, np.clip(ratio, 0.8, 1.2) * advantage))
    reward_value_loss = 0.5 * np.mean((reward - v_r) ** 2)
    cost_value_loss = 0.5 * np.mean((cost - v_c) ** 2)
    assert float(parts["losses/policy"]) == pytest.approx(policy_loss, rel=1e-4)
    assert float(parts["losses/reward_value"]) == pytest.approx(reward_value_loss, rel=1e-5)
    assert float(parts["losses/cost_value"]) == pytest.approx(cost_value_loss, rel=1e-5)
    assert float(total) == pytest.approx(policy_loss + 0.5 * (reward_value_loss + cost_value_loss), rel=1e-4)


def test_lagrangian_advantage_weighs_cost_by_multiplier():
    config = ConstraintConfig(mode="lagrangian")
    out = combine_advantages(config, jnp.array(1.0), jnp.array(0.5), jnp.array(3.0))
    assert float(out) == pytest.approx((1.0 - 1.5) / 4.0)
    assert float(combine_advantages(ConstraintConfig(mode="fixed"), jnp.array(1.0), jnp.array(9.0), 3.0)) == 1.0


def test_a_fall_or_deviation_is_charged_as_a_deviation_for_ever_but_success_and_the_time_limit_are_not():
    from metaworld_x.training.collect import Outcome, streams

    # four worlds: failed (fall or deviation), ended by the task's success, ended by the time limit, still running
    error = jnp.asarray([0.1, 0.1, 0.1, 0.1])
    outcome = Outcome(
        reward=jnp.zeros(4), done=jnp.asarray([True, True, True, False]), truncation=jnp.asarray([False, False, True, False]),
        metrics={"task/reward": jnp.full(4, -0.7), "imitation/reward": jnp.full(4, 0.4),
                 "imitation/tracking_error": error, "success": jnp.asarray([0.0, 1.0, 0.0, 0.0])},
    )
    discount = 0.97
    reward, cost = streams(outcome, ConstraintConfig(failure_error=0.5), discount)
    charge = 0.5 * discount / (1 - discount)
    np.testing.assert_allclose(cost, [0.1 + charge, 0.1, 0.1, 0.1], rtol=1e-6)
    np.testing.assert_allclose(reward, np.full(4, -0.7 + 0.5 * 0.4), rtol=1e-6)
    _, uncharged = streams(outcome, ConstraintConfig(), discount)
    np.testing.assert_allclose(uncharged, error)
    with pytest.raises(UserError, match="failure_error"):
        ConstraintConfig(failure_error=-0.1)


def test_multiplier_rises_when_violated_and_falls_to_zero_when_slack():
    config = ConstraintConfig(budget=0.05, multiplier_lr=1.0)
    multiplier = jnp.asarray(1.0)
    for _ in range(5):
        multiplier = update_multiplier(config, multiplier, jnp.asarray(0.15))
    assert float(multiplier) == pytest.approx(1.5)
    for _ in range(100):
        multiplier = update_multiplier(config, multiplier, jnp.asarray(0.01))
    assert float(multiplier) == 0.0


def test_a_floor_under_the_multiplier_holds_it_there_when_slack_and_lets_it_rise():
    config = ConstraintConfig(budget=0.05, multiplier_lr=1.0, min_multiplier=0.5)
    multiplier = jnp.asarray(1.0)
    for _ in range(100):
        multiplier = update_multiplier(config, multiplier, jnp.asarray(0.01))
    assert float(multiplier) == 0.5
    multiplier = update_multiplier(config, multiplier, jnp.asarray(0.15))
    assert float(multiplier) == pytest.approx(0.6)
    with pytest.raises(UserError, match="min_multiplier <= initial_multiplier"):
        ConstraintConfig(min_multiplier=2.0, initial_multiplier=1.0)


def test_impossible_batch_settings_say_what_to_change():
    with pytest.raises(UserError, match="num_minibatches=8"):
        PPOConfig(num_envs=1000, num_minibatches=7)
    with pytest.raises(UserError, match="less than one iteration"):
        PPOConfig(num_envs=64, unroll_length=10, total_env_steps=100)
    with pytest.raises(UserError, match="split evenly over 3 devices"):
        PPOConfig(num_envs=64, num_minibatches=4).check_devices(3)
    with pytest.raises(UserError, match="learning_rate must be >= 0, got -0.0003"):
        PPOConfig(learning_rate=-3e-4)
    with pytest.raises(UserError, match="clipping_epsilon must be positive"):
        PPOConfig(clipping_epsilon=0.0)
    assert PPOConfig(learning_rate=0.0).learning_rate == 0.0  # holds the policy: a run that only measures


@pytest.mark.parametrize("backend", ["mjx", "cpu"])
def test_tiny_run_on_trivial_task_raises_return(backend, tmp_path):
    """Within 60 s on the CPU: the point mass's return improves by at least half."""
    config = PPOConfig(
        num_envs=64, unroll_length=10, num_minibatches=4, num_epochs=4, total_env_steps=64 * 10 * 40,
        eval_every=0, checkpoint_every=0, policy_hidden=(32, 32), value_hidden=(32, 32),
        learning_rate=3e-3, discounting=0.95,
    )
    result = make_train(config, lambda n: PointMassEnv(n, backend), quiet(run_dir=tmp_path))(jax.random.PRNGKey(0))
    returns = [h["episode/return"] for h in result.history if "episode/return" in h]
    assert returns[-1] > returns[0] * 0.5, returns  # returns are negative: closer to zero is better
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_the_success_interval_matches_a_hand_computed_case_and_stays_in_bounds():
    """Wilson's 95 % interval. 12/16: p = 0.75, z²/n = 3.8415/16 = 0.2401; centre (0.75 + 0.1200) / 1.2401 = 0.7016,
    half-width 1.96·sqrt(0.75·0.25/16 + 3.8415/1024) / 1.2401 = 0.1966, so [0.505, 0.898]: a 16-episode evaluation
    at 75 % cannot be told from one at 55 % or 85 %."""
    assert success_interval(12, 16) == pytest.approx((0.5050, 0.8982), abs=1e-4)
    low, high = success_interval(0, 16)
    assert low == 0.0 and high == pytest.approx(0.1936, abs=1e-4)
    assert success_interval(16, 16) == pytest.approx((1 - high, 1.0))  # symmetric about a half
    assert success_interval(44, 50)[1] - success_interval(44, 50)[0] < 0.2  # more episodes, a narrower interval
    for bad in ((3, 0), (-1, 10), (11, 10)):
        with pytest.raises(ValueError, match="episode"):
            success_interval(*bad)


def test_periodic_evaluations_log_the_success_rate_inside_its_interval(tmp_path):
    config = dataclasses.replace(SMALL, eval_every=2, num_eval_envs=16, eval_steps=20, checkpoint_every=0,
                                 total_env_steps=32 * 8 * 4)
    result = make_train(config, lambda n: PointMassEnv(n, "cpu"), quiet(run_dir=tmp_path))(jax.random.PRNGKey(0))
    evaluations = [h for h in result.history if "eval/success_rate" in h]
    assert evaluations
    for h in evaluations:
        successes = round(h["eval/success_rate"] * h["eval/episodes"])
        assert (h["eval/success_low"], h["eval/success_high"]) == success_interval(successes, int(h["eval/episodes"]))
        assert h["eval/success_low"] <= h["eval/success_rate"] <= h["eval/success_high"]


def test_scan_collector_compiles_once_per_run(caplog):
    """The warm-up unroll and every iteration must hand the jitted collector identically placed arguments: each
    new placement compiles the whole simulation scan again (about 80 s for MJX's humanoid on this CPU)."""
    with jax.log_compiles(True), caplog.at_level(logging.WARNING):
        make_train(SMALL, lambda n: PointMassEnv(n, "mjx"), quiet())(jax.random.PRNGKey(0))
    compiled = [r for r in caplog.records if "Finished XLA compilation of jit(collect)" in r.getMessage()]
    assert len(compiled) == 1, [r.getMessage()[:80] for r in compiled]


def test_two_devices_equal_one_device_at_same_global_batch():
    script = textwrap.dedent(
        f"""
        import sys, jax, numpy as np
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from point_mass import PointMassEnv
        from metaworld_x.training.config import PPOConfig, RunOptions
        from metaworld_x.training.train import make_train
        assert len(jax.devices()) == 2, jax.devices()
        out = []
        for devices in (1, 2):
            config = PPOConfig(num_envs=32, unroll_length=8, num_minibatches=2, num_epochs=2,
                               total_env_steps=32 * 8 * 3, eval_every=0, policy_hidden=(16,),
                               value_hidden=(16,), num_devices=devices)
            result = make_train(config, lambda n: PointMassEnv(n, 'mjx'), RunOptions(progress=False))(jax.random.PRNGKey(0))
            out.append(np.concatenate([np.ravel(x) for x in jax.tree_util.tree_leaves(result.state.params)]))
        print('maxdiff', float(np.max(np.abs(out[0] - out[1]))))
        """
    )
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    maxdiff = float(result.stdout.split("maxdiff")[1])
    assert maxdiff < 1e-5, maxdiff


def test_an_adaptive_learning_rate_follows_the_kl_target_and_stays_in_bounds():
    from metaworld_x.training.adaptive_lr import BOUNDS, FACTOR, adapted

    assert float(adapted(3e-4, 0.05, 0.01)) == pytest.approx(3e-4 / FACTOR)  # over twice the target: smaller
    assert float(adapted(3e-4, 0.001, 0.01)) == pytest.approx(3e-4 * FACTOR)  # under half: larger
    assert float(adapted(3e-4, 0.015, 0.01)) == pytest.approx(3e-4)  # near the target: kept
    assert float(adapted(BOUNDS[1], 0.0, 0.01)) == pytest.approx(BOUNDS[1])
    assert float(adapted(BOUNDS[0], 9.0, 0.01)) == pytest.approx(BOUNDS[0])
    with pytest.raises(UserError, match="desired_kl"):
        dataclasses.replace(SMALL, desired_kl=0.0)


def test_a_run_with_a_kl_target_moves_its_rate_only_once_the_policy_trains_and_resumes_with_it(tmp_path):
    import optax

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    # a target no update reaches: every update that moves the policy raises the rate by the factor
    adaptive = dataclasses.replace(SMALL, desired_kl=10.0, critic_warmup_iterations=2)
    full = make_train(adaptive, env, quiet(run_dir=tmp_path / "full"))(jax.random.PRNGKey(1))
    rates = [h["losses/learning_rate"] for h in full.history]
    assert rates[:2] == pytest.approx([SMALL.learning_rate] * 2)  # held policy: KL 0 is no signal
    assert rates[2:] == pytest.approx([SMALL.learning_rate * 1.5 ** i for i in range(1, len(rates) - 1)])
    assert float(optax.tree_utils.tree_get(full.state.opt_state, "learning_rate")) == pytest.approx(rates[-1])
    # the rate is in the optimiser state, so a killed run resumes with it, bit for bit
    killed = dataclasses.replace(adaptive, total_env_steps=SMALL.steps_per_iteration * 4)
    make_train(killed, env, quiet(run_dir=tmp_path / "killed"))(jax.random.PRNGKey(1))
    resumed = make_train(adaptive, env, quiet(run_dir=tmp_path / "killed", resume=True))(jax.random.PRNGKey(2))
    for a, b in zip(jax.tree_util.tree_leaves(full.state), jax.tree_util.tree_leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
