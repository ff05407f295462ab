"""Fine-tunes: from another run's training state, or from a shipped policy with fresh critics that learn alone first,
its input statistics and the multiplier where its training left it."""

import dataclasses
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.training.train import make_train

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from point_mass import SMALL, PointMassEnv, quiet  # noqa: E402





def test_init_from_starts_with_another_runs_training_state_and_fresh_environments(tmp_path):
    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    short = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 4)
    source = make_train(short, env, quiet(run_dir=tmp_path / "source"))(jax.random.PRNGKey(1))
    # nothing left to do: the state is the source's, whatever this run's own seed
    same = make_train(short, env, quiet(run_dir=tmp_path / "same", init_from=tmp_path / "source"))(
        jax.random.PRNGKey(5))
    for a, b in zip(jax.tree_util.tree_leaves(source.state), jax.tree_util.tree_leaves(same.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # two more iterations continue the step count from the source's
    longer = make_train(dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 6), env,
                        quiet(run_dir=tmp_path / "tuned", init_from=tmp_path / "source"))(jax.random.PRNGKey(5))
    assert [h["env_steps"] for h in longer.history] == [SMALL.steps_per_iteration * i for i in (5, 6)]
    with pytest.raises(UserError, match="does not fit"):
        make_train(dataclasses.replace(SMALL, policy_hidden=(8,)), env,
                   quiet(run_dir=tmp_path / "other", init_from=tmp_path / "source"))(jax.random.PRNGKey(0))


def test_init_from_a_shipped_policy_keeps_its_network_and_input_statistics(tmp_path):
    """A fine-tune whose run folder is gone starts from experts/<skill>: the policy as shipped, fresh critics."""
    from metaworld_x.experts.policy import from_training, save_policy

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, quiet())(jax.random.PRNGKey(1))
    shipped = from_training(source.state.params.policy, source.state.normalizer)
    save_policy(shipped, tmp_path / "expert", {"skill": "point_mass"})
    # With a zero learning rate the one iteration leaves the networks as they started.
    frozen = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration, learning_rate=0.0)
    tuned = make_train(frozen, env, quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
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
                   quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(0))


def test_frozen_statistics_stay_where_a_fine_tune_from_a_shipped_policy_starts_them(tmp_path):
    from metaworld_x.experts.policy import from_training, save_policy

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, quiet())(jax.random.PRNGKey(1))
    shipped = from_training(source.state.params.policy, source.state.normalizer)
    save_policy(shipped, tmp_path / "expert", {"skill": "point_mass"})

    def tune(**settings):
        config = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 3, **settings)
        return make_train(config, env, quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))

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

    source = make_train(SMALL, lambda n: PointMassEnv(n, "cpu"), quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})
    frozen = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration, learning_rate=0.0, freeze_statistics=True)

    def progress_spread(env_class) -> float:
        result = make_train(frozen, lambda n: env_class(n, "cpu"), quiet(init_from=tmp_path / "expert"))(
            jax.random.PRNGKey(5))
        return float(result.state.normalizer.std["privileged_state"][-1])

    assert progress_spread(SaysItsEpisodeLength) == pytest.approx(0.29, abs=0.03)
    assert progress_spread(WithProgress) < 0.1  # an environment that does not say: its first unroll only


def test_during_the_warm_up_a_shipped_policy_acts_on_its_own_statistics(tmp_path):
    """The warm-up's unrolls are what the critics' statistics come from, so the shipped policy must act in them as
    it was shipped, not on the empty statistics a run starts with. Here its statistics put every input 100 standard
    deviations below its mean, so on them it asks for saturated actions and on empty ones it does not."""
    from metaworld_x.experts.policy import act, from_training, save_policy

    source = make_train(SMALL, lambda n: PointMassEnv(n, "cpu"), quiet())(jax.random.PRNGKey(1))
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
    make_train(frozen, lambda n: Recording(n, "cpu"), quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
    obs, taken = first_steps[0]
    as_shipped = np.asarray(act(shipped, jnp.asarray(obs)))
    unnormalised = np.asarray(act(shipped.replace(obs_mean=jnp.zeros_like(shipped.obs_mean)), jnp.asarray(obs)))
    assert np.mean(np.abs(as_shipped - unnormalised)) > 0.5  # the two statistics ask for different actions
    # sampled actions: most lie near the shipped mean action, a few are thrown far by the exploration noise
    assert np.median(np.abs(taken - as_shipped)) < 0.1 < np.median(np.abs(taken - unnormalised))


def test_a_critic_warmup_holds_the_policy_while_the_fresh_critics_learn(tmp_path):
    from metaworld_x.experts.policy import from_training, save_policy

    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    source = make_train(SMALL, env, quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})

    def tune(iterations: int, **settings):
        config = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * iterations, **settings)
        return make_train(config, env, quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))

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
    source = make_train(SMALL, env, quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})
    assert SMALL.critic_warmup_iterations is None
    two = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 2)
    tuned = make_train(two, env, quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
    policies = jax.tree_util.tree_leaves(source.state.params.policy), jax.tree_util.tree_leaves(tuned.state.params.policy)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(*policies))
    # the same two iterations from the run's checkpoint (its own critics come with it) move the policy at once
    source_run = make_train(SMALL, env, quiet(run_dir=tmp_path / "source"))(jax.random.PRNGKey(1))
    longer = dataclasses.replace(two, total_env_steps=SMALL.total_env_steps + SMALL.steps_per_iteration * 2)
    resumed = make_train(longer, env, quiet(init_from=tmp_path / "source"))(jax.random.PRNGKey(5))
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
    source = make_train(SMALL, env, quiet())(jax.random.PRNGKey(1))
    save_policy(from_training(source.state.params.policy, source.state.normalizer), tmp_path / "expert", {"skill": "point_mass"})
    one = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration)

    def tuned_multiplier() -> float:
        result = make_train(one, env, quiet(init_from=tmp_path / "expert"))(jax.random.PRNGKey(5))
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
