"""Experts on the real cpu backend: exact resume, shipping, evaluation, shipped artifacts."""

import json
import shutil

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.expert_specs import EXPERTS, expert_spec
from metaworld_x.expert_training import evaluate_expert, ship_expert, train_expert
from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR
from metaworld_x.training import checkpoint

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")

# Experts shipped although they miss a goal, with why; listed in experts/README.md too.
BELOW_GOAL: dict[str, str] = {}

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
    spec = expert_spec("stand", total_env_steps=8 * 4 * 2, **TINY)
    result = train_expert(spec, tmp_path / "run", progress=False)
    out = ship_expert(spec, result, tmp_path / "stand", video=False)
    for name in ("policy.json", "policy.msgpack", "policy.onnx", "spec.json", "metrics.json"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["episodes"] == 10 and 0 <= metrics["success"] <= 10
    again = evaluate_expert(out, seed=0)
    assert again["success"] == metrics["success"]
    assert again["task_return"] == pytest.approx(metrics["task_return"], rel=1e-5)


def test_missing_expert_says_which_command_trains_it(tmp_path):
    with pytest.raises(UserError, match="metaworld-x train expert walk"):
        evaluate_expert(tmp_path / "walk")


@pytest.mark.parametrize("skill", sorted(EXPERTS))
def test_every_shipped_expert_meets_its_recorded_metrics(skill):
    directory = EXPERTS_DIR / skill
    if not (directory / "metrics.json").is_file():
        pytest.skip(f"expert {skill!r} is not shipped yet (train it with `metaworld-x train expert {skill}`)")
    recorded = json.loads((directory / "metrics.json").read_text())
    fresh = evaluate_expert(directory, seed=recorded["seed"])
    assert fresh["success"] == recorded["success"]
    # 1 %: a 500-step closed-loop rollout amplifies last-bit float differences between machines and library
    # builds (walk: 416.65 here on 1 Dec 2026 against 416.16 recorded, 0.12 %); the success counts and the
    # goals below are the real checks.
    assert fresh["task_return"] == pytest.approx(recorded["task_return"], rel=1e-2)
    if recorded.get("from_home") is not None:  # recorded since home starts exist
        assert fresh["from_home"]["success"] == recorded["from_home"]["success"]
    if recorded.get("from_start") is not None:  # recorded since session 10 for experts that cannot start from home
        assert fresh["from_start"]["success"] == recorded["from_start"]["success"]
    assert np.isfinite(fresh["tracking_error_m"]) and np.isfinite(fresh["task_return"])
    missed = EXPERTS[skill].shortfalls(fresh)
    if skill in BELOW_GOAL:  # test_below_goal_list_names_only_experts_that_miss keeps this list honest
        pytest.xfail(f"{skill} is shipped below its goals ({BELOW_GOAL[skill]}): {'; '.join(missed)}")
    assert not missed, f"shipped expert {skill} misses its goals: {'; '.join(missed)}"


def test_below_goal_list_names_only_experts_that_miss():
    """A shipped expert listed in BELOW_GOAL must really miss a goal, so the list cannot go stale."""
    for skill, reason in BELOW_GOAL.items():
        directory = EXPERTS_DIR / skill
        if not (directory / "metrics.json").is_file():
            continue
        recorded = json.loads((directory / "metrics.json").read_text())
        assert EXPERTS[skill].shortfalls(recorded), f"{skill} now meets its goals: remove it from BELOW_GOAL"


@pytest.mark.parametrize("skill", [s for s, spec in EXPERTS.items() if spec.objective])
def test_no_objective_reward_term_outweighs_the_imitation_reward(skill):
    """Inside a tracking task no term of the objective may be larger than the whole imitation reward (at most 1 a
    step): push's HumanoidBench bonus of 1000, paid once where success ends the episode, was paid at every step on
    the marker under tracking (which does not end on it), and its first run learned nothing else."""
    from dataclasses import asdict

    from metaworld_x.envs.expert import expert_task

    scales = asdict(expert_task(EXPERTS[skill]).objective.config.rewards)
    too_big = {name: scale for name, scale in scales.items() if abs(scale) > 1.0}
    assert not too_big, f"{skill}: objective reward scales {too_big} outweigh the imitation reward; override them in its spec"


def test_a_prop_expert_that_fails_its_whole_task_from_the_first_frame_misses_its_goal():
    """Late starts of a prop task begin partly done (past the door), so success there alone is not enough."""
    spec = EXPERTS["door"]
    on_clip = {"success": 10, "episodes": 10, "tracking_error_m": 0.03, "task_return_per_1000_steps": 850.0}
    assert spec.shortfalls({**on_clip, "from_start": {"success": 9, "episodes": 10}}) == []
    missed = spec.shortfalls({**on_clip, "from_start": {"success": 5, "episodes": 10}})
    assert missed == ["success from the clip's first frame 5/10 < 9/10"]
