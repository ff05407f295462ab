"""Checkpoints and resume never lose work: durable writes, a fall-back past a corrupted newest checkpoint, refusals
that keep the run's record, and pruning that keeps the newest and the best (tiny point-mass runs)."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.training import checkpoint
from metaworld_x.training.config import PPOConfig, RunOptions
from metaworld_x.training.runlog import HISTORY_FILE
from metaworld_x.training.train import make_train

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from point_mass import PointMassEnv  # noqa: E402

# one checkpoint per iteration of 32 steps; 3 iterations in all
TINY = PPOConfig(
    num_envs=8, unroll_length=4, num_minibatches=2, num_epochs=1, total_env_steps=8 * 4 * 3, eval_every=0,
    checkpoint_every=1, keep_checkpoints=0, policy_hidden=(8,), value_hidden=(8,),
)
STEP = TINY.steps_per_iteration


def _env(n):
    return PointMassEnv(n, "cpu")


def _train(run_dir, config=TINY, key=1, **kwargs):
    train = make_train(config, _env, RunOptions(run_dir=run_dir, progress=False, tensorboard=False, **kwargs))
    return train(jax.random.PRNGKey(key))


def _corrupt(path: Path) -> None:
    state_file = path / checkpoint.STATE_FILE
    state_file.write_bytes(state_file.read_bytes()[:-4] + b"\0\0\0\0")


def _steps(directory: Path) -> list[int]:
    return [checkpoint.read_meta(p)["step"] for p in checkpoint.listed(directory)]


def test_a_corrupted_newest_checkpoint_is_passed_over_for_the_one_before(tmp_path, capsys):
    full = _train(tmp_path / "full")
    _train(tmp_path / "killed", dataclasses.replace(TINY, total_env_steps=2 * STEP))
    folder = tmp_path / "killed" / "checkpoints"
    assert _steps(folder) == [STEP, 2 * STEP]
    _corrupt(checkpoint.latest(folder))
    assert checkpoint.newest_verified(folder)[0].name.endswith(str(STEP))
    # another key: a run that started afresh rather than from the checkpoint would differ from `full`
    resumed = _train(tmp_path / "killed", key=2, resume=True)
    assert "passing over it to an older checkpoint" in capsys.readouterr().out
    for a, b in zip(jax.tree_util.tree_leaves(full.state), jax.tree_util.tree_leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [h["env_steps"] for h in resumed.history] == [STEP, 2 * STEP, 3 * STEP]
    assert checkpoint.newest_verified(folder) == (checkpoint.latest(folder), [])  # the bad one was rewritten


def test_a_resume_with_nothing_usable_is_refused_and_keeps_the_metrics(tmp_path):
    _train(tmp_path, dataclasses.replace(TINY, total_env_steps=2 * STEP))
    metrics = (tmp_path / HISTORY_FILE).read_bytes()
    assert len(metrics.splitlines()) == 2
    for path in checkpoint.listed(tmp_path / "checkpoints"):
        _corrupt(path)
    with pytest.raises(UserError, match="nothing to resume.*none of its checkpoints verifies.*corrupted"):
        _train(tmp_path, resume=True)
    assert (tmp_path / HISTORY_FILE).read_bytes() == metrics
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / HISTORY_FILE).write_text('{"env_steps": 32}\n')
    with pytest.raises(UserError, match="nothing to resume.*holds no checkpoint"):
        _train(empty, resume=True)
    assert (empty / HISTORY_FILE).read_text() == '{"env_steps": 32}\n'


def test_a_fresh_run_in_a_folder_with_checkpoints_is_refused_unless_told_to_overwrite(tmp_path):
    _train(tmp_path, dataclasses.replace(TINY, total_env_steps=2 * STEP))
    metrics = (tmp_path / HISTORY_FILE).read_bytes()
    with pytest.raises(UserError, match="earlier run.*--resume.*--overwrite"):
        _train(tmp_path, dataclasses.replace(TINY, total_env_steps=STEP))
    assert (tmp_path / HISTORY_FILE).read_bytes() == metrics
    assert _steps(tmp_path / "checkpoints") == [STEP, 2 * STEP]
    _train(tmp_path, dataclasses.replace(TINY, total_env_steps=STEP), overwrite=True)
    # the old run's later checkpoint is gone, so a resume continues the new run and not the old one
    assert _steps(tmp_path / "checkpoints") == [STEP]
    assert len((tmp_path / HISTORY_FILE).read_text().splitlines()) == 1


def test_the_cli_refuses_a_fresh_run_in_a_folder_with_checkpoints_in_one_line(tmp_path):
    checkpoint.save(tmp_path / "checkpoints", 10, {"training": {}}, {})
    out = subprocess.run([sys.executable, "-m", "metaworld_x.cli", "train", "expert", "stand", "--run-dir",
                          str(tmp_path), "--no-ship"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr[-800:]
    assert out.stderr.strip().splitlines()[-1].startswith("error: ") and "--overwrite" in out.stderr
    assert _steps(tmp_path / "checkpoints") == [10]


def _scored(success: float, ret: float) -> dict:
    return {"evaluation": {"eval/success_rate": success, "eval/return": ret}}


def test_pruning_keeps_the_newest_checkpoints_and_the_best_evaluated_one(tmp_path):
    metas = {10: _scored(0.5, 10.0), 20: _scored(1.0, 5.0), 30: _scored(1.0, 2.0), 40: {"evaluation": {}},
             50: _scored(0.25, 90.0), 60: {}}
    for step, meta in metas.items():
        checkpoint.save(tmp_path, step, {"x": np.full(3, step)}, meta)
    assert checkpoint.best(tmp_path).name.endswith("20")  # success first, then the return
    assert checkpoint.prune(tmp_path, keep=0) == []
    removed = checkpoint.prune(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == ["step_000000000010", "step_000000000030", "step_000000000040"]
    assert _steps(tmp_path) == [20, 50, 60]


def test_a_run_keeps_its_newest_checkpoint_and_its_best_evaluated_one(tmp_path):
    # evaluated at iterations 2 and 4 only (every 2nd, and the last)
    config = dataclasses.replace(TINY, total_env_steps=4 * STEP, keep_checkpoints=1, eval_every=2,
                                 num_eval_envs=4, eval_steps=5)
    result = _train(tmp_path, config)
    evaluated = [(tuple(row[k] for k in checkpoint.RANKED_BY), row["env_steps"]) for row in result.history
                 if "eval/return" in row]
    assert [step for _, step in evaluated] == [2 * STEP, 4 * STEP]
    best = max(evaluated)[1]
    assert _steps(tmp_path / "checkpoints") == sorted({best, 4 * STEP})


def test_stale_temporary_folders_are_removed_and_a_save_is_flushed_to_disk(tmp_path, monkeypatch):
    stale = [tmp_path / f"{checkpoint.TMP_PREFIX}000000000010_{2**31 - 1}", tmp_path / ".step_000000000010.old"]
    ours = tmp_path / f"{checkpoint.TMP_PREFIX}000000000030_{os.getpid()}"
    for folder in (*stale, ours):
        folder.mkdir()
        (folder / checkpoint.STATE_FILE).write_bytes(b"half")
    synced = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    path = checkpoint.save(tmp_path, 20, {"x": np.zeros(2)}, {})
    assert not any(p.exists() for p in stale) and ours.exists()  # a writer's own folder is its to finish
    # the files, the folder they were written in, and the folder the checkpoint was renamed into
    written = {Path(p).name for p in synced}
    assert {checkpoint.STATE_FILE, checkpoint.META_FILE, tmp_path.name} <= written
    assert any(f"{checkpoint.TMP_PREFIX}000000000020" in p for p in synced)
    assert checkpoint.newest_verified(tmp_path) == (path, [])
