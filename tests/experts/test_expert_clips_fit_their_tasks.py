"""Each expert's reference clip fits its task: it starts clear of the props and, played perfectly, solves it.

Reference-state initialisation must not start the robot inside a prop. An episode starts in the clip's pose at a random time. If that pose overlaps
the scene (the sit clip's thighs inside a chair seat that was too high), the
first physics step throws the robot out and the episode ends within a few
steps, for training and evaluation alike: the sit expert lost 6 of its 10
evaluation episodes this way before the seat was lowered.

And a policy held to the clip within a few centimetres cannot do much better
on the task than the clip itself: the run clip, played perfectly at the
person's 3.4 m/s, scored 703 per 1000 steps against h1-run's bar of 700, so
no amount of training would have met the goal with a margin.

Props the clip moves start where it has moved them: carry's box in its hands
(`object_joint`), push's box as far as it has pushed it and the door as far
as it has opened it (`clip_props`); a perfect replay moves them along too.
"""

import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.envs.physics_view import BatchViewReader
from metaworld_x.envs.tasks.tracking import TASK_PREFIX
from metaworld_x.experts.environment import expert_task
from metaworld_x.experts.specs import EXPERTS
from metaworld_x.paths import MOTIONS_DIR

# Deepest overlap (m) of a robot geom with a prop geom that a start pose may have.
TOLERATED_PENETRATION = 0.005
SAMPLES_PER_CLIP = 25
# Played perfectly, a clip must clear its expert's return goal by this share, leaving room for tracking error.
RETURN_MARGIN = 0.05

def reference_start(task, compiled):
    """(clip, time) -> the PhysicsInit reference-state initialisation gives (robot, held object, clip props)."""
    return jax.jit(lambda clip, time: task.reset_physics(
        jax.random.PRNGKey(0), compiled.home, task.clip_info(clip, time)
    ))


def deepest_prop_penetration(skill: str) -> tuple[float, float, str]:
    """(depth m, clip time s, 'robot body/prop body') of the worst robot-prop overlap over the clip's start states."""
    task = expert_task(EXPERTS[skill])
    compiled = CompiledTask.build(task)
    model = compiled.model
    data = mujoco.MjData(model)
    ref = task.reference
    pelvis = model.body("pelvis").id
    start_at = reference_start(task, compiled)
    # an object the clip's hands hold starts in them (Tracking's object_joint): touching it is the grip
    held = task.config.object_joint
    held_body = model.jnt_bodyid[model.joint(held).id] if held else -1
    worst = (0.0, 0.0, "")
    for clip in range(ref.num_clips):
        for time in np.linspace(0.0, float(ref.duration(clip)), SAMPLES_PER_CLIP):
            init = start_at(clip, time)
            data.qpos[:], data.qvel[:] = init.qpos, init.qvel
            mujoco.mj_forward(model, data)
            for contact in data.contact[: data.ncon]:
                bodies = model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]
                on_robot = [model.body_rootid[b] == pelvis for b in bodies]
                if on_robot[0] == on_robot[1] or 0 in bodies or held_body in bodies:  # robot-prop pairs only; the floor is world
                    continue
                if -contact.dist > worst[0]:
                    worst = (-contact.dist, float(time), "/".join(model.body(b).name for b in bodies))
    return worst


# Experts shipped although some reference starts overlap a prop, with why (a start there begins with a contact push).
KNOWN_OVERLAPS: dict[str, str] = {
    "carry": "after the lift the clip walks on over the 11 cm stand the box rested on (the person's box rested on the "
             "floor) and a foot passes through it; found after the carry expert shipped, 10/10 from home; "
             "a stand that the walk clears, or one removed once the box is lifted, is the fix",
}


@pytest.mark.skipif(not (MOTIONS_DIR / "sit.npz").is_file(), reason="the shipped clip library is missing")
@pytest.mark.parametrize("skill", [s for s, spec in EXPERTS.items() if expert_task(spec).scene != "floor"])
def test_reference_start_poses_clear_the_scene_props(skill):
    depth, time, pair = deepest_prop_penetration(skill)
    if skill in KNOWN_OVERLAPS:  # listed only while it really overlaps, so the list cannot go stale
        assert depth > TOLERATED_PENETRATION, f"{skill} now clears its props: remove it from KNOWN_OVERLAPS"
        pytest.xfail(f"{KNOWN_OVERLAPS[skill]} ({pair} overlap by {depth * 100:.1f} cm at t = {time:.2f} s)")
    assert depth <= TOLERATED_PENETRATION, f"{skill}: {pair} overlap by {depth * 100:.1f} cm at t = {time:.2f} s"


def replay(skill: str, steps: int, **task_variables) -> tuple[float, bool, bool, float]:
    """(task reward per 1000 steps, whether the objective's success held at some step and at the last step
    (False for an objective judged by its return), the clip's last time (s)) of the expert's first clip played
    kinematically from its start, its held object and props moving with it; `task_variables` replace the
    objective's drawn ones."""
    task = expert_task(EXPERTS[skill])
    compiled = CompiledTask.build(task)
    batch = mujoco.batch.Batch(compiled.model, 1, 1)
    reader = BatchViewReader(batch, compiled.layout)
    qpos, qvel = batch.bind("qpos"), batch.bind("qvel")
    batch.reset(keyframe=0)
    joints = task.reference.joint_pos.shape[-1]
    info = {**task.reset_info(jax.random.PRNGKey(0)), **task.clip_info(0, 0.0),
            "last_action": jnp.zeros(joints), "step": jnp.asarray(0), **task_variables}
    terms = jax.jit(lambda view, info: task.reward_terms(view, info, jnp.zeros(joints)))
    solved_now = jax.jit(lambda view, info: task.objective.success(view, info))
    advance_objective = jax.jit(task.objective.advance)
    start_at = reference_start(task, compiled)
    total, solved, now = 0.0, False, False
    for _ in range(steps):
        info = {**info, "ref_time": info["ref_time"] + task.control_dt}
        init = start_at(0, info["ref_time"])
        qpos[0], qvel[0] = init.qpos, init.qvel
        batch.forward(stage=mujoco.mjtStage.mjSTAGE_VEL)
        view = jax.tree.map(lambda x: x[0], reader.read())
        info = advance_objective(view, info)  # the objective's own variables (reach's touched)
        total += sum(float(v) for name, v in terms(view, info).items() if name.startswith(TASK_PREFIX))
        now = task.objective.success_bar is None and bool(solved_now(view, info))
        solved = solved or now
    return total / steps * 1000, solved, now, float(info["ref_time"])


def replayed_task_return(skill: str, steps: int) -> float:
    """Task reward per 1000 steps of the expert's first clip played kinematically from its start."""
    return replay(skill, steps)[0]


@pytest.mark.skipif(not (MOTIONS_DIR / "run.npz").is_file(), reason="the shipped clip library is missing")
@pytest.mark.parametrize("skill", [s for s, spec in EXPERTS.items() if spec.return_goal is not None])
def test_the_clip_played_perfectly_clears_the_experts_return_goal(skill):
    # Over the objective's own episode, as a router runs the expert (1000 steps): the goal is HumanoidBench's bar
    # for that episode. crawl trains on 300-step episodes, where from the clip's start its 2.4 s get-down, which
    # earns little crawl reward, is 40 % of the episode (683 per 1000 steps played perfectly; 742 over 1000).
    spec = EXPERTS[skill]
    task = expert_task(spec)
    replayed = replayed_task_return(skill, steps=max(task.config.episode_length, task.objective.config.episode_length))
    assert replayed > spec.return_goal * (1 + RETURN_MARGIN), (
        f"{skill}: its clip played perfectly scores {replayed:.0f} per 1000 steps, within {RETURN_MARGIN:.0%} of "
        f"the goal {spec.return_goal:.0f}; a policy held to the clip cannot meet it reliably"
    )


# Experts judged by their objective's success alone whose clip, played perfectly, does not reach it.
# (push was here while its keys moved the box 0.26 m of the 1.2 m to the marker; they now walk it on.)
CLIP_FALLS_SHORT: dict[str, str] = {}


@pytest.mark.skipif(not (MOTIONS_DIR / "push.npz").is_file(), reason="the shipped clip library is missing")
@pytest.mark.parametrize("skill", ["carry", "push", "door", "rise", "turn"])
def test_the_clip_played_perfectly_meets_the_objectives_success(skill):
    task = expert_task(EXPERTS[skill])
    steps = int(float(task.reference.duration(0)) / task.control_dt) + 1
    _, solved, _, end = replay(skill, steps)
    if skill in CLIP_FALLS_SHORT:
        assert not solved, f"{skill}'s clip now solves its task: remove it from CLIP_FALLS_SHORT"
        pytest.xfail(f"{skill}: {CLIP_FALLS_SHORT[skill]}")
    assert solved, f"{skill}: its clip played perfectly to t = {end:.2f} s never meets {task.objective.name}'s success"


@pytest.mark.skipif(not (MOTIONS_DIR / "reach_one_hand.npz").is_file(), reason="the shipped clip library is missing")
def test_the_reach_targets_lie_around_the_clips_held_hand():
    """The clip played perfectly touches a target at the centre of the reach task's box, and misses one at a
    corner: the box is where the clip reaches, and small enough that the policy still has to aim."""
    task = expert_task(EXPERTS["reach_one_hand"])
    low, high = np.asarray(task.objective.config.target_low), np.asarray(task.objective.config.target_high)
    steps = int(float(task.reference.duration(0)) / task.control_dt) + 1
    _, touched, still_counted, _ = replay("reach_one_hand", steps, target=jnp.asarray((low + high) / 2))
    assert touched, "the clip misses the box centre"
    assert still_counted, "the touch no longer counts once the clip has lowered its arm (the expert is judged at its end)"
    assert not replay("reach_one_hand", steps, target=jnp.asarray(high))[1], "the clip alone solves every target"
    assert np.all(high - low <= 0.3), f"targets spread over {high - low} m, too far for a policy held to its clip"


# Faster than this (m/s) at its last frame, a clip that is held there asks the robot to stop dead mid-stride.
MOVING_END_SPEED = 0.3
# Experts shipped although their episodes can outlast a clip that ends moving, with why.
KNOWN_MOVING_ENDS: dict[str, str] = {
    "carry": "the take ends setting the box down, bent 46° over the table with a foot in the air; late starts hold that "
             "frame for up to 8 s, 58 % of evaluated steps. A lead-out that ends it standing "
             "(motion/edits/lead_out.py) cost home-start success and is not shipped (docs/design-notes.md)",
}


@pytest.mark.skipif(not (MOTIONS_DIR / "run_rest.npz").is_file(), reason="the shipped clip library is missing")
@pytest.mark.parametrize("skill", list(EXPERTS))
def test_an_episode_started_in_the_start_window_ends_before_a_moving_clip_does(skill):
    # run_rest was 21 s long while its expert started episodes anywhere in its first 4 s and ran them for 20 s:
    # every start after 1 s reached the end, where the reference froze mid-sprint, and was ended there.
    task = expert_task(EXPERTS[skill])
    config, ref = task.config, task.reference
    overruns = []
    for clip in range(ref.num_clips):
        if bool(ref.loop[clip]):
            continue
        duration = float(ref.duration(clip))
        end_speed = float(np.linalg.norm(ref.root_lin_vel[clip, ref.num_frames[clip] - 1, :2]))
        if end_speed < MOVING_END_SPEED:
            continue  # a one-shot clip that ends at rest is held there on purpose
        latest_start = duration if config.start_window is None else min(config.start_window, duration)
        needed = latest_start + config.episode_length * task.control_dt
        if duration < needed - 1e-6:
            overruns.append(f"clip {config.clips[clip]} ends at {duration:.1f} s moving at {end_speed:.1f} m/s, but an "
                            f"episode started at {latest_start:.1f} s runs to {needed:.1f} s")
    if skill in KNOWN_MOVING_ENDS:  # listed only while it really overruns, so the list cannot go stale
        assert overruns, f"{skill}'s episodes now end on its clip: remove it from KNOWN_MOVING_ENDS"
        pytest.xfail(f"{KNOWN_MOVING_ENDS[skill]} ({'; '.join(overruns)})")
    assert not overruns, f"{skill}: {'; '.join(overruns)}"
