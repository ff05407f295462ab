"""The router: mixture, weights, VLM prior and its decay, imagination training, checkpoints, expert actions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.experts.installed import ExpertSet
from metaworld_x.experts.policy import PolicyParams
from metaworld_x.routing import (
    Router, RouterConfig, check_prior, hard_gumbel_softmax, init_router_state, load_router,
    mixture_action, plan_mppi, prior_from_scores, save_router, train_router,
)
from metaworld_x.routing.imagination import pessimistic_value
from metaworld_x.world_model import ReplayBuffer, WorldModel, WorldModelConfig, train_world_model

NAMES = ("walk", "run")
OBS, TEXT = 4, 8
# Same sizes as test_world_model.py's model, so a session compiles the world-model update once.
WM_CONFIG = WorldModelConfig(
    latent_size=16, encoder_hidden=(32,), hidden=(32, 32), batch_size=32, horizon=3, log_every=50, fast_compile=True
)


def fake_policy(key, obs_size=OBS, action_size=3, hidden=16) -> PolicyParams:
    k1, k2 = jax.random.split(key)
    return PolicyParams(
        obs_mean=jnp.zeros(obs_size), obs_std=jnp.ones(obs_size),
        weights=(jax.random.normal(k1, (obs_size, hidden)), jax.random.normal(k2, (hidden, 2 * action_size))),
        biases=(jnp.zeros(hidden), jnp.zeros(2 * action_size)),
    )


def expert_set(names=NAMES, seed=0) -> ExpertSet:
    keys = jax.random.split(jax.random.PRNGKey(seed), len(names))
    specs = tuple({"skill": n, "obs_layout": [["qpos", 2], ["qvel", 2]]} for n in names)
    return ExpertSet(tuple(names), tuple(fake_policy(k) for k in keys), specs)


def test_mixture_action_is_the_weighted_sum():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(3), size=5).astype(np.float32)
    actions = rng.uniform(-1, 1, (5, 3, 19)).astype(np.float32)
    expected = sum(weights[:, i, None] * actions[:, i] for i in range(3))
    np.testing.assert_allclose(mixture_action(jnp.asarray(weights), jnp.asarray(actions)), expected, atol=1e-6)
    with pytest.raises(UserError, match="expected"):
        mixture_action(jnp.ones((5, 2)), jnp.asarray(actions))


def test_weights_are_on_the_simplex_and_hard_gumbel_passes_gradients():
    router = Router(RouterConfig(hidden=(16, 16)), OBS, TEXT, ("a", "b", "c"))
    params = router.init(jax.random.PRNGKey(0))
    obs, text = jax.random.normal(jax.random.PRNGKey(1), (64, OBS)), jnp.ones((64, TEXT))
    soft = router.weights(params, obs, text)
    assert jnp.all(soft >= 0) and jnp.allclose(soft.sum(-1), 1, atol=1e-5)

    logits = jax.random.normal(jax.random.PRNGKey(2), (64, 3))
    hard = hard_gumbel_softmax(logits, jax.random.PRNGKey(3), 1.0)
    assert set(np.unique(np.asarray(hard))) <= {0.0, 1.0} and jnp.allclose(hard.sum(-1), 1)
    grad = jax.grad(lambda l: jnp.sum(hard_gumbel_softmax(l, jax.random.PRNGKey(3), 1.0) * jnp.arange(3.0)))(logits)
    assert jnp.all(jnp.isfinite(grad)) and jnp.abs(grad).sum() > 0

    gumbel = Router(RouterConfig(hidden=(16, 16), output="gumbel"), OBS, TEXT, ("a", "b", "c"))
    deployed = gumbel.weights(params, obs, text)  # no key: the argmax, one-hot
    np.testing.assert_array_equal(np.asarray(deployed).argmax(-1), np.asarray(soft).argmax(-1))


def test_weights_below_min_weight_are_dropped_and_the_rest_renormalised():
    logits = jnp.log(jnp.asarray([[0.90, 0.06, 0.04], [0.30, 0.30, 0.40], [0.34, 0.33, 0.33]]))
    router = Router(RouterConfig(hidden=(16,), min_weight=0.05), OBS, TEXT, ("a", "b", "c"))
    weights = np.asarray(router.weights_from_logits(logits))
    np.testing.assert_allclose(weights[0], [0.90 / 0.96, 0.06 / 0.96, 0.0], rtol=1e-5)
    np.testing.assert_allclose(weights[1], [0.3, 0.3, 0.4], rtol=1e-5)
    # above every weight, only the largest is left
    strict = Router(RouterConfig(hidden=(16,), min_weight=0.5), OBS, TEXT, ("a", "b", "c"))
    np.testing.assert_array_equal(np.asarray(strict.weights_from_logits(logits)), [[1, 0, 0], [0, 0, 1], [1, 0, 0]])
    plain = Router(RouterConfig(hidden=(16,), min_weight=0.0), OBS, TEXT, ("a", "b", "c"))
    np.testing.assert_allclose(np.asarray(plain.weights_from_logits(logits))[0], [0.90, 0.06, 0.04], rtol=1e-5)
    grad = jax.grad(lambda l: router.weights_from_logits(l)[0, 1])(logits)
    assert jnp.all(jnp.isfinite(grad)) and float(jnp.abs(grad[0]).sum()) > 0
    with pytest.raises(UserError, match="min_weight"):
        RouterConfig(min_weight=1.0)


def test_a_lone_kept_weight_is_exactly_one_under_jit():
    # XLA may compute x / Σx as x · (1/Σx), which rounds a lone kept weight to
    # 0.99999994: a mixture scaled by that differs from the expert's action, so
    # two wordings that pick the same expert could still roll out differently.
    from metaworld_x.routing.network import drop_small_weights

    logits = jax.random.normal(jax.random.PRNGKey(0), (20_000, 10)) * 4.0
    weights = jax.nn.softmax(logits, axis=-1)
    lone = np.asarray(jnp.sum(weights >= 0.1, axis=-1) <= 1)
    assert lone.sum() > 1000, "too few one-expert rows to test"
    dropped = np.asarray(jax.jit(drop_small_weights, static_argnums=1)(weights, 0.1))
    assert set(np.unique(dropped[lone])) == {0.0, 1.0}
    np.testing.assert_array_equal(dropped[lone].sum(-1), 1.0)
    np.testing.assert_array_equal(dropped[lone].argmax(-1), np.asarray(weights)[lone].argmax(-1))


def test_fixed_expert_is_one_hot_and_must_exist():
    router = Router(RouterConfig(hidden=(16,), fixed_expert="run"), OBS, TEXT, NAMES)
    w = router.weights(router.init(jax.random.PRNGKey(0)), jnp.zeros((3, OBS)), jnp.zeros((3, TEXT)))
    np.testing.assert_array_equal(w, np.tile([0.0, 1.0], (3, 1)))
    with pytest.raises(UserError, match="fixed_expert 'crawl'"):
        Router(RouterConfig(fixed_expert="crawl"), OBS, TEXT, NAMES)


def test_peaked_prior_sets_the_starting_weights():
    prior = np.array([0.05, 0.85, 0.05, 0.05], np.float32)
    obs, text = jax.random.normal(jax.random.PRNGKey(1), (32, OBS)), jax.random.normal(jax.random.PRNGKey(2), (32, TEXT))
    names = ("a", "b", "c", "d")
    # min_weight 0: the prior's 0.05 entries lie below the default threshold, which would drop them
    with_vlm = Router(RouterConfig(hidden=(32, 32), use_vlm=True, min_weight=0.0), OBS, TEXT, names)
    start = with_vlm.weights(with_vlm.init(jax.random.PRNGKey(0), prior=prior), obs, text)
    np.testing.assert_allclose(start, np.broadcast_to(prior, start.shape), atol=0.03)
    without = Router(RouterConfig(hidden=(32, 32), use_vlm=False), OBS, TEXT, names)
    assert float(without.weights(without.init(jax.random.PRNGKey(0), prior=prior), obs, text)[:, 1].mean()) < 0.6


def model_free_batches(rng, count, names=NAMES, prior=None, repeat=False):
    """`count` batches of random expert choices whose return pays choice 1; with `repeat`, the first one again."""
    batch = None
    for _ in range(count):
        if batch is None or not repeat:
            choice = rng.integers(0, len(names), 256)
            batch = {"obs": rng.normal(size=(256, OBS)), "text": np.ones((256, TEXT)), "choice": choice,
                     "return": (choice == 1).astype(np.float32) + 0.1 * rng.normal(size=256)}
            if prior is not None:
                batch["prior"] = prior
        yield batch


def test_vlm_weight_decays_on_schedule():
    w0, updates = 2.0, 30
    config = RouterConfig(hidden=(16,), use_world_model=False, vlm_weight=w0, learning_rate=0.0, fast_compile=True)
    router = Router(config, OBS, TEXT, NAMES)
    state = init_router_state(router, jax.random.PRNGKey(0))
    prior = np.array([0.9, 0.1])
    state, history = train_router(router, state, model_free_batches(np.random.default_rng(0), updates, prior=prior, repeat=True))
    np.testing.assert_allclose(float(state.vlm_weight), w0 * 0.99**updates, rtol=1e-5)
    weight = np.array(history["router/vlm_weight"])
    np.testing.assert_allclose(weight, w0 * 0.99 ** np.arange(updates), rtol=1e-5)
    kl, contribution = np.array(history["losses/kl"]), np.array(history["losses/kl_weighted"])
    np.testing.assert_allclose(contribution, weight * kl, rtol=1e-5)
    assert np.all(np.diff(contribution) < 0)  # parameters frozen (learning rate 0): the KL is fixed and its term shrinks


def test_model_free_router_moves_to_the_better_expert():
    config = RouterConfig(hidden=(16,), use_world_model=False, use_vlm=False, learning_rate=3e-3, fast_compile=True)
    router = Router(config, OBS, TEXT, NAMES)
    state = init_router_state(router, jax.random.PRNGKey(0))
    state, _ = train_router(router, state, model_free_batches(np.random.default_rng(0), 60))
    w = router.weights(state.params, jnp.zeros((8, OBS)), jnp.ones((8, TEXT)))
    assert float(w[:, 1].mean()) > 0.7


def _trained_world(seed: int, reward):
    """A world model of 30 random-walk episodes of 40 steps under Dirichlet weights, paid `reward(weights, x)`."""
    rng = np.random.default_rng(seed)
    buffer = ReplayBuffer(5000, OBS, len(NAMES), cond_kind="expert_weights")
    for _ in range(30):
        x = rng.normal(size=OBS)
        obs, weights, rewards = [x], [], []
        for _ in range(40):
            w = rng.dirichlet(np.full(len(NAMES), 0.5))
            x = 0.9 * x + 0.1 * rng.normal(size=OBS)
            obs.append(x)
            weights.append(w)
            rewards.append(reward(w, x))
        buffer.add_episode(np.array(obs), np.array(weights), np.array(rewards))
    params, _ = train_world_model(WM_CONFIG, buffer, jax.random.PRNGKey(0), 200)
    return buffer, WorldModel(WM_CONFIG, OBS, len(NAMES)), params


@pytest.fixture(scope="module")
def toy_world():
    """A world model of data where the executed weights decide the reward: expert 'run' (index 1) pays 1, 'walk' 0."""
    return _trained_world(0, lambda w, x: w[1])


def _imagine_with(world, config: RouterConfig, updates: int):
    """(mean weight on expert 1 before, after, router state, history) of `updates` imagination updates in `world`."""
    buffer, model, wm_params = world
    router = Router(config, OBS, TEXT, NAMES)
    state = init_router_state(router, jax.random.PRNGKey(1), model, wm_params)
    rng = np.random.default_rng(1)
    probe = buffer.sample(64, 1, rng)["obs"][:, 0]
    text = np.ones((64, TEXT), np.float32)
    before = float(router.weights(state.params, probe, text)[:, 1].mean())
    batches = ({"obs": buffer.sample(64, 1, rng)["obs"][:, 0], "text": text, "prior": [0.5, 0.5]} for _ in range(updates))
    state, history = train_router(router, state, batches, model, wm_params)
    return before, float(router.weights(state.params, probe, text)[:, 1].mean()), state, history


def test_imagination_training_prefers_the_better_expert(toy_world):
    w0, updates = 0.1, 80
    # Without the trust region: this world model resolves what the weights do, so the actor may go all the way.
    config = RouterConfig(hidden=(32, 32), use_vlm=True, vlm_weight=w0, imagination_horizon=3, learning_rate=1e-3,
                          trust_region_coef=0.0, fast_compile=True)
    before, after, state, history = _imagine_with(toy_world, config, updates)
    print(f"imagination: weight on the better expert {before:.2f} -> {after:.2f};"
          f" imagined return {history['imagination/return'][0]:.2f} -> {history['imagination/return'][-1]:.2f}")
    assert after > before + 0.1 and after > 0.55
    np.testing.assert_allclose(float(state.vlm_weight), w0 * 0.99**updates, rtol=1e-5)
    assert np.all(np.isfinite(history["losses/critic"]))


def test_pessimistic_value_falls_as_the_heads_disagree():
    mean = 10.0
    spreads = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    q = jnp.stack([mean - spreads, mean + spreads])  # two heads [E=2, 5], same mean
    values = np.asarray(pessimistic_value(q, 1.0))
    assert np.all(np.diff(values) < 0)  # the penalty grows with the disagreement
    np.testing.assert_allclose(values, np.asarray(jnp.min(q, axis=0)), atol=1e-3)  # two heads, κ = 1: their minimum
    np.testing.assert_allclose(np.asarray(pessimistic_value(q, 0.0)), mean, atol=1e-6)  # κ = 0: the ensemble mean
    grad = jax.grad(lambda x: pessimistic_value(x, 1.0).sum())(jnp.ones((2, 3)))  # heads in exact agreement
    assert np.all(np.isfinite(np.asarray(grad)))


@pytest.fixture(scope="module")
def flat_world():
    """A world model of data where the weights change nothing: the reward is the same whoever acts.

    This is the router's failure mode on `stand`: imagined returns cannot tell the experts apart, so once the
    VLM weight has decayed only the entropy bonus is left, and it pulls the router to an even mixture."""
    return _trained_world(3, lambda w, x: 0.5 + 0.05 * x[0])


@pytest.mark.parametrize("trust", [0.0, 1.0])
def test_trust_region_holds_the_router_near_its_anchor_when_the_model_cannot_tell(flat_world, trust):
    buffer, model, wm_params = flat_world
    prior, updates = np.array([0.97, 0.03]), 150
    config = RouterConfig(hidden=(32, 32), vlm_weight=1.0, vlm_decay=0.95, entropy_coef=0.1, imagination_horizon=3,
                          learning_rate=3e-3, trust_region_coef=trust, fast_compile=True)
    router = Router(config, OBS, TEXT, NAMES)
    state = init_router_state(router, jax.random.PRNGKey(1), model, wm_params, prior=prior)
    rng = np.random.default_rng(1)
    text = np.ones((64, TEXT), np.float32)
    probe = buffer.sample(64, 1, rng)["obs"][:, 0]
    batches = ({"obs": buffer.sample(64, 1, rng)["obs"][:, 0], "text": text, "prior": prior} for _ in range(updates))
    state, history = train_router(router, state, batches, model, wm_params)
    # the router's distribution itself: the 0.03 expert is below min_weight, so its deployed weight is 0
    w = np.asarray(jax.nn.softmax(router.logits(state.params, probe, text), axis=-1))
    kl = float(np.mean(np.sum(prior * np.log(prior / w), axis=-1)))  # the anchor is the router at the prior
    print(f"trust region β={trust}: weight on the prior's expert {w[:, 0].mean():.3f}, KL to the anchor {kl:.4f}")
    np.testing.assert_allclose(float(state.vlm_weight), 0.95**updates, rtol=1e-5)  # the VLM schedule is untouched
    if trust == 0:
        assert w[:, 0].mean() < 0.85  # the entropy bonus wins: the failure the trust region exists for
    else:
        assert w[:, 0].mean() > 0.93 and kl < 0.03
        assert np.max(history["losses/trust_kl"]) < 0.05  # held throughout, not only at the end


def test_trust_region_still_lets_a_real_advantage_through(toy_world):
    """Where the world model does resolve the weights, the anchored router still moves towards the better expert."""
    config = RouterConfig(hidden=(32, 32), vlm_weight=0.1, imagination_horizon=3, learning_rate=1e-3, fast_compile=True)
    before, after, _, _ = _imagine_with(toy_world, config, 80)
    print(f"anchored imagination: weight on the better expert {before:.2f} -> {after:.2f}")
    assert after > before + 0.05


def test_mppi_plans_towards_the_better_expert(toy_world):
    buffer, model, wm_params = toy_world
    z = model.encode(wm_params, buffer.sample(1, 1, np.random.default_rng(2))["obs"][0, 0])
    weights = plan_mppi(model, wm_params, z, jax.random.PRNGKey(0), horizon=3, samples=64, iterations=3)
    assert weights.shape == (2,) and jnp.allclose(weights.sum(), 1, atol=1e-5)
    assert float(weights[1]) > 0.6
    gated = plan_mppi(model, wm_params, z, jax.random.PRNGKey(0), horizon=3, samples=64, iterations=3, min_weight=0.45)
    assert np.asarray(gated).tolist() == [0.0, 1.0], "a weight below min_weight survived the plan"


def test_checkpoint_refuses_a_different_expert_set(tmp_path):
    names = ("stand", "walk", "run")
    experts = expert_set(names)
    router = Router(RouterConfig(hidden=(16,)), OBS, TEXT, names)
    params = router.init(jax.random.PRNGKey(0))
    save_router(tmp_path, router, params, experts)
    loaded_router, loaded, record = load_router(tmp_path, experts)
    assert loaded_router == router and [e["name"] for e in record["experts"]] == list(names)
    np.testing.assert_array_equal(loaded.mlp["params"]["out"]["kernel"], params.mlp["params"]["out"]["kernel"])

    other = expert_set(("stand", "walk", "crawl"), seed=0)  # run missing, crawl extra
    changed = ExpertSet(names, (experts.params[0], fake_policy(jax.random.PRNGKey(99)), experts.params[2]), experts.specs)
    with pytest.raises(UserError) as missing_extra:
        load_router(tmp_path, other)
    assert "missing: run" in str(missing_extra.value) and "extra: crawl" in str(missing_extra.value)
    with pytest.raises(UserError, match="changed: walk"):
        load_router(tmp_path, changed)
    reordered = ExpertSet(("walk", "stand", "run"), (experts.params[1], experts.params[0], experts.params[2]), experts.specs)
    with pytest.raises(UserError, match="reordered"):
        load_router(tmp_path, reordered)


def test_expert_set_loads_policies_and_hashes_them_like_their_files(tmp_path):
    import hashlib

    from metaworld_x.experts.policy import POLICY_FILE, save_policy

    experts = expert_set()
    for name, params, spec in zip(experts.names, experts.params, experts.specs):
        save_policy(params, tmp_path / name, spec)
    loaded = ExpertSet.load([tmp_path / "walk", tmp_path / "run"])
    assert loaded.names == NAMES and loaded.record() == experts.record()
    for entry in loaded.record():
        assert hashlib.sha256((tmp_path / entry["name"] / POLICY_FILE).read_bytes()).hexdigest().startswith(entry["hash"])


def test_each_expert_acts_on_its_own_observation_in_the_scenes_action_units():
    from metaworld_x.experts.policy import act
    from metaworld_x.routing.rollouts import expert_actions

    experts = expert_set()
    obs = (jnp.ones((5, OBS)), -2 * jnp.ones((5, OBS)))
    gains = (0.5, 1.0)
    actions = expert_actions(experts.params, obs, gains)
    assert actions.shape == (5, len(NAMES), experts.action_size)
    for k, (params, own_obs, gain) in enumerate(zip(experts.params, obs, gains)):
        np.testing.assert_allclose(actions[:, k], gain * act(params, own_obs), rtol=1e-6)
        assert jnp.all(jnp.abs(actions[:, k]) <= gain)


def test_malformed_priors_are_repaired_or_rejected():
    with pytest.raises(UserError, match="3 experts"):
        check_prior([0.5, 0.5], ("a", "b", "c"))
    with pytest.raises(UserError, match="not finite for b"):
        check_prior([0.5, np.nan, 0.5], ("a", "b", "c"))
    with pytest.raises(UserError, match="negative"):
        check_prior([0.5, -0.1, 0.6], ("a", "b", "c"))
    np.testing.assert_allclose(check_prior([2, 1, 1], ("a", "b", "c")), [0.5, 0.25, 0.25])
    with pytest.warns(UserWarning, match="clipped"):
        repaired = prior_from_scores([-3.0, 10.0, 25.0], ("a", "b", "c"))
    np.testing.assert_allclose(repaired, prior_from_scores([0.0, 10.0, 10.0], ("a", "b", "c")))

    config = RouterConfig(hidden=(16,), use_world_model=False, fast_compile=True)
    router = Router(config, OBS, TEXT, NAMES)
    state = init_router_state(router, jax.random.PRNGKey(0))
    with pytest.raises(UserError, match="not finite for run"):
        train_router(router, state, model_free_batches(np.random.default_rng(0), 1, prior=[0.5, np.nan]))
    with pytest.raises(UserError, match="needs a VLM prior"):
        train_router(router, state, model_free_batches(np.random.default_rng(0), 1))


def test_entropy_has_a_finite_gradient_when_a_weight_underflows():
    """A peaked router whose softmax underflows to an exact 0 must not turn the update's gradient into NaN."""
    from metaworld_x.routing.network import entropy

    moderate = jnp.asarray([0.3, -1.0, 2.0])
    w = jax.nn.softmax(moderate)
    np.testing.assert_allclose(float(entropy(moderate)), float(-jnp.sum(w * jnp.log(w))), rtol=1e-6)
    peaked = jnp.asarray([0.0, 200.0, -200.0])  # softmax: (0, 1, 0) exactly in float32
    assert float(jax.nn.softmax(peaked)[2]) == 0.0
    grad = jax.grad(lambda x: entropy(x))(peaked)
    assert np.all(np.isfinite(np.asarray(grad)))
