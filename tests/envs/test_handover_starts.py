"""Handover starts: a share of tracking episodes begins in another clip's state, as a router hands an expert the
robot that another expert has been driving (stand, after carry has set the box down)."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.experts.environment import expert_task
from metaworld_x.envs.observations import twist_yaw
from metaworld_x.envs.reference import frame_at
from metaworld_x.envs.task import with_overrides
from metaworld_x.envs.tasks.tracking import Tracking, TrackingConfig
from metaworld_x.errors import UserError
from metaworld_x.experts.specs import expert_spec
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import JOINT_NAMES

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "pickup_carry_start.npz").is_file(),
                                reason="the shipped clip library is missing")

HANDOVER = {"handover_clip": "pickup_carry_start", "handover_window": (6.0, 7.3)}


def _stand(**tracking) -> Tracking:
    """The stand expert's task with `tracking` settings changed."""
    task = expert_task(expert_spec("stand"))
    return Tracking(with_overrides(task.config, tracking), objective=task.objective)


def test_a_handover_start_begins_in_the_other_clips_state_on_the_home_spot_and_runs_as_a_home_start():
    task = _stand(**HANDOVER, home_start_fraction=0.0, handover_start_fraction=1.0, reset_noise=0.0)
    home = CompiledTask.build(task).statics.home
    n = len(JOINT_NAMES)
    for seed in range(4):
        key = jax.random.PRNGKey(seed)
        info = task.reset_info(key)
        start = float(info["handover_time"])
        assert 6.0 <= start <= 7.3
        # the reference is the stand clip from its home start, re-anchored, as for a home start
        assert bool(info["from_home"]) and int(info["clip"]) == 0
        assert float(info["ref_time"]) == pytest.approx(task.home_start_time(np.asarray(home.qpos[7 : 7 + n])))
        state = task.reset_physics(key, home, info)
        carry = frame_at(task.handover_reference, 0, start)
        np.testing.assert_allclose(np.asarray(state.qpos[7 : 7 + n]), np.asarray(carry.joint_pos), atol=1e-6)
        np.testing.assert_allclose(np.asarray(state.qvel[6 : 6 + n]), np.asarray(carry.joint_vel), atol=1e-6)
        assert float(state.qpos[2]) == pytest.approx(float(carry.root_pos[2]), abs=1e-6)  # the clip's height
        np.testing.assert_allclose(np.asarray(state.qpos[:2]), np.asarray(home.qpos[:2]), atol=1e-6)  # home's spot
        assert float(twist_yaw(state.qpos[3:7])) == pytest.approx(float(twist_yaw(home.qpos[3:7])), abs=1e-5)
        # far from the stand clip's pose: the arms are out over the table, the hips bent
        assert np.abs(np.asarray(carry.joint_pos) - np.asarray(home.qpos[7 : 7 + n])).max() > 0.3
    # a start on the clip (`clip_info`, no handover time) is a plain reference-state start
    on_clip = task.reset_physics(jax.random.PRNGKey(0), home, task.clip_info(1, 0.3))
    np.testing.assert_allclose(np.asarray(on_clip.qpos[7 : 7 + n]), np.asarray(frame_at(task.reference, 1, 0.3).joint_pos),
                               atol=1e-6)


def test_starts_split_between_clip_home_and_handover_as_configured():
    task = _stand(**HANDOVER, home_start_fraction=0.3, handover_start_fraction=0.3)
    infos = jax.vmap(task.reset_info)(jax.random.split(jax.random.PRNGKey(0), 4000))
    handed_over = np.asarray(infos["handover_time"]) >= 0
    from_home = np.asarray(infos["from_home"])
    assert handed_over.mean() == pytest.approx(0.3, abs=0.03)
    assert (from_home & ~handed_over).mean() == pytest.approx(0.3, abs=0.03)
    assert not (handed_over & ~from_home).any(), "every handover start runs as a home start"
    times = np.asarray(infos["handover_time"])[handed_over]
    assert times.min() >= 6.0 and times.max() <= 7.3 and times.std() > 0.2


def test_handover_starts_take_their_share_from_clip_starts_and_leave_the_other_draws_as_they_were():
    # one uniform draw decides home, handover or clip, and the handover time folds a key out of it rather than
    # split one more: adding handover starts changes no clip start time and no home start (and a task without
    # them draws what it drew before they existed)
    plain = _stand(home_start_fraction=0.3, handover_start_fraction=0.0)
    other = _stand(**HANDOVER, home_start_fraction=0.3, handover_start_fraction=0.3)
    keys = jax.random.split(jax.random.PRNGKey(1), 512)
    a, b = jax.vmap(plain.reset_info)(keys), jax.vmap(other.reset_info)(keys)
    assert "handover_time" not in a
    on_clip = ~np.asarray(b["from_home"])
    for name in ("clip", "ref_time"):
        np.testing.assert_array_equal(np.asarray(a[name])[on_clip], np.asarray(b[name])[on_clip])
    home_in_plain = np.asarray(a["from_home"])
    assert np.asarray(b["from_home"])[home_in_plain].all()
    assert (np.asarray(b["handover_time"])[home_in_plain] < 0).all(), "the plain task's home starts stay home starts"
    assert (np.asarray(b["handover_time"]) >= 0).sum() > 100


def test_bad_handover_settings_are_user_errors():
    with pytest.raises(UserError, match="needs handover_clip"):
        TrackingConfig(handover_start_fraction=0.2)
    with pytest.raises(UserError, match=r"1 - home_start_fraction"):
        TrackingConfig(**HANDOVER, home_start_fraction=0.6, handover_start_fraction=0.5)
    with pytest.raises(UserError, match="0 <= start <= end"):
        TrackingConfig(handover_clip="pickup_carry_start", handover_window=(7.0, 6.0), handover_start_fraction=0.2)
    with pytest.raises(UserError, match="set home_start_time"):
        TrackingConfig(**HANDOVER, handover_start_fraction=0.2, clip_props=True)
    with pytest.raises(UserError, match="each >= 0"):
        TrackingConfig(**HANDOVER, handover_start_fraction=0.2, handover_offset=(0.1, -0.1, 0.0))
    with pytest.raises(UserError, match=r"\(dx, dy, dyaw\)"):
        TrackingConfig(**HANDOVER, handover_start_fraction=0.2, handover_offset=(0.1, 0.1))
    with pytest.raises(UserError, match="ends after pickup_carry_start"):
        _stand(handover_clip="pickup_carry_start", handover_window=(6.0, 9.0), handover_start_fraction=0.2)
    with pytest.raises(UserError, match="no_such_clip"):
        _stand(handover_clip="no_such_clip", handover_window=(0.0, 1.0), handover_start_fraction=0.2)
    assert TrackingConfig(**{**HANDOVER, "handover_window": [6.0, 7.3]}).handover_window == (6.0, 7.3)


def test_a_handover_start_is_physical_the_robot_stands_on_the_floor_without_interpenetration():
    task = _stand(**HANDOVER, home_start_fraction=0.0, handover_start_fraction=1.0)
    compiled = CompiledTask.build(task)
    model, data = compiled.model, mujoco.MjData(compiled.model)
    for seed in range(3):
        key = jax.random.PRNGKey(seed)
        state = task.reset_physics(key, compiled.statics.home, task.reset_info(key))
        data.qpos[:], data.qvel[:] = np.asarray(state.qpos), np.asarray(state.qvel)
        mujoco.mj_forward(model, data)
        depth = min((c.dist for c in data.contact[: data.ncon]), default=0.0)
        assert depth > -0.03, f"a contact {-depth * 100:.1f} cm deep at the handover start"
        assert jnp.isfinite(data.qacc).all()


def _push(**tracking) -> Tracking:
    """The push expert's task (its box and marker from the clip) with `tracking` settings changed."""
    task = expert_task(expert_spec("push"))
    return Tracking(with_overrides(task.config, tracking), objective=task.objective)


WALK_HANDOVER = {"handover_clip": "walk", "handover_window": (0.2, 1.2), "home_start_time": 0.0}  # a walk cycle


@pytest.mark.skipif(not (MOTIONS_DIR / "push.npz").is_file(), reason="the shipped clip library is missing")
def test_a_prop_task_hands_over_with_its_props_as_a_home_start_has_them_and_the_spot_shifts_within_the_offset():
    reach = (0.15, 0.1, 0.2)
    task = _push(**WALK_HANDOVER, home_start_fraction=0.0, handover_start_fraction=1.0, handover_offset=reach, reset_noise=0.0)
    home = CompiledTask.build(task).statics.home
    box = task._props[0].qpos_start
    untouched = task.reset_physics(jax.random.PRNGKey(0), home, task.clip_info(0, 0.0)).qpos[box : box + 3]
    shifts = []
    for seed in range(16):
        key = jax.random.PRNGKey(seed)
        info = task.reset_info(key)
        assert 0.2 <= float(info["handover_time"]) <= 1.2 and float(info["ref_time"]) == 0.0
        state = task.reset_physics(key, home, info)
        # the box where the push clip has it at its start, whatever the robot's spot
        np.testing.assert_allclose(np.asarray(state.qpos[box : box + 3]), np.asarray(untouched), atol=1e-6)
        walk = frame_at(task.handover_reference, 0, float(info["handover_time"]))
        np.testing.assert_allclose(np.asarray(state.qpos[7 : 7 + len(JOINT_NAMES)]), np.asarray(walk.joint_pos), atol=1e-6)
        dx, dy = np.asarray(state.qpos[:2]) - np.asarray(home.qpos[:2])  # the home pose faces +x: its frame is the world's
        dyaw = float(twist_yaw(state.qpos[3:7]) - twist_yaw(home.qpos[3:7]))
        np.testing.assert_allclose([dx, dy, dyaw], np.asarray(info["handover_offset"]), atol=1e-5)
        shifts.append((dx, dy, dyaw))
    shifts = np.abs(np.asarray(shifts))
    assert (shifts <= np.asarray(reach) + 1e-6).all() and (shifts.max(axis=0) > 0.5 * np.asarray(reach)).all()
    # without an offset no draw is added: the streams of existing experts stay as they were
    assert "handover_offset" not in _push(
        **WALK_HANDOVER, home_start_fraction=0.0, handover_start_fraction=1.0, handover_offset=(0.0, 0.0, 0.0)
    ).reset_info(jax.random.PRNGKey(0))
