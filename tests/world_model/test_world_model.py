"""The world model learns a small simulated system; its replay buffer keeps episodes apart."""

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.world_model import (
    ReplayBuffer, WorldModel, WorldModelConfig, k_step_error, load_world_model, save_world_model, train_world_model,
)

# Small enough to train in seconds on two CPU cores; test_router.py uses the same sizes so the compiled update is shared.
CONFIG = WorldModelConfig(
    latent_size=16, encoder_hidden=(32,), hidden=(32, 32), batch_size=32, horizon=3, log_every=50, fast_compile=True
)
STEPS = 200


def point_mass_buffer(rng, episodes=40, steps=50, capacity=10_000) -> ReplayBuffer:
    """A damped 2-D point mass under random forces; reward −‖position‖; leaving the box terminates."""
    buffer = ReplayBuffer(capacity, obs_size=4, cond_size=2)
    for _ in range(episodes):
        x = np.concatenate([rng.uniform(-1, 1, 2), np.zeros(2)])
        obs, actions, rewards, terminated = [x], [], [], False
        for _ in range(steps):
            a = rng.uniform(-1, 1, 2)
            vel = 0.9 * x[2:] + 0.1 * a
            x = np.concatenate([x[:2] + 0.1 * vel, vel])
            obs.append(x)
            actions.append(a)
            rewards.append(-np.linalg.norm(x[:2]))
            if np.abs(x[:2]).max() > 1.5:
                terminated = True
                break
        buffer.add_episode(np.array(obs), np.array(actions), np.array(rewards), terminated=terminated)
    return buffer


@pytest.fixture(scope="module")
def trained():
    buffer = point_mass_buffer(np.random.default_rng(0))
    params, history = train_world_model(CONFIG, buffer, jax.random.PRNGKey(0), STEPS)
    return buffer, params, history


def test_loss_falls(trained):
    _, _, history = trained
    total = history["world_model/total"]
    assert np.all(np.isfinite(total))
    assert total[-1] < 0.5 * total[0], total
    assert history["world_model/reward"][-1] < history["world_model/reward"][0]
    assert history["step"][-1] == STEPS


def test_k_step_errors_are_finite_and_grow(trained):
    buffer, params, _ = trained
    model = WorldModel(CONFIG, buffer.obs_size, buffer.cond_size)
    errors = k_step_error(model, params, buffer.sequences(20, 64, np.random.default_rng(1)), ks=(1, 5, 20))
    print("k-step errors:", errors)
    latent = [errors[k]["latent_mse"] for k in (1, 5, 20)]
    reward = [errors[k]["reward_mae"] for k in (1, 5, 20)]
    assert np.all(np.isfinite(latent + reward))
    assert latent[0] < latent[1] < latent[2]
    assert reward[0] < reward[2]
    with pytest.raises(UserError, match="1..20"):
        k_step_error(model, params, buffer.sequences(20, 4, np.random.default_rng(1)), ks=(1, 50))


def test_world_model_checkpoint_round_trip(trained, tmp_path):
    buffer, params, _ = trained
    model = WorldModel(CONFIG, buffer.obs_size, buffer.cond_size)
    save_world_model(tmp_path, model, params)
    loaded_model, loaded, _ = load_world_model(tmp_path)
    assert loaded_model == model
    obs = buffer.sample(8, 1, np.random.default_rng(2))["obs"][:, 0]
    np.testing.assert_allclose(model.encode(params, obs), loaded_model.encode(loaded, obs), atol=1e-6)


def labelled_buffer(capacity, lengths, rng) -> ReplayBuffer:
    """Episodes whose observations record (episode index, step index), to check windows."""
    buffer = ReplayBuffer(capacity, obs_size=2, cond_size=1)
    for e, steps in enumerate(lengths):
        obs = np.stack([np.full(steps + 1, e), np.arange(steps + 1)], axis=1)
        buffer.add_episode(obs, rng.normal(size=(steps, 1)), rng.normal(size=steps), terminated=bool(e % 2))
    return buffer


@pytest.mark.parametrize("capacity", [10_000, 97])  # 97 wraps around and overwrites old episodes
def test_buffer_never_samples_across_episodes(capacity):
    rng = np.random.default_rng(0)
    buffer = labelled_buffer(capacity, rng.integers(1, 12, size=60), rng)
    horizon = 4
    batch = buffer.sample(2000, horizon, rng)
    assert batch["obs"].shape == (2000, horizon + 1, 2) and batch["cond"].shape == (2000, horizon, 1)
    episode, step = batch["obs"][..., 0], batch["obs"][..., 1]
    assert np.all(episode == episode[:, :1])
    np.testing.assert_array_equal(step - step[:, :1], np.broadcast_to(np.arange(horizon + 1), step.shape))
    # A terminated transition can only be the last of its window's steps.
    assert not batch["terminated"][:, :-1].any()


def test_buffer_refuses_impossible_windows():
    buffer = labelled_buffer(100, [2, 3], np.random.default_rng(0))
    with pytest.raises(UserError, match="lower the horizon"):
        buffer.sample(4, 5, np.random.default_rng(0))
    with pytest.raises(UserError, match="non-finite"):
        buffer.add_episode(np.full((3, 2), np.nan), np.zeros((2, 1)), np.zeros(2))


def test_buffer_splits_rollouts_at_done():
    steps, count = 6, 2
    obs = np.arange(steps * count * 2, dtype=np.float32).reshape(steps, count, 2)
    done = np.zeros((steps, count), bool)
    done[2, 0] = True
    buffer = ReplayBuffer(100, 2, 1)
    buffer.add_rollout(obs, np.zeros((steps, count, 1)), np.ones((steps, count)), obs + 0.5, done, done)
    assert buffer.next_episode == 3  # simulation 0 cut once, plus simulation 1 whole
    assert buffer.num_transitions == steps * count
    assert buffer.valid_starts(4).size == 3 + 0  # only simulation 1 (6 steps) holds 4-step windows


def test_buffer_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    buffer = labelled_buffer(97, rng.integers(1, 12, size=30), rng)
    path = buffer.save(tmp_path / "buffer.npz")
    assert not list(tmp_path.glob(".*tmp"))
    loaded = ReplayBuffer.load(path)
    for name in ("obs", "cond", "reward", "terminated", "last", "episode"):
        np.testing.assert_array_equal(getattr(buffer, name), getattr(loaded, name))
    a = buffer.sample(16, 3, np.random.default_rng(5))
    b = loaded.sample(16, 3, np.random.default_rng(5))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    with pytest.raises(UserError, match="cannot read"):
        ReplayBuffer.load(tmp_path / "absent.npz")


def test_impossible_configs_say_what_to_change():
    with pytest.raises(UserError, match="use latent_size=16"):
        WorldModelConfig(latent_size=20, simnorm_group=8)
    with pytest.raises(UserError, match="target_encoder"):
        WorldModelConfig(target_encoder="momentum")
    assert hash(WorldModelConfig(hidden=[64, 64])) == hash(WorldModelConfig(hidden=(64, 64)))
