"""Experts on the real cpu backend: exact resume, shipping and evaluation on tiny runs (the shipped library: test_shipped_experts.py)."""

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.experts.specs import expert_spec
from metaworld_x.experts.training import evaluate_expert, ship_expert, train_expert
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.training import checkpoint

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from no_training import act_without_training  # noqa: E402

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")

TINY = dict(num_envs=8, unroll_length=4, num_minibatches=2, num_epochs=1, eval_every=0, checkpoint_every=2,
            policy_hidden=(16,), value_hidden=(16,))


def test_resume_continues_bit_for_bit_on_the_cpu_backend(tmp_path):
    # walk's spec has home starts, whose resets come often in this tiny run: a reset's first observation once
    # held another simulation's foot and actuator forces, and two of three resumed runs differed by ~1e-3.
    assert expert_spec("walk").tracking["home_start_fraction"] > 0

    def walk(iterations):
        return expert_spec("walk", total_env_steps=8 * 4 * iterations, **TINY)

    spec = walk(4)
    full = train_expert(spec, tmp_path / "full", progress=False)
    killed = walk(3)
    train_expert(killed, tmp_path / "killed", progress=False)
    # the run "died" after its checkpoint at iteration 2: drop the one written at its end
    shutil.rmtree(checkpoint.latest(tmp_path / "killed" / "checkpoints"))
    resumed = train_expert(spec, tmp_path / "killed", resume=True, progress=False)
    for a, b in zip(jax.tree_util.tree_leaves(full.state), jax.tree_util.tree_leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_shipped_expert_loads_without_training_code_and_evaluates(tmp_path):
    # stand's own episodes last 1000 steps; 100 keep the evaluations below short
    spec = replace(expert_spec("stand", total_env_steps=8 * 4 * 2, **TINY), eval_episode_length=100)
    result = train_expert(spec, tmp_path / "run", progress=False)
    out = ship_expert(spec, result, tmp_path / "stand", video=False)
    for name in ("policy.json", "policy.msgpack", "policy.onnx", "spec.json", "metrics.json"):
        assert (out / name).is_file(), name
    # the shipped folder loads and acts where importing metaworld_x.training fails, as the training run's policy
    from metaworld_x.experts.policy import act, from_training

    obs = np.random.default_rng(0).normal(size=(4, int(result.state.normalizer.mean["state"].shape[-1])))
    fenced, record = act_without_training(out, obs)
    trained = act(from_training(result.state.params.policy, result.state.normalizer), obs.astype(np.float32))
    np.testing.assert_allclose(fenced, np.asarray(trained), atol=1e-6)
    assert record["training_modules"] == []
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["episodes"] == 10 and 0 <= metrics["success"] <= 10
    # where λ ended, for a fine-tune from this folder to start it there
    assert metrics["training"]["multiplier"] == pytest.approx(float(result.state.multiplier))
    again = evaluate_expert(out, seed=0)
    assert again["success"] == metrics["success"]
    assert again["task_return"] == pytest.approx(metrics["task_return"], rel=1e-5)
    # `eval expert --episodes 3 --steps 5`: every part of the evaluation runs that many episodes, the goals
    # scale, and every episode, from the clip and from home, lasts at most 5 steps
    few = evaluate_expert(out, seed=0, episodes=3, steps=5)
    assert few["episodes"] == 3 and few["from_home"]["episodes"] == 3 and 0 <= few["success"] <= 3
    assert any("/3 < 10/10" in phrase for phrase in spec.shortfalls({**few, "success": 2}))
    assert few["episode_length"] <= 5 and few["from_home"]["episode_length"] <= 5
    assert metrics["episode_length"] > 5  # the spec's own episodes run longer
    with pytest.raises(UserError, match="at least 1 step"):
        evaluate_expert(out, seed=0, steps=0)
    # a spec's own evaluation length (crawl's, HumanoidBench's 1000 steps) is the default; --steps still wins.
    # Both run 3 episodes of 5 steps, the envs of `few`, which jax's cache serves without compiling again.
    own = evaluate_expert(out, spec=replace(spec, eval_episode_length=5), seed=0, episodes=3)
    assert own["episode_length"] <= 5 and own["from_home"]["episode_length"] <= 5
    longer = evaluate_expert(out, spec=replace(spec, eval_episode_length=7), seed=0, episodes=3, steps=5)
    assert longer["episode_length"] <= 5 and longer["from_home"]["episode_length"] <= 5
    with pytest.raises(UserError, match="eval_episode_length"):
        replace(spec, eval_episode_length=0)


def test_eval_expert_refuses_fewer_than_one_episode():
    from metaworld_x.cli.eval import EvalExpert

    with pytest.raises(UserError, match="--episodes must be at least 1"):
        EvalExpert(skill="stand", episodes=0).run()


def test_missing_expert_says_which_command_trains_it(tmp_path):
    with pytest.raises(UserError, match="metaworld-x train expert walk"):
        evaluate_expert(tmp_path / "walk")


def test_the_periodic_evaluation_runs_whole_episodes_so_that_success_can_be_reached():
    from metaworld_x.experts.environment import expert_task
    from metaworld_x.experts.specs import EXPERTS

    for skill, spec in EXPERTS.items():
        length = expert_task(spec).config.episode_length
        assert spec.ppo.eval_steps == length, f"{skill}: evaluates {spec.ppo.eval_steps} of {length} steps"
    assert expert_spec("carry", num_envs=8).ppo.eval_steps == EXPERTS["carry"].ppo.eval_steps
    with pytest.raises(UserError, match="episode_length instead of eval_steps"):
        expert_spec("walk", eval_steps=100)


def test_the_train_command_passes_its_overrides_to_the_run_and_counts_its_setup(tmp_path):
    from metaworld_x.cli import main

    assert main(["train", "expert", "walk", "--num-envs", "8", "--unroll-length", "4", "--num-minibatches", "2",
                   "--total-env-steps", str(8 * 4 * 2), "--eval-every", "0", "--run-dir", str(tmp_path / "run"),
                   "--no-ship"]) == 0
    meta = checkpoint.read_meta(checkpoint.latest(tmp_path / "run" / "checkpoints"))
    config = meta["config"]
    assert (config["num_envs"], config["unroll_length"], config["num_minibatches"]) == (8, 4, 2)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [row["env_steps"] for row in rows] == [32, 64]
    # the command's imports and set-up came before the loop's first iteration
    assert all(row["perf/setup_s"] > 0 for row in rows) and rows[0]["perf/setup_s"] == rows[1]["perf/setup_s"]
