"""The gymnasium ids: registration on import, check_env, pickling, vector envs."""

import json
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
    code = (
        "import sys, time; t = time.perf_counter(); import metaworld_x, gymnasium; t = time.perf_counter() - t;"
        "heavy = [m for m in ('jax', 'mujoco', 'torch', 'transformers', 'brax') if m in sys.modules];"
        "ids = [i for i in gymnasium.registry if i.startswith('MetaWorldX/')];"
        "print(t, heavy, len(ids))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    seconds, heavy, count = float(out[0]), out[1], int(out[-1])
    assert heavy == "[]", f"import metaworld_x pulled in {out[1:-1]}"
    assert count == len(IDS) + len(TRACKING_IDS) == 20
    assert seconds < 1.0


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
    from metaworld_x.expert_specs import EXPERTS

    assert sorted(skill for _, skill in TRACKING_ENVIRONMENTS) == sorted(EXPERTS)
    for env_id, skill in TRACKING_ENVIRONMENTS:
        variant = tracking_task(skill).variant
        assert env_id.startswith("MetaWorldX/H1Hands-" if variant == "h1_hands" else "MetaWorldX/H1-"), (env_id, variant)


@pytest.mark.skipif(not (EXPERTS_DIR / "walk" / "policy.json").is_file(), reason="needs the shipped walk expert")
def test_readme_gymnasium_example_drives_the_walk_expert(monkeypatch, capsys):
    """The README's gymnasium example, run as written: a whole episode of the walk expert, then a vector env."""
    import re

    text = (PROJECT_DIR / "README.md").read_text()
    block = next(b for b in re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S) if "load_policy" in b)
    monkeypatch.chdir(PROJECT_DIR)  # the example loads experts/walk relative to the checkout
    exec(compile(block, "README.md (gymnasium example)", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "success True, ended by time_limit" in out, out
    policy = json.loads((EXPERTS_DIR / "walk" / "policy.json").read_text())
    assert f"vector env: (8, {policy['observation_size']})" in out, out
    env = gym.make("MetaWorldX/H1-WalkTracking-v0")  # compiled above already: cheap
    check_env(env.unwrapped)
    assert env.action_space.shape == (policy["action_size"],)
