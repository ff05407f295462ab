"""PPO: the loss by hand, the multiplier, learning, resume, devices, export."""

import dataclasses
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.training import checkpoint
from metaworld_x.training.config import PPOConfig, RunOptions
from metaworld_x.training.constraint import ConstraintConfig, combine_advantages, update_multiplier
from metaworld_x.training.evaluate import success_interval
from metaworld_x.training.losses import LossSettings, Rollout, clipped_surrogate, ppo_loss
from metaworld_x.training.networks import init_params, make_networks
from metaworld_x.training.train import make_train

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from no_training import act_without_training  # noqa: E402
from point_mass import PointMassEnv  # noqa: E402

SMALL = PPOConfig(
    num_envs=32, unroll_length=8, num_minibatches=4, num_epochs=2, total_env_steps=32 * 8 * 6,
    eval_every=0, checkpoint_every=3, policy_hidden=(16,), value_hidden=(16,),
)


def _quiet(**options) -> RunOptions:
    """Run options without a progress bar or TensorBoard files."""
    return RunOptions(progress=False, tensorboard=False, **options)


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
    result = make_train(config, lambda n: PointMassEnv(n, backend), _quiet(run_dir=tmp_path))(jax.random.PRNGKey(0))
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
    result = make_train(config, lambda n: PointMassEnv(n, "cpu"), _quiet(run_dir=tmp_path))(jax.random.PRNGKey(0))
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
        make_train(SMALL, lambda n: PointMassEnv(n, "mjx"), _quiet())(jax.random.PRNGKey(0))
    compiled = [r for r in caplog.records if "Finished XLA compilation of jit(collect)" in r.getMessage()]
    assert len(compiled) == 1, [r.getMessage()[:80] for r in compiled]


def test_resume_continues_bit_for_bit_on_cpu_backend(tmp_path):
    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    full = make_train(SMALL, env, _quiet(run_dir=tmp_path / "full"))(jax.random.PRNGKey(1))
    killed = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 4)
    make_train(killed, env, _quiet(run_dir=tmp_path / "killed"))(jax.random.PRNGKey(1))
    # drop the checkpoint written at the end, as if the run died after iteration 3's checkpoint
    shutil.rmtree(checkpoint.latest(tmp_path / "killed" / "checkpoints"))
    resumed = make_train(SMALL, env, _quiet(run_dir=tmp_path / "killed", resume=True))(jax.random.PRNGKey(2))
    for a, b in zip(jax.tree_util.tree_leaves(full.state), jax.tree_util.tree_leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [h["env_steps"] for h in resumed.history] == [h["env_steps"] for h in full.history]


def test_a_run_past_its_deadline_stops_with_a_checkpoint_and_resumes_to_the_end(tmp_path):
    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    stopped = make_train(SMALL, env, _quiet(run_dir=tmp_path, stop_at=time.perf_counter()))(jax.random.PRNGKey(1))
    assert [h["env_steps"] for h in stopped.history] == [SMALL.steps_per_iteration]
    assert checkpoint.latest(tmp_path / "checkpoints").name.endswith(str(SMALL.steps_per_iteration))
    resumed = make_train(SMALL, env, _quiet(run_dir=tmp_path, resume=True))(jax.random.PRNGKey(1))
    assert int(resumed.state.env_steps) == SMALL.num_iterations * SMALL.steps_per_iteration


def test_init_from_starts_with_another_runs_training_state_and_fresh_environments(tmp_path):
    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    short = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 4)
    source = make_train(short, env, _quiet(run_dir=tmp_path / "source"))(jax.random.PRNGKey(1))
    # nothing left to do: the state is the source's, whatever this run's own seed
    same = make_train(short, env, _quiet(run_dir=tmp_path / "same", init_from=tmp_path / "source"))(
        jax.random.PRNGKey(5))
    for a, b in zip(jax.tree_util.tree_leaves(source.state), jax.tree_util.tree_leaves(same.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # two more iterations continue the step count from the source's
    longer = make_train(dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 6), env,
                        _quiet(run_dir=tmp_path / "tuned", init_from=tmp_path / "source"))(jax.random.PRNGKey(5))
    assert [h["env_steps"] for h in longer.history] == [SMALL.steps_per_iteration * i for i in (5, 6)]
    with pytest.raises(UserError, match="does not fit"):
        make_train(dataclasses.replace(SMALL, policy_hidden=(8,)), env,
                   _quiet(run_dir=tmp_path / "other", init_from=tmp_path / "source"))(jax.random.PRNGKey(0))


def test_init_from_a_shipped_policy_keeps_its_network_and_input_statistics(tmp_path):
    """A fine-tune whose run folder is gone starts from experts/<skill>: the policy as shipped, fresh critics."""
    from metaworld_x.experts.policy import from_training, save_policy

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, _quiet())(jax.random.PRNGKey(1))
    shipped = from_training(source.state.params.policy, source.state.normalizer)
    save_policy(shipped, tmp_path / "expert", {"skill": "point_mass"})
    # With a zero learning rate the one iteration leaves the networks as they started.
    frozen = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration, learning_rate=0.0)
    tuned = make_train(frozen, env, _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
    for a, b in zip(jax.tree_util.tree_leaves(source.state.params.policy), jax.tree_util.tree_leaves(tuned.state.params.policy)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The input statistics moved on from the shipped ones with the warm-up and one unroll of new data.
    assert not np.allclose(np.asarray(tuned.state.normalizer.mean["state"]), 0.0)
    # Critics and the step count start fresh.
    assert int(tuned.state.env_steps) == SMALL.steps_per_iteration
    trained_critic = jax.tree_util.tree_leaves(source.state.params.reward_value)
    assert not all(np.array_equal(a, b) for a, b in zip(trained_critic, jax.tree_util.tree_leaves(tuned.state.params.reward_value)))
    with pytest.raises(UserError, match="layers"):
        make_train(dataclasses.replace(SMALL, policy_hidden=(8,)), env,
                   _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(0))


def test_frozen_statistics_stay_where_a_fine_tune_from_a_shipped_policy_starts_them(tmp_path):
    from metaworld_x.experts.policy import from_training, save_policy

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, _quiet())(jax.random.PRNGKey(1))
    shipped = from_training(source.state.params.policy, source.state.normalizer)
    save_policy(shipped, tmp_path / "expert", {"skill": "point_mass"})

    def tune(**settings):
        config = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 3, **settings)
        return make_train(config, env, _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))

    frozen, moving = tune(freeze_statistics=True).state.normalizer, tune().state.normalizer
    np.testing.assert_array_equal(np.asarray(frozen.mean["state"]), np.asarray(shipped.obs_mean))
    np.testing.assert_array_equal(np.asarray(frozen.std["state"]), np.asarray(shipped.obs_std))
    assert not np.array_equal(np.asarray(moving.mean["state"]), np.asarray(shipped.obs_mean))


def test_a_fine_tune_from_a_shipped_policy_takes_the_critics_statistics_over_a_whole_episode(tmp_path):
    """The critics' statistics are counted as seen as often as the shipped policy's, so they barely move after the
    warm-up: it must show them an episode, not its first unroll. Here the critic sees the episode's progress,
    uniform over [0, 1) in a whole episode (spread 0.29) but under 0.05 in its first 8 of 50 steps."""
    from point_mass import HORIZON

    from metaworld_x.experts.policy import from_training, save_policy

    class WithProgress(PointMassEnv):
        observation_sizes = {"state": (6,), "privileged_state": (7,)}

        def reset(self, key):
            return self._with_progress(super().reset(key))

        def step(self, state, action):
            return self._with_progress(super().step(state, action))

        @staticmethod
        def _with_progress(state):
            progress = (state.info["steps"] / HORIZON)[:, None]
            return state.replace(obs={**state.obs, "privileged_state": jnp.concatenate(
                [state.obs["privileged_state"], progress], axis=-1)})

    class SaysItsEpisodeLength(WithProgress):
        episode_length = HORIZON

    source = make_train(SMALL, lambda n: PointMassEnv(n, "cpu"), _quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})
    frozen = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration, learning_rate=0.0, freeze_statistics=True)

    def progress_spread(env_class) -> float:
        result = make_train(frozen, lambda n: env_class(n, "cpu"), _quiet(init_from=tmp_path / "expert"))(
            jax.random.PRNGKey(5))
        return float(result.state.normalizer.std["privileged_state"][-1])

    assert progress_spread(SaysItsEpisodeLength) == pytest.approx(0.29, abs=0.03)
    assert progress_spread(WithProgress) < 0.1  # an environment that does not say: its first unroll only


def test_during_the_warm_up_a_shipped_policy_acts_on_its_own_statistics(tmp_path):
    """The warm-up's unrolls are what the critics' statistics come from, so the shipped policy must act in them as
    it was shipped, not on the empty statistics a run starts with. Here its statistics put every input 100 standard
    deviations below its mean, so on them it asks for saturated actions and on empty ones it does not."""
    from metaworld_x.experts.policy import act, from_training, save_policy

    source = make_train(SMALL, lambda n: PointMassEnv(n, "cpu"), _quiet())(jax.random.PRNGKey(1))
    shipped = from_training(source.state.params.policy, source.state.normalizer)
    shipped = shipped.replace(obs_mean=jnp.full_like(shipped.obs_mean, 100.0), obs_std=jnp.ones_like(shipped.obs_std))
    save_policy(shipped, tmp_path / "expert", {"skill": "point_mass"})
    first_steps = []

    class Recording(PointMassEnv):
        def step(self, state, action):
            if not first_steps:
                first_steps.append((np.asarray(state.obs["state"]), np.asarray(action)))
            return super().step(state, action)

    frozen = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration, learning_rate=0.0)
    make_train(frozen, lambda n: Recording(n, "cpu"), _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
    obs, taken = first_steps[0]
    as_shipped = np.asarray(act(shipped, jnp.asarray(obs)))
    unnormalised = np.asarray(act(shipped.replace(obs_mean=jnp.zeros_like(shipped.obs_mean)), jnp.asarray(obs)))
    assert np.mean(np.abs(as_shipped - unnormalised)) > 0.5  # the two statistics ask for different actions
    # sampled actions: most lie near the shipped mean action, a few are thrown far by the exploration noise
    assert np.median(np.abs(taken - as_shipped)) < 0.1 < np.median(np.abs(taken - unnormalised))


def test_a_critic_warmup_holds_the_policy_while_the_fresh_critics_learn(tmp_path):
    from metaworld_x.experts.policy import from_training, save_policy

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, _quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})

    def tune(iterations: int, **settings):
        config = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * iterations, **settings)
        return make_train(config, env, _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))

    def same(a, b) -> bool:
        return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))

    held = tune(2, critic_warmup_iterations=2)
    assert same(held.state.params.policy, source.state.params.policy)
    # Adam's moments for the held policy learn its gradients' scale meanwhile: left empty while the step count
    # ran on, the first step after the warm-up would move every weight by a multiple of the learning rate.
    adam = next(s for s in jax.tree_util.tree_leaves(held.state.opt_state, is_leaf=lambda x: hasattr(x, "nu"))
                if hasattr(s, "nu"))
    assert all(float(np.abs(np.asarray(leaf)).max()) > 0 for leaf in jax.tree_util.tree_leaves(adam.nu.policy))
    untrained = tune(2, learning_rate=0.0)  # the same fresh critics, never stepped
    assert not same(held.state.params.reward_value, untrained.state.params.reward_value)
    assert not same(tune(3, critic_warmup_iterations=2).state.params.policy, source.state.params.policy)
    with pytest.raises(UserError, match="critic_warmup_iterations"):
        dataclasses.replace(SMALL, critic_warmup_iterations=-1)


def test_a_fine_tune_from_a_shipped_policy_trains_its_fresh_critics_alone_unless_told_otherwise(tmp_path):
    """A shipped policy comes without its critics. With no critic-only iterations a reach_one_hand fine-tune
    went from 16 of 16 evaluation episodes standing to 8 falls in 25 iterations, so a config that does
    not say holds the policy for `FRESH_CRITIC_WARMUP_ITERATIONS` there, and only there."""
    from metaworld_x.experts.policy import from_training, save_policy
    from metaworld_x.training.warm_start import FRESH_CRITIC_WARMUP_ITERATIONS, critic_warmup_iterations

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, _quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})
    assert SMALL.critic_warmup_iterations is None
    two = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 2)
    tuned = make_train(two, env, _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
    policies = jax.tree_util.tree_leaves(source.state.params.policy), jax.tree_util.tree_leaves(tuned.state.params.policy)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(*policies))
    # the same two iterations from the run's checkpoint (its own critics come with it) move the policy at once
    source_run = make_train(SMALL, env, _quiet(run_dir=tmp_path / "source"))(jax.random.PRNGKey(1))
    longer = dataclasses.replace(two, total_env_steps=SMALL.total_env_steps + SMALL.steps_per_iteration * 2)
    resumed = make_train(longer, env, _quiet(init_from=tmp_path / "source"))(jax.random.PRNGKey(5))
    policies = jax.tree_util.tree_leaves(source_run.state.params.policy), jax.tree_util.tree_leaves(resumed.state.params.policy)
    assert not all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(*policies))
    assert critic_warmup_iterations(None, tmp_path / "expert") == FRESH_CRITIC_WARMUP_ITERATIONS
    assert critic_warmup_iterations(None, tmp_path / "source") == 0
    assert critic_warmup_iterations(None, None) == 0
    assert critic_warmup_iterations(0, tmp_path / "expert") == 0  # asked for in so many words


def test_a_fine_tune_from_a_shipped_policy_starts_the_multiplier_where_its_training_left_it(tmp_path):
    """λ weighs tracking against the task in every advantage; restarted at the config's 1.0 under an expert that
    trained at 43, dual ascent would take hundreds of iterations to climb back."""
    import json

    from metaworld_x.experts.policy import from_training, save_policy
    from metaworld_x.training.warm_start import shipped_multiplier

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, _quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})
    one = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration)

    def tuned_multiplier() -> float:
        result = make_train(one, env, _quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
        return float(result.state.multiplier)

    # the point mass measures no tracking error, so one dual-ascent step lowers λ by multiplier_lr x budget
    step = SMALL.constraint.multiplier_lr * SMALL.constraint.budget
    assert shipped_multiplier(tmp_path / "expert") is None  # no metrics.json: the config's initial value
    assert tuned_multiplier() == pytest.approx(SMALL.constraint.initial_multiplier - step, abs=1e-5)
    (tmp_path / "expert" / "metrics.json").write_text(json.dumps({"training": {"multiplier": 43.0}}))
    assert shipped_multiplier(tmp_path / "expert") == 43.0
    assert tuned_multiplier() == pytest.approx(43.0 - step, abs=1e-4)


def test_shipped_statistics_replace_one_key_and_update_on_as_if_seen():
    from brax.training.acme import running_statistics, specs

    from metaworld_x.experts.policy import PolicyParams
    from metaworld_x.training.warm_start import with_policy_statistics

    sizes = {"state": (3,), "privileged_state": (2,)}
    state = running_statistics.init_state({k: specs.Array(v, jnp.float32) for k, v in sizes.items()})
    rng = np.random.default_rng(0)
    state = running_statistics.update(state, {k: jnp.asarray(rng.normal(size=(100, *v)), jnp.float32) for k, v in sizes.items()})
    policy = PolicyParams(obs_mean=jnp.array([1.0, -2.0, 3.0]), obs_std=jnp.array([0.5, 2.0, 1.0]), weights=(), biases=())
    warm = with_policy_statistics(state, policy)
    np.testing.assert_array_equal(warm.mean["state"], policy.obs_mean)
    np.testing.assert_array_equal(warm.std["state"], policy.obs_std)
    np.testing.assert_array_equal(warm.mean["privileged_state"], state.mean["privileged_state"])
    # 100 more samples at the mean: the mean stays, the variance halves (seen 100, now 200), as if the shipped
    # statistics had come from the 100 samples counted.
    at_mean = {"state": jnp.tile(policy.obs_mean, (100, 1)), "privileged_state": jnp.tile(state.mean["privileged_state"], (100, 1))}
    after = running_statistics.update(warm, at_mean)
    np.testing.assert_allclose(after.mean["state"], policy.obs_mean, rtol=1e-6)
    np.testing.assert_allclose(after.std["state"], policy.obs_std / np.sqrt(2.0), rtol=1e-5)
    # Counted as the 900 samples the policy trained on, 100 new ones move the statistics by a tenth, every key's
    # spread kept: a fine-tune's new data no longer outweighs them within a few iterations.
    seen = with_policy_statistics(state, policy, seen=900)
    assert float(seen.count.lo) == 900 and float(with_policy_statistics(state, policy, seen=50).count.lo) == 100
    np.testing.assert_allclose(seen.std["privileged_state"], state.std["privileged_state"], rtol=1e-5)
    shifted = running_statistics.update(seen, {k: v + 1.0 for k, v in at_mean.items()})
    np.testing.assert_allclose(shifted.mean["state"], policy.obs_mean + 0.1, rtol=1e-5)
    np.testing.assert_allclose(shifted.mean["privileged_state"], state.mean["privileged_state"] + 0.1, rtol=1e-5)


def test_corrupted_or_wrong_version_checkpoint_is_refused(tmp_path):
    env = lambda n: PointMassEnv(n, "mjx")  # noqa: E731
    make_train(SMALL, env, _quiet(run_dir=tmp_path))(jax.random.PRNGKey(0))
    path = checkpoint.latest(tmp_path / "checkpoints")
    intact = {}
    for each in checkpoint.listed(tmp_path / "checkpoints"):  # an older intact one would be resumed from instead
        state_file = each / checkpoint.STATE_FILE
        intact[state_file] = state_file.read_bytes()
        state_file.write_bytes(intact[state_file][:-10] + b"0123456789")
    with pytest.raises(UserError, match="corrupted"):
        make_train(SMALL, env, _quiet(run_dir=tmp_path, resume=True))(jax.random.PRNGKey(0))
    meta = path / checkpoint.META_FILE
    meta.write_text(meta.read_text().replace('"format_version": 1', '"format_version": 99'))
    with pytest.raises(UserError, match="format version 99"):
        checkpoint.read_meta(path)
    other = dataclasses.replace(SMALL, policy_hidden=(8,))
    shutil.rmtree(path)
    for state_file, payload in intact.items():
        if state_file.parent.exists():
            state_file.write_bytes(payload)
    with pytest.raises(UserError, match="different config.*policy_hidden"):
        make_train(other, env, _quiet(run_dir=tmp_path, resume=True))(jax.random.PRNGKey(0))


def test_a_checkpoint_from_before_a_setting_existed_resumes_only_at_its_default():
    from metaworld_x.training.start import check_same_config, config_record

    older = {"config": {k: v for k, v in config_record(SMALL).items() if k != "freeze_statistics"}}
    check_same_config(older, SMALL, Path("old"))  # it ran at the default, as SMALL does
    with pytest.raises(UserError, match="different config.*freeze_statistics"):
        check_same_config(older, dataclasses.replace(SMALL, freeze_statistics=True), Path("old"))
    # a setting added inside a nested config (the constraint's floor under λ) likewise
    record = config_record(SMALL)
    older = {"config": {**record, "constraint": {k: v for k, v in record["constraint"].items() if k != "min_multiplier"}}}
    check_same_config(older, SMALL, Path("old"))
    floored = dataclasses.replace(SMALL, constraint=dataclasses.replace(SMALL.constraint, min_multiplier=0.5))
    with pytest.raises(UserError, match="different config.*constraint"):
        check_same_config(older, floored, Path("old"))


def test_nan_guard_rolls_back_and_names_the_term(tmp_path):
    class Poisoned(PointMassEnv):
        calls = 0

        def step(self, state, action):
            state = super().step(state, action)
            Poisoned.calls += 1
            if Poisoned.calls == 20:  # one bad reward in the third iteration
                return state.replace(reward=state.reward.at[0].set(jnp.nan))
            return state

    result = make_train(SMALL, lambda n: Poisoned(n, "cpu"), _quiet(run_dir=None))(jax.random.PRNGKey(0))
    assert len(result.rollbacks) == 1 and "reward" in result.rollbacks[0]
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree_util.tree_leaves(result.state.params))


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


def test_policy_export_acts_without_training_code_and_onnx_matches(tmp_path):
    import onnxruntime

    from metaworld_x.experts.policy import act, export_onnx, from_training, load_policy, save_policy

    result = make_train(SMALL, lambda n: PointMassEnv(n, "mjx"), _quiet())(jax.random.PRNGKey(3))
    params = from_training(result.state.params.policy, result.state.normalizer)
    save_policy(params, tmp_path, {"skill": "point_mass"})
    loaded, spec = load_policy(tmp_path)
    obs = np.random.default_rng(0).normal(size=(64, 6)).astype(np.float32)
    jax_action = np.asarray(jax.jit(act)(loaded, obs))
    # the exported policy is the training policy's mode
    from metaworld_x.training.networks import make_networks as nets_for

    nets = nets_for(PointMassEnv.observation_sizes, 2, (16,), (16,), True)
    logits = nets.policy.apply(result.state.normalizer, result.state.params.policy, {"state": obs, "privileged_state": obs})
    np.testing.assert_allclose(jax_action, np.asarray(nets.action_distribution.mode(logits)), atol=1e-6)
    session = onnxruntime.InferenceSession(str(export_onnx(loaded, tmp_path / "policy.onnx")))
    onnx_action = session.run(["action"], {"obs": obs})[0]
    np.testing.assert_allclose(onnx_action, jax_action, atol=1e-5)
    assert spec["action_size"] == 2
    # loaded and run again where importing metaworld_x.training fails
    fenced_action, record = act_without_training(tmp_path, obs)
    np.testing.assert_allclose(fenced_action, jax_action, atol=1e-6)
    assert record["training_modules"] == [] and record["action_size"] == 2


def test_a_policy_moved_to_a_larger_action_scale_asks_for_the_same_servo_targets_near_zero(tmp_path):
    """Warm-starting at another action scale (carry: 0.5 to 0.85) shrinks the mean actions, not the log-std."""
    import json

    from metaworld_x.experts.policy import PolicyParams, act, save_policy
    from metaworld_x.training.warm_start import shipped_action_scale, with_action_scale

    rng = np.random.default_rng(0)
    policy = PolicyParams(
        obs_mean=jnp.zeros(3), obs_std=jnp.ones(3),
        weights=(jnp.asarray(rng.normal(size=(3, 8)), jnp.float32), jnp.asarray(rng.normal(size=(8, 4)) * 0.05, jnp.float32)),
        biases=(jnp.zeros(8), jnp.asarray(rng.normal(size=4) * 0.01, jnp.float32)),
    )
    moved = with_action_scale(policy, 0.5, 0.85)
    obs = jnp.asarray(rng.normal(size=(16, 3)), jnp.float32)
    targets_before, targets_after = 0.5 * act(policy, obs), 0.85 * act(moved, obs)
    assert float(jnp.abs(targets_before).max()) > 0.01, "a test of small, not zero, actions"
    np.testing.assert_allclose(targets_after, targets_before, rtol=0.03, atol=1e-4)  # tanh is nearly linear near zero
    unmoved = 0.85 * act(policy, obs)
    assert float(jnp.abs(unmoved - targets_before).max()) > 0.5 * float(jnp.abs(targets_before).max())
    np.testing.assert_array_equal(moved.weights[-1][:, 2:], policy.weights[-1][:, 2:])  # the log-std half
    np.testing.assert_array_equal(moved.weights[0], policy.weights[0])
    save_policy(policy, tmp_path / "expert", {"skill": "x"})
    assert shipped_action_scale(tmp_path / "expert") is None
    (tmp_path / "expert" / "spec.json").write_text(json.dumps({"action_scale": 0.5}))
    assert shipped_action_scale(tmp_path / "expert") == 0.5


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
    full = make_train(adaptive, env, _quiet(run_dir=tmp_path / "full"))(jax.random.PRNGKey(1))
    rates = [h["losses/learning_rate"] for h in full.history]
    assert rates[:2] == pytest.approx([SMALL.learning_rate] * 2)  # held policy: KL 0 is no signal
    assert rates[2:] == pytest.approx([SMALL.learning_rate * 1.5 ** i for i in range(1, len(rates) - 1)])
    assert float(optax.tree_utils.tree_get(full.state.opt_state, "learning_rate")) == pytest.approx(rates[-1])
    # the rate is in the optimiser state, so a killed run resumes with it, bit for bit
    killed = dataclasses.replace(adaptive, total_env_steps=SMALL.steps_per_iteration * 4)
    make_train(killed, env, _quiet(run_dir=tmp_path / "killed"))(jax.random.PRNGKey(1))
    resumed = make_train(adaptive, env, _quiet(run_dir=tmp_path / "killed", resume=True))(jax.random.PRNGKey(2))
    for a, b in zip(jax.tree_util.tree_leaves(full.state), jax.tree_util.tree_leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
