"""scripts/router_report.py tabulates what the routers' metrics.json record, and says which command makes one."""

import json
import subprocess
import sys

from metaworld_x.paths import PROJECT_DIR

SCRIPT = PROJECT_DIR / "scripts" / "router_report.py"


def _errors(latent: float, reward: float) -> dict:
    return {k: {"latent_mse": 0.1, "latent_mse_relative": latent * int(k), "reward_mae": reward * int(k)}
            for k in ("1", "5", "20")}


def _run(routers_dir):
    return subprocess.run([sys.executable, str(SCRIPT), "--routers-dir", str(routers_dir)], check=False,
                          capture_output=True, text=True, timeout=120, cwd=PROJECT_DIR)


def test_report_has_one_row_per_router_with_its_k_step_errors_success_and_time(tmp_path):
    metrics = {
        "task": "stand", "machine": "a test machine",
        "world_model": {"k_step_expert_data": _errors(0.1, 0.01), "k_step_after_finetune": None},
        "selected": {"success": 9, "episodes": 10, "return_mean": 812.4},
        "seconds": {"training_total": 150.0},
    }
    (tmp_path / "stand").mkdir()
    (tmp_path / "stand" / "metrics.json").write_text(json.dumps(metrics))
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| stand")]
    assert rows == ["| stand | 0.10 / 0.010 | 0.50 / 0.050 | 2.00 / 0.200 | - | - | - | 9/10 | 812 | 2.5 |"]
    assert "a test machine" in result.stdout


def test_a_folder_without_routers_names_the_command_that_trains_one(tmp_path):
    result = _run(tmp_path)
    assert result.returncode != 0
    assert "metaworld-x train router" in result.stderr
