"""The gymnasium ids: registration on import, check_env, pickling, vector envs, and a shipped expert acting in them."""

import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import metaworld_x  # noqa: F401  (registers the ids)
from metaworld_x.envs.registration import IDS
from metaworld_x.envs.tracking_registration import TRACKING_ENVIRONMENTS, TRACKING_IDS
from metaworld_x.paths import EXPERTS_DIR, PROJECT_DIR

# gymnasium advises finite observation bounds; ours, like its MuJoCo envs', are unbounded
pytestmark = pytest.mark.filterwarnings("ignore:.*observation space (minimum|maximum) value is")


def test_import_registers_ids_without_heavy_imports():
    """What the import pulls in; how long it takes is measured by scripts/bench_import.py, not asserted here."""
    code = (
        "import sys; import metaworld_x, gymnasium;"
        "heavy = [m for m in ('jax', 'mujoco', 'torch', 'transformers', 'brax') if m in sys.modules];"
        "ids = [i for i in gymnasium.registry if i.startswith('MetaWorldX/')];"
        "print(heavy, len(ids))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    heavy, count = out[0], int(out[-1])
    assert heavy == "[]", f"import metaworld_x pulled in {out[:-1]}"
    assert count == len(IDS) + len(TRACKING_IDS) == 32


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_passes_check_env_and_reports_its_reward_terms(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    check_env(env.unwrapped)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        terms = [v for k, v in info.items() if k.startswith("reward/")]
        assert terms and reward == pytest.approx(float(sum(terms)), abs=1e-5)
        assert info["termination_reason"] in env.unwrapped._env.reason_names
    frame = env.render()
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 0
    env.close()


def test_env_pickles_and_the_copy_is_deterministic_with_the_original():
    env = gym.make("MetaWorldX/H1-Walk-v0").unwrapped
    copy = pickle.loads(pickle.dumps(env))
    action = np.full(19, 0.1, np.float32)
    a = env.reset(seed=3)[0], env.step(action)[0]
    b = copy.reset(seed=3)[0], copy.step(action)[0]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_time_limit_comes_from_the_registration():
    assert gym.spec("MetaWorldX/H1-Walk-v0").max_episode_steps == 1000
    assert gym.spec("MetaWorldX/H1Hands-Push-v0").max_episode_steps == 500


def test_bad_actions():
    env = gym.make("MetaWorldX/H1-Stand-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must have shape \(19,\), got \(18,\)"):
        env.step(np.zeros(18, np.float32))
    obs, reward, terminated, truncated, info = env.step(np.full(19, np.nan, np.float32))
    assert terminated and not truncated and info["termination_reason"] == "nonfinite_action"
    assert np.isfinite(obs).all() and reward == 0.0


def test_human_render_mode_without_display_falls_back_with_a_message(capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env = gym.make("MetaWorldX/H1-Stand-v0", render_mode="human")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert "no display" in capsys.readouterr().out
    env.close()


def test_make_vec_uses_one_batch_and_resets_done_worlds_in_the_same_step():
    envs = gym.make_vec("MetaWorldX/H1-Stand-v0", num_envs=3, max_episode_steps=2)
    assert envs.unwrapped._env.batch.nsim == 3
    obs, info = envs.reset(seed=0)
    assert obs.shape == (3, envs.single_observation_space.shape[0])
    for step in range(2):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    assert truncated.all() and not terminated.any() and info["_final_obs"].all()
    assert info["final_obs"].shape == obs.shape and not np.allclose(info["final_obs"], obs)
    terms = sum(v for k, v in info.items() if k.startswith("reward/"))
    np.testing.assert_allclose(reward, terms, atol=1e-5)
    envs.close()


# ---- the experts' tracking ids: what a shipped expert acts on -----------------------------


def test_tracking_ids_cover_every_expert_and_name_its_robot_variant():
    from metaworld_x.envs.tracking_gym import tracking_task
    from metaworld_x.experts.specs import EXPERTS

    assert sorted(skill for _, skill in TRACKING_ENVIRONMENTS) == sorted(EXPERTS)
    for env_id, skill in TRACKING_ENVIRONMENTS:
        variant = tracking_task(skill).variant
        assert env_id.startswith("MetaWorldX/H1Hands-" if variant == "h1_hands" else "MetaWorldX/H1-"), (env_id, variant)


needs_walk = pytest.mark.skipif(not (EXPERTS_DIR / "walk" / "policy.json").is_file(), reason="needs the shipped walk expert")


@needs_walk
def test_readme_gymnasium_example_drives_the_walk_expert(monkeypatch, capsys):
    """The README's gymnasium example, run as written: a whole H1-Walk-v0 episode of the walk expert, then a vector env."""
    import re

    text = (PROJECT_DIR / "README.md").read_text()
    block = next(b for b in re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S) if "ExpertAgent" in b)
    monkeypatch.chdir(PROJECT_DIR)
    exec(compile(block, "README.md (gymnasium example)", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    episode = re.search(r"return (\d+\.\d), walked (-?\d+\.\d) m, success True, ended by time_limit", out)
    assert episode, out  # 1000 steps up, and the walk task's bar (700) met
    assert float(episode[2]) > 10.0, out  # forward, at 0.5 m/s or more
    observation_size = gym.spec("MetaWorldX/H1-Walk-v0").make().observation_space.shape[0]
    assert f"vector env: (4, {observation_size})" in out, out


@needs_walk
def test_walk_expert_walks_in_a_vector_env_of_the_task_and_restarts_with_its_worlds():
    """Three worlds of H1-Walk-v0 under the walk expert: up and walking forward through a 100-step episode, at
    several times a random policy's reward; then the worlds restart, the agent's clocks with them, and they set
    off again as in the first episode."""

    envs = gym.make_vec("MetaWorldX/H1-Walk-v0", num_envs=3, max_episode_steps=100)
    agent = metaworld_x.ExpertAgent("walk", envs)
    obs, info = envs.reset(seed=1)
    agent.reset()
    rewards, restarts, start_x = [], [], info["qpos"][:, 0].copy()
    for step in range(130):
        obs, reward, terminated, truncated, info = envs.step(agent.act(obs, info))
        agent.reset(terminated | truncated)
        assert not terminated.any(), (step, info["termination_reason"])
        rewards.append(reward)
        restarts.append(truncated.any())
        if step == 98:
            walked = info["qpos"][:, 0] - start_x  # the last step before the restart
    assert np.flatnonzero(restarts).tolist() == [99]
    assert (walked > 1.0).all(), walked  # from standing, at about 0.9 m/s once at pace
    rewards = np.stack(rewards)  # [130, 3]

    envs.reset(seed=1)
    random_reward = np.mean([envs.step(envs.action_space.sample())[1] for _ in range(100)])
    assert rewards[:100].mean(axis=0).min() > 3 * random_reward, (rewards[:100].mean(axis=0), random_reward)
    # the second episode sets off like the first: with a clock left running, the expert would chase a clip 2 s ahead
    np.testing.assert_allclose(rewards[100:].mean(axis=0), rewards[:30].mean(axis=0), atol=0.05)


@needs_walk
def test_expert_agent_sees_what_the_router_shows_the_expert():
    """The agent's observation of a task env's state is the router scene's `expert/walk` for the same state."""
    import jax

    from metaworld_x.experts.environment import make_env

    agent = metaworld_x.ExpertAgent("walk", gym.make("MetaWorldX/H1-Walk-v0"))
    scene = make_env(agent.scene, 1, "cpu", nthread=1, auto_reset=False)
    state = scene.reset(jax.random.PRNGKey(2))
    agent.reset()
    for _ in range(4):
        physics = {"qpos": state.data.view.qpos, "qvel": state.data.view.qvel}
        np.testing.assert_allclose(agent.observe(state.obs["state"], physics), state.obs["expert/walk"][0], atol=1e-5)
        action = agent.act(state.obs["state"], physics) / agent.action_gain  # in the scene's units: the expert's own
        state = scene.step(state, action[None])


@needs_walk
def test_expert_agent_refuses_what_it_cannot_do_with_a_clear_error(tmp_path):
    from metaworld_x.errors import UserError

    env = gym.make("MetaWorldX/H1-Walk-v0")
    with pytest.raises(UserError, match="unknown expert 'dance'"):
        metaworld_x.ExpertAgent("dance", env)
    with pytest.raises(UserError, match="no trained expert 'walk'.*`metaworld-x train expert walk`"):
        metaworld_x.ExpertAgent("walk", env, experts_dir=tmp_path)
    with pytest.raises(UserError, match="needs a MetaWorld-X env"):
        metaworld_x.ExpertAgent("walk", gym.make("CartPole-v1"))
    # the expert moves its targets half a joint's half range per unit: an env that moves them a quarter cannot follow
    with pytest.raises(UserError, match="make the env with action_scale=0.5"):
        metaworld_x.ExpertAgent("walk", gym.make("MetaWorldX/H1-Walk-v0", action_scale=0.25))
