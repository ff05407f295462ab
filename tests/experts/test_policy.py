"""A trained policy shipped on its own: it acts without the training code, its ONNX graph agrees, and it moves to a
larger action scale without changing the servo targets near zero."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from metaworld_x.training.train import make_train

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from no_training import act_without_training  # noqa: E402
from point_mass import SMALL, PointMassEnv, quiet  # noqa: E402





def test_policy_export_acts_without_training_code_and_onnx_matches(tmp_path):
    import onnxruntime

    from metaworld_x.experts.policy import act, export_onnx, from_training, load_policy, save_policy

    result = make_train(SMALL, lambda n: PointMassEnv(n, "mjx"), quiet())(jax.random.PRNGKey(3))
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
