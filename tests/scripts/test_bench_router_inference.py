"""scripts/bench_router_inference.py runs on a few calls and prints its one table (timings are not asserted)."""

import subprocess
import sys

import pytest

from metaworld_x.paths import PROJECT_DIR, ROUTER_DIR


@pytest.mark.slow
def test_bench_prints_the_router_control_step_and_mppi_rows_beside_their_goals():
    if not (ROUTER_DIR / "stand" / "world_model" / "world_model.json").is_file():
        pytest.skip("no shipped router/stand with its world model")
    result = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "bench_router_inference.py"), "--calls", "3",
                             "--plans", "1"], check=False, capture_output=True, text=True, timeout=300, cwd=PROJECT_DIR)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# Router inference, one robot on the CPU: ") and "logical cores" in lines[0]
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| what")]
    names = [row.split(" | ")[0] for row in rows]
    assert len(rows) == 3 and names[0] == "| router network alone (jitted, device arrays in and out)"
    assert names[1].startswith("| control step: router + ") and names[2].startswith("| one MPPI plan: horizon ")
    assert rows[0].endswith("| 3 | ≤ 1 ms |") and rows[2].split(" | ")[3] == "1"
