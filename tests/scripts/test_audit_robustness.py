"""scripts/audit_robustness.py: one row per expert, one column per perturbation suite, and the JSON it writes."""

import json
import re
import subprocess
import sys

import pytest

from metaworld_x.paths import EXPERTS_DIR, PROJECT_DIR

SCRIPT = PROJECT_DIR / "scripts" / "audit_robustness.py"
pytestmark = pytest.mark.skipif(not (EXPERTS_DIR / "walk" / "policy.json").is_file(), reason="no shipped walk expert")


def test_the_audit_prints_a_row_per_expert_a_column_per_suite_and_writes_the_json(tmp_path):
    out = tmp_path / "robustness.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--skills", "walk", "--suites", "none", "latency", "--episodes",
                          "2", "--steps", "12", "--starts", "clip", "home", "--max-push", "--push-start", "clip", "--push-limit", "0.4", "--json-out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert "| | none | latency | seconds |" in lines
    row = next(line for line in lines if line.startswith("| walk |")).split("|")
    cells = [c.strip() for c in row[2:4]]
    assert all(re.fullmatch(r"2/2, home [0-2]/2", c) for c in cells), cells  # 12 steps: too short to fall
    table = json.loads(out.read_text())
    assert table["complete"] and table["episodes"] == 2 and table["seed"] == 0
    assert set(table["experts"]["walk"]) == {"none", "latency"}
    assert table["experts"]["walk"]["latency"]["success"] == 2
    home = table["experts"]["walk"]["none"]["home"]
    assert home["episodes"] == 2 and home["falls"] == 0
    # no shove falls within 12 steps, so walk survives the bisection's top
    assert table["max_push_m_s"]["walk"] == {"survives": 0.4, "fails": None}
    assert "walk: 0.40 m/s or more" in run.stdout


def test_a_bad_suite_is_refused_in_one_line():
    run = subprocess.run([sys.executable, str(SCRIPT), "--suites", "wind"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and run.stderr.strip().splitlines() == [
        "error: unknown perturbation suite 'wind'; suites: none, push, model, latency, noise, all"]
