"""The stop expert's task and starts: a standing robot has stopped, a moving one has not; its training hands it the
walk's states with the stop clip from its first, walking, frame."""

import sys
from pathlib import Path

import numpy as np
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.envs.tasks import make_task
from metaworld_x.experts.environment import expert_task
from metaworld_x.experts.specs import expert_spec
from metaworld_x.paths import MOTIONS_DIR

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests folder, with the helper modules
from handover_starts import handover_starts  # noqa: E402

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk_stop.npz").is_file(), reason="the shipped clip library is missing")


def test_stop_succeeds_only_on_its_feet_and_still_and_pays_more_the_slower():
    import mujoco
    from mujoco import mjx

    from metaworld_x.envs.physics_view import view_from_mjx

    task = make_task("stop")
    compiled = CompiledTask.build(task)
    data = mujoco.MjData(compiled.model)
    paid = []
    for speed in (0.0, 0.1, 0.5, 1.0):
        mujoco.mj_resetDataKeyframe(compiled.model, data, 0)  # the home pose, standing
        data.qvel[0] = speed  # the whole robot moving forward
        mujoco.mj_forward(compiled.model, data)
        view = view_from_mjx(mjx.put_data(compiled.model, data), compiled.statics.layout)
        assert bool(task.success(view, {})) is (speed < task.config.still_speed), speed
        paid.append(float(task._reward_stopped(view, {}, None)))
    assert paid[0] == paid[1] > paid[2] > paid[3], paid


def test_stop_handover_starts_begin_in_the_walk_with_the_stop_clip_at_its_first_frame():
    task = expert_task(expert_spec("stop"))
    assert not task.config.plays_in_place, "the clip is re-anchored onto the robot, as a router runs it"
    starts = handover_starts(task)
    for info, state, walk in starts:
        np.testing.assert_allclose(np.asarray(state.qpos[7:]), np.asarray(walk.joint_pos), atol=0.05)  # reset noise
        assert float(np.linalg.norm(np.asarray(state.qvel[:2]))) > 0.5, "handed over at walking speed"
        assert float(info["ref_time"]) == 0.0
    assert len(starts) >= 2
