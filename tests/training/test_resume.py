"""A run never loses work: it resumes bit for bit, stops at a deadline with a checkpoint, refuses a corrupted or
foreign checkpoint, and rolls back past a NaN."""

import dataclasses
import shutil
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.training import checkpoint
from metaworld_x.training.train import make_train

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from point_mass import SMALL, PointMassEnv, quiet  # noqa: E402





def test_resume_continues_bit_for_bit_on_cpu_backend(tmp_path):
    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    full = make_train(SMALL, env, quiet(run_dir=tmp_path / "full"))(jax.random.PRNGKey(1))
    killed = dataclasses.replace(SMALL, total_env_steps=SMALL.steps_per_iteration * 4)
    make_train(killed, env, quiet(run_dir=tmp_path / "killed"))(jax.random.PRNGKey(1))
    # drop the checkpoint written at the end, as if the run died after iteration 3's checkpoint
    shutil.rmtree(checkpoint.latest(tmp_path / "killed" / "checkpoints"))
    resumed = make_train(SMALL, env, quiet(run_dir=tmp_path / "killed", resume=True))(jax.random.PRNGKey(2))
    for a, b in zip(jax.tree_util.tree_leaves(full.state), jax.tree_util.tree_leaves(resumed.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [h["env_steps"] for h in resumed.history] == [h["env_steps"] for h in full.history]


def test_a_run_past_its_deadline_stops_with_a_checkpoint_and_resumes_to_the_end(tmp_path):
    env = lambda n: PointMassEnv(n, "cpu")  # noqa: E731
    stopped = make_train(SMALL, env, quiet(run_dir=tmp_path, stop_at=time.perf_counter()))(jax.random.PRNGKey(1))
    assert [h["env_steps"] for h in stopped.history] == [SMALL.steps_per_iteration]
    assert checkpoint.latest(tmp_path / "checkpoints").name.endswith(str(SMALL.steps_per_iteration))
    resumed = make_train(SMALL, env, quiet(run_dir=tmp_path, resume=True))(jax.random.PRNGKey(1))
    assert int(resumed.state.env_steps) == SMALL.num_iterations * SMALL.steps_per_iteration


def test_corrupted_or_wrong_version_checkpoint_is_refused(tmp_path):
    env = lambda n: PointMassEnv(n, "mjx")  # noqa: E731
    make_train(SMALL, env, quiet(run_dir=tmp_path))(jax.random.PRNGKey(0))
    path = checkpoint.latest(tmp_path / "checkpoints")
    intact = {}
    for each in checkpoint.listed(tmp_path / "checkpoints"):  # an older intact one would be resumed from instead
        state_file = each / checkpoint.STATE_FILE
        intact[state_file] = state_file.read_bytes()
        state_file.write_bytes(intact[state_file][:-10] + b"0123456789")
    with pytest.raises(UserError, match="corrupted"):
        make_train(SMALL, env, quiet(run_dir=tmp_path, resume=True))(jax.random.PRNGKey(0))
    meta = path / checkpoint.META_FILE
    meta.write_text(meta.read_text().replace('"format_version": 1', '"format_version": 99'))
    with pytest.raises(UserError, match="format version 99"):
        checkpoint.read_meta(path)
    other = dataclasses.replace(SMALL, policy_hidden=(8,))
    shutil.rmtree(path)
    for state_file, payload in intact.items():
        if state_file.parent.exists():
            state_file.write_bytes(payload)
    with pytest.raises(UserError, match="different config.*policy_hidden"):
        make_train(other, env, quiet(run_dir=tmp_path, resume=True))(jax.random.PRNGKey(0))


def test_a_checkpoint_from_before_a_setting_existed_resumes_only_at_its_default():
    from metaworld_x.training.start import check_same_config, config_record

    older = {"config": {k: v for k, v in config_record(SMALL).items() if k != "freeze_statistics"}}
    check_same_config(older, SMALL, Path("old"))  # it ran at the default, as SMALL does
    with pytest.raises(UserError, match="different config.*freeze_statistics"):
        check_same_config(older, dataclasses.replace(SMALL, freeze_statistics=True), Path("old"))
    # a setting added inside a nested config (the constraint's floor under λ) likewise
    record = config_record(SMALL)
    older = {"config": {**record, "constraint": {k: v for k, v in record["constraint"].items() if k != "min_multiplier"}}}
    check_same_config(older, SMALL, Path("old"))
    floored = dataclasses.replace(SMALL, constraint=dataclasses.replace(SMALL.constraint, min_multiplier=0.5))
    with pytest.raises(UserError, match="different config.*constraint"):
        check_same_config(older, floored, Path("old"))


def test_nan_guard_rolls_back_and_names_the_term(tmp_path):
    class Poisoned(PointMassEnv):
        calls = 0

        def step(self, state, action):
            state = super().step(state, action)
            Poisoned.calls += 1
            if Poisoned.calls == 20:  # one bad reward in the third iteration
                return state.replace(reward=state.reward.at[0].set(jnp.nan))
            return state

    result = make_train(SMALL, lambda n: Poisoned(n, "cpu"), quiet(run_dir=None))(jax.random.PRNGKey(0))
    assert len(result.rollbacks) == 1 and "reward" in result.rollbacks[0]
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree_util.tree_leaves(result.state.params))


def test_a_resumed_fine_tune_keeps_the_lineage_its_first_start_recorded(tmp_path):
    """A fine-tune resumed without --init-from ships as the fine-tune it is, not as trained from scratch."""
    import numpy as np

    from metaworld_x.experts.training import lineage
    from metaworld_x.training import checkpoint

    run = tmp_path / "run"
    assert lineage(run, resume=True, init_from=None) is None, "nothing to resume: from scratch"
    checkpoint.save(run / "checkpoints", 100, {"w": np.zeros(2)}, {"initialised_from": "experts/sit"})
    assert lineage(run, resume=True, init_from=None) == "experts/sit"
    assert lineage(run, resume=False, init_from=None) is None
    assert lineage(run, resume=True, init_from=tmp_path / "other") == str(tmp_path / "other")
