"""The mjx backend, and its agreement with the cpu backend.

MJX compiles for about a minute on a small CPU, so the module builds one
2-world walk env and reuses its compiled step in every test.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.envs import make
from metaworld_x.envs.mjx_env import default_impl, warp_available
from metaworld_x.envs.randomize import RandomizationConfig, apply, model_arrays, randomize

WORLDS = 2
HORIZON = 10  # control steps (0.2 s)
# Measured: float32 MJX against float64 C, random actions in [-1, 1] with
# contacts, differ by at most ~1e-6 in qpos over 10 control steps (see
# test_backends_agree); the bound leaves room for other CPUs' arithmetic.
QPOS_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def mjx_env():
    return make("walk", backend="mjx", num_worlds=WORLDS, impl="jax")


@pytest.fixture(scope="module")
def cpu_env():
    return make("walk", backend="cpu", num_worlds=WORLDS, nthread=1)


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.3, 1.0])
def test_backends_agree(mjx_env, cpu_env, scale):
    actions = np.random.default_rng(0).uniform(-scale, scale, (HORIZON, WORLDS, 19)).astype(np.float32)
    m = mjx_env.reset(jax.random.PRNGKey(7))
    c = cpu_env.reset(jax.random.PRNGKey(7))
    np.testing.assert_array_equal(np.asarray(m.data.qpos), c.data.view.qpos)
    worst = 0.0
    for action in actions:
        m, c = mjx_env.step(m, action), cpu_env.step(c, action)
        worst = max(worst, float(np.abs(np.asarray(m.data.qpos) - c.data.view.qpos).max()))
        np.testing.assert_allclose(np.asarray(m.reward), np.asarray(c.reward), atol=1e-3)
        np.testing.assert_allclose(np.asarray(m.obs["state"]), np.asarray(c.obs["state"]), atol=1e-2)
    print(f"max |qpos_mjx - qpos_cpu| over {HORIZON} steps, actions in ±{scale}: {worst:.2e}")
    assert worst < QPOS_TOLERANCE


@pytest.mark.slow
def test_mjx_nonfinite_action_ends_that_world_and_resets_it(mjx_env):
    state = mjx_env.reset(jax.random.PRNGKey(0))
    state = mjx_env.step(state, np.zeros((WORLDS, 19), np.float32))
    action = np.zeros((WORLDS, 19), np.float32)
    action[1, 0] = np.inf
    state = mjx_env.step(state, action)
    assert np.asarray(state.done).tolist() == [False, True]
    assert mjx_env.reason_names[int(state.info["termination_reason"][1])] == "nonfinite_action"
    assert np.asarray(state.info["step"]).tolist() == [2, 0]
    assert np.isfinite(np.asarray(state.data.qpos)).all()


@pytest.mark.slow
def test_mjx_diverged_physics_ends_that_world(mjx_env):
    state = mjx_env.reset(jax.random.PRNGKey(0))
    data = state.data.replace(qvel=state.data.qvel.at[0, 7].set(jnp.nan))
    state = mjx_env.step(state.replace(data=data), np.zeros((WORLDS, 19), np.float32))
    assert np.asarray(state.done).tolist() == [True, False]
    assert mjx_env.reason_names[int(state.info["termination_reason"][0])] == "nonfinite_physics"
    assert np.isfinite(np.asarray(state.data.qpos)).all() and np.isfinite(np.asarray(state.obs["state"])).all()


def test_mjx_state_survives_a_checkpoint(mjx_env, tmp_path):
    from metaworld_x.training import checkpoint

    state = mjx_env.reset(jax.random.PRNGKey(3))
    checkpoint.save(tmp_path, 1, {"env": mjx_env.snapshot(state)}, {})
    template = {"env": mjx_env.snapshot(mjx_env.reset(jax.random.PRNGKey(0)))}
    restored, _ = checkpoint.restore(checkpoint.latest(tmp_path), template)
    back = mjx_env.restore(restored["env"])
    assert jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(state)
    for saved, loaded in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(back)):
        np.testing.assert_array_equal(np.asarray(saved), np.asarray(loaded))
    with pytest.raises(ValueError, match="same task"):
        mjx_env.restore(restored["env"][:-1])


def test_mjx_wrong_action_shape(mjx_env):
    state = mjx_env.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"action must have shape \(2, 19\)"):
        mjx_env.step(state, np.zeros((3, 19), np.float32))


def test_default_impl_is_jax_without_an_nvidia_gpu():
    if jax.default_backend() != "gpu":
        assert default_impl() == "jax"


def test_warp_impl_runs_where_available():
    if not warp_available():
        pytest.skip("warp-lang is not installed (MJX-Warp runs on NVIDIA GPUs)")
    env = make("walk", backend="mjx", num_worlds=WORLDS, impl="warp")
    state = env.step(env.reset(jax.random.PRNGKey(0)), np.zeros((WORLDS, 19), np.float32))
    assert np.isfinite(np.asarray(state.obs["state"])).all()


def test_warp_impl_without_warp_says_what_to_install():
    if warp_available():
        pytest.skip("warp is installed")
    with pytest.raises(RuntimeError, match="warp-lang"):
        make("walk", backend="mjx", num_worlds=WORLDS, impl="warp")


def test_randomised_mjx_model_traces_with_per_world_fields(mjx_env):
    keys = jax.random.split(jax.random.PRNGKey(0), WORLDS)
    drawn = jax.vmap(randomize, in_axes=(None, 0, None))(
        model_arrays(mjx_env.compiled.model), keys, RandomizationConfig()
    )
    nominal_model, nominal_axes = mjx_env.model, mjx_env._model_axes
    try:
        apply(mjx_env, drawn)
        assert mjx_env.model.body_mass.shape == (WORLDS, mjx_env.compiled.model.nbody)
        state = jax.eval_shape(mjx_env._reset_fn, mjx_env.model, keys)  # traces, without compiling
        assert state.obs["state"].shape[0] == WORLDS
    finally:
        mjx_env.set_model(nominal_model, nominal_axes)


def test_c_plane_box_contacts_match_the_c_engine_for_a_tilted_box():
    import mujoco
    from mujoco import mjx

    from metaworld_x.envs.mjx_contacts import c_plane_box

    xml = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .012" euler="3 2 0"><freejoint/><geom type="box" size=".1 .04 .0125"/></body>
    </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    c_depths = sorted(data.contact.dist[: data.ncon])
    assert len(c_depths) == 2 and c_depths[1] - c_depths[0] > 1e-3  # corners more than MJX's 1 mm skin apart
    with c_plane_box():
        forwarded = jax.jit(mjx.forward)(mjx.put_model(model), mjx.put_data(model, data))
    dist = np.asarray(forwarded._impl.contact.dist)
    np.testing.assert_allclose(sorted(dist[dist < 0]), c_depths, atol=1e-6)
