"""The model cards (experts/README.md, router/README.md) are generated from the artifacts and kept current."""

import json
import shutil
import subprocess
import sys

from metaworld_x.cards import render, stale, write
from metaworld_x.paths import PROJECT_DIR


def test_the_shipped_cards_match_their_artifacts():
    """A card that differs from what its folder's metadata gives now is stale: regenerate, do not edit."""
    before = {path: path.read_text() for path in render(PROJECT_DIR)}
    out_of_date = stale(PROJECT_DIR)
    assert not out_of_date, f"stale model cards {out_of_date}: run python scripts/make_cards.py"
    assert {path: path.read_text() for path in before} == before, "checking must not write"


def _small_project(tmp_path):
    """A project with one expert and two routers copied from the shipped ones (binary files left out)."""
    (tmp_path / "experts" / "walk").mkdir(parents=True)
    for name in ("metrics.json", "spec.json", "policy.json"):
        shutil.copy(PROJECT_DIR / "experts" / "walk" / name, tmp_path / "experts" / "walk" / name)
    (tmp_path / "assets" / "motions").mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "assets" / "motions" / "walk.npz", tmp_path / "assets" / "motions" / "walk.npz")
    (tmp_path / "router" / "stand").mkdir(parents=True)
    for name in ("metrics.json", "router.json"):
        shutil.copy(PROJECT_DIR / "router" / "stand" / name, tmp_path / "router" / "stand" / name)
    return tmp_path


def test_a_new_router_folder_gets_a_card_with_no_code_change(tmp_path):
    """A router over every task, its metrics thinner than a task router's, is carded like the others."""
    project = _small_project(tmp_path)
    metrics = json.loads((project / "router" / "stand" / "metrics.json").read_text())
    metrics = {"instruction": "walk to the chair, then sit down", "machine": "a test machine",
               "selected": metrics["selected"], "evals": metrics["evals"]}
    (project / "router" / "all_tasks").mkdir()
    (project / "router" / "all_tasks" / "metrics.json").write_text(json.dumps(metrics))
    router = json.loads((project / "router" / "stand" / "router.json").read_text())
    (project / "router" / "all_tasks" / "router.json").write_text(json.dumps({**router, "task": "all_tasks"}))

    text = render(project)[project / "router" / "README.md"]
    assert "## all_tasks" in text and "## stand" in text
    assert "walk to the chair, then sit down" in text and "a test machine" in text
    assert "metaworld-x train router --task all_tasks" in text


def test_write_makes_the_cards_current_and_check_fails_on_a_stale_one(tmp_path):
    project = _small_project(tmp_path)
    assert len(stale(project)) == 2
    assert sorted(write(project)) == sorted(render(project))
    assert stale(project) == [] and write(project) == []
    card = project / "experts" / "README.md"
    assert "## walk" in card.read_text() and "metaworld-x train expert walk" in card.read_text()
    assert "MIT" in card.read_text(), "the clip's licence comes from its metadata"

    check = [sys.executable, str(PROJECT_DIR / "scripts" / "make_cards.py"), "--check", "--project-dir", str(project)]
    assert subprocess.run(check, capture_output=True).returncode == 0
    metrics = json.loads((project / "experts" / "walk" / "metrics.json").read_text())
    metrics["success"] = 7
    (project / "experts" / "walk" / "metrics.json").write_text(json.dumps(metrics))
    result = subprocess.run(check, capture_output=True, text=True)
    assert result.returncode == 1 and "experts/README.md" in result.stdout
    assert "| 7/10 |" not in card.read_text(), "--check writes nothing"


def test_the_robustness_table_has_a_row_per_installed_expert_and_says_what_was_not_measured():
    from metaworld_x.cards.experts import robustness_section

    cell = {"success": 9, "episodes": 10, "falls": 1}
    audit = {"seed": 0, "episodes": 10, "machine": "a test machine", "commands": {"clip": "audit --max-push"},
             "suites": {"none": "nominal", "push": "shoves", "all": "shoves; noise"},
             "experts": {"walk": {s: {"clip": cell, "home": {**cell, "success": 7}} for s in ("none", "push", "all")}},
             "max_push_m_s": {"clip": {"walk": {"survives": 0.5, "fails": 0.55}}}}
    lines = robustness_section(audit, ["turn", "walk"]).splitlines()
    assert "| walk | 9/10 · home 7/10 | 9/10 · home 7/10 | 9/10 · home 7/10 | 0.50 m/s |" in lines
    assert "| turn | not measured | not measured | not measured | |" in lines
    assert any("`all`: all of these at once" in line and "`audit --max-push` (clip)" in line for line in lines)


def test_an_expert_that_only_takes_over_in_place_is_carded_from_its_handover_not_from_home(tmp_path):
    """rise starts where sit leaves the robot, never at home: its home column is its handover figure, and its
    limits say why, not that it was never evaluated from home."""
    from metaworld_x.cards.experts import expert_card, experts_readme

    project = _small_project(tmp_path)
    folder = project / "experts" / "walk"
    spec = json.loads((folder / "spec.json").read_text())
    spec["tracking"] = {**spec.get("tracking", {}), "handover_clip": "sit", "handover_in_place": True}
    (folder / "spec.json").write_text(json.dumps(spec))
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics.update(from_home=None, from_start=None, from_handover={"success": 8, "episodes": 10, "falls": 1})
    (folder / "metrics.json").write_text(json.dumps(metrics))

    table_row = next(line for line in experts_readme(project / "experts", project / "assets" / "motions").splitlines()
                     if line.startswith("| [walk]"))
    assert table_row.split(" | ")[2] == "8/10"
    card = expert_card(folder, project / "assets" / "motions")
    assert "Starts only where `sit` leaves the robot" in card
    assert "Not evaluated from the home pose" not in card
