"""scripts/audit_experts.py: the many-episode table of the shipped experts."""

import shutil
import subprocess
import sys

import pytest

from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR, PROJECT_DIR

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file() or not (EXPERTS_DIR / "walk").is_dir(),
                                reason="the shipped clip library or walk expert is missing")


def _rows(out: str) -> dict[str, list[str]]:
    table = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| skill")]
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table}


def test_the_audit_prints_one_row_per_expert_with_each_start_kind_counted_over_its_episodes():
    out = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "audit_experts.py"), "--episodes", "3",
                          "--skills", "walk", "door"], capture_output=True, text=True, timeout=600, check=True).stdout
    rows = _rows(out)
    assert set(rows) == {"walk", "door"}
    clip, home, first_frame, handover = rows["walk"][:4]
    assert clip.startswith(("0/3", "1/3", "2/3", "3/3")) and "/3 (" in home  # walk starts from home, and on its clip
    assert first_frame == "—" and handover == "—"
    assert rows["door"][1] == "—" and "/3 (" in rows["door"][2]  # door's props come from its clip: no home starts


def test_the_audit_refuses_an_expert_that_is_not_shipped_and_names_the_shipped_ones():
    run = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "audit_experts.py"), "--skills", "juggle"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and "no expert 'juggle'" in run.stderr and "walk" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_audit_reads_candidate_experts_from_another_folder_and_only_those(tmp_path):
    candidates = tmp_path / "candidates"
    shutil.copytree(EXPERTS_DIR / "walk", candidates / "walk", ignore=shutil.ignore_patterns("*.gif", "*.png"))
    out = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "audit_experts.py"), "--episodes", "2",
                          "--experts-dir", str(candidates)], capture_output=True, text=True, timeout=600,
                         check=True).stdout
    assert f"experts: {candidates}" in out
    rows = _rows(out)
    assert set(rows) == {"walk"} and "/2 (" in rows["walk"][0] and "/2 (" in rows["walk"][1]

    empty = tmp_path / "empty"
    empty.mkdir()
    run = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "audit_experts.py"), "--skills", "walk",
                          "--experts-dir", str(empty)], capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and f"no expert 'walk' in {empty}; there: none" in run.stderr
