"""scripts/time_to_goal.py: a run's checkpoints evaluated as `eval expert` does, with the wall clock at each."""

import json
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.experts.specs import expert_spec
from metaworld_x.experts.training import train_expert
from metaworld_x.paths import MOTIONS_DIR, PROJECT_DIR
from metaworld_x.experts.policy import from_checkpoint, from_training
from metaworld_x.training import checkpoint

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")

TINY = dict(num_envs=8, unroll_length=4, num_minibatches=2, num_epochs=1, eval_every=0, checkpoint_every=2,
            policy_hidden=(16,), value_hidden=(16,))
SETUP_S = 5.0  # the command "began" this long before train_expert was called


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("time_to_goal") / "walk"
    spec = expert_spec("walk", total_env_steps=8 * 4 * 4, **TINY)
    result = train_expert(spec, run_dir, progress=False, started_at=time.perf_counter() - SETUP_S)
    return run_dir, result


def test_every_iteration_logs_the_time_before_the_training_loop_and_checkpoints_name_the_machine(tiny_run):
    run_dir, _ = tiny_run
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    setups = {row["perf/setup_s"] for row in rows}
    assert len(setups) == 1 and SETUP_S <= setups.pop() < SETUP_S + 600  # one value per command, from its start
    meta = checkpoint.read_meta(checkpoint.latest(run_dir / "checkpoints"))
    assert "logical cores" in meta["machine"] and meta["expert"]["skill"] == "walk"


def test_a_checkpoints_policy_is_the_one_the_run_would_ship(tiny_run):
    run_dir, result = tiny_run
    loaded = from_checkpoint(checkpoint.latest(run_dir / "checkpoints"))
    shipped = from_training(result.state.params.policy, result.state.normalizer)
    for a, b in zip(jax.tree_util.tree_leaves(loaded), jax.tree_util.tree_leaves(shipped)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_checkpoint_without_a_policy_is_refused(tmp_path):
    path = checkpoint.save(tmp_path, 10, {"training": {"params": {}}}, {})
    with pytest.raises(UserError, match="holds no policy network"):
        from_checkpoint(path)


def test_the_table_has_a_row_per_checkpoint_with_the_clock_from_the_commands_start(tiny_run):
    run_dir, _ = tiny_run
    out = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "time_to_goal.py"), str(run_dir),
                          "--episodes", "2"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| 64") or line.startswith("| 128")]
    assert len(rows) == 2, out.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        from_start, in_loop = float(cells[1]), float(cells[2])
        assert from_start - in_loop >= SETUP_S / 60 - 1e-9  # the setup is counted, once
        assert cells[4].endswith("falls)") and "/2" in cells[4]
    # four iterations of eight worlds cannot walk
    assert "no checkpoint meets every goal" in out.stdout and "success 0/2" in out.stdout


def test_a_from_step_past_the_newest_checkpoint_says_what_there_is(tiny_run):
    run_dir, _ = tiny_run
    out = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts" / "time_to_goal.py"), str(run_dir),
                          "--from-step", "1000000"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "step_000000000128" in out.stderr and "lower --from-step" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_first_checkpoint_meeting_the_goals_and_whether_it_holds():
    sys.path.insert(0, str(PROJECT_DIR / "scripts"))
    try:
        from time_to_goal import first_meeting
    finally:
        sys.path.pop(0)
    assert first_meeting([False, False]) == (None, False)
    assert first_meeting([False, True, True]) == (1, True)
    assert first_meeting([True, False, True]) == (0, False)
