"""Where fetch episodes go wrong: one expert alone (default carry) on the fetch scene, traced per episode.

    python scripts/trace_fetch.py --experts-dir experts --seed 0 --episodes 10

For each episode: the step each sub-goal is reached, where the box is (relative to its resting place on the
table) when it comes down to 10 cm above that place, where the expert's clip has its box at that step (how far
from its place and how high above it), the most the box leans over the next 50 steps, and how the episode ends.
The seeds are `eval router`'s (PRNGKey(seed + 10000)), so with the fetch router's weight all on carry the
episodes are the router's. It shows why carry misses: the box comes down lower than the
clip's, meets the table top short of its place, and drags across it.

Then, at a few steps around the set-down, where the box is relative to the pelvis (ahead of it and above it, in
its heading frame), averaged over the episodes still running, against the clip's box relative to the clip's
pelvis at the same clip time: whether the robot holds and lowers the box as its clip does (it held it 4 cm nearer
its body, and lowered straight down where the clip reaches out). And where the robot's pelvis is against the
clip's (the fetch scene is laid out as the clip, so the two share a frame), in the clip pelvis's heading frame:
a box set down short is either held short of the pelvis or carried by a pelvis that stops short.

Last, at the same steps, the palms in the box's frame: how far apart they are across it and how far the box's centre
is below them. It showed the grip opening by 4-6 cm and the box slipping 4 cm down between the palms from step
345 to 350, 8 cm above and 8 cm short of its place: within carry's 10 cm "delivered", where its grip reward stops
caring what the hands do.
"""

import argparse
from pathlib import Path

import jax
import numpy as np

from metaworld_x.experts.environment import expert_task
from metaworld_x.envs.observations import relative_to_robot, to_heading_frame
from metaworld_x.envs.reference import frame_at
from metaworld_x.envs.tasks import make_task
from metaworld_x.envs.tasks.box import palms_in_box, resting_place
from metaworld_x.envs.tasks.composite import SUBGOALS
from metaworld_x.motion.clip import load_clip
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.experts.installed import ExpertSet, installed_experts
from metaworld_x.routing.rollouts import SceneRunner
from metaworld_x.routing.scene import build_expert_scene, load_expert_spec

LOWERED = 0.10  # m above the resting place: the box is on its way down
LEAN_WINDOW = 50  # steps after it gets there over which its lean is taken
REACH_STEPS = (300, 330, 345, 350, 355, 360)  # the walk's end and the set-down, on the clip's clock


def trace(experts_dir: Path, expert: str, seed: int, episodes: int, steps: int) -> dict[str, np.ndarray]:
    """Per step and world: phase, box offset from its resting place [3], box relative to the pelvis [3] (heading
    frame), the palms in the box's frame [2, 3] (left, right), box tilt (deg), alive; per step, the clip's box:
    (horizontal distance, height) from its last position, where the clip sets it down, and relative to the clip's
    pelvis [3] (nan without a box); per step and world, the robot's pelvis [3], and per step the reference's pelvis
    [3] and orientation [4], in the scene's frame."""
    dirs = installed_experts(experts_dir)
    experts = ExpertSet.load(dirs)
    if expert not in experts.names:
        raise SystemExit(f"no expert {expert!r} in {experts_dir}; installed: {', '.join(experts.names)}")
    scene, record = build_expert_scene(make_task("fetch"), dirs, dict(zip(experts.names, experts.specs)))
    runner = SceneRunner(scene, experts.params, episodes)
    weights = np.zeros((episodes, len(experts.names)), np.float32)
    weights[:, experts.names.index(expert)] = 1.0
    key, reset_key = jax.random.split(jax.random.PRNGKey(seed + 10_000))
    state = runner.env.reset(reset_key)
    alive = np.ones(episodes, bool)
    log = {"phase": [], "offset": [], "held": [], "palms": [], "root": [], "tilt": [], "alive": [], "reason": []}
    for _ in range(steps):
        state = runner.env.step(state, runner.act(state, weights))
        view = state.data.view
        up = np.clip(np.asarray(view.site_rot("box"))[:, 2, 2], -1.0, 1.0)
        log["phase"].append(np.asarray(state.info["phase"]))
        log["offset"].append(np.asarray(view.site("box")) - np.asarray(resting_place(view)))
        log["held"].append(np.asarray(relative_to_robot(view, view.site("box"))))
        log["palms"].append(np.stack(palms_in_box(view), axis=1))
        log["root"].append(np.asarray(view.root_pos))
        log["tilt"].append(np.degrees(np.arccos(up)))
        log["alive"].append(alive.copy())
        log["reason"].append(np.asarray(state.info["termination_reason"]))
        alive = alive & ~np.asarray(state.done)
        if not alive.any():
            break
    clip = load_clip(MOTIONS_DIR / f"{record[expert]['clip']}.npz")
    dt = runner.env.compiled.control_dt
    clip_box, clip_held = np.full((len(log["phase"]), 2), np.nan), np.full((len(log["phase"]), 3), np.nan)
    if clip.object_pose is not None:  # the expert's clock starts at start_time and runs one step ahead of the log
        box = clip.object_pose[:, 4:]
        frames = np.minimum(np.round((record[expert]["start_time"] + dt * np.arange(1, len(clip_box) + 1)) * clip.fps),
                            len(box) - 1).astype(int)
        clip_box = np.stack([np.linalg.norm(box[frames, :2] - box[-1, :2], axis=1), box[frames, 2] - box[-1, 2]], axis=1)
        clip_held = np.asarray(to_heading_frame(box[frames] - clip.root_pos[frames], clip.root_quat[frames]))
    # the reference the expert follows in the scene (its clip turned to face +x), not the file's frame
    reference = expert_task(load_expert_spec(dirs[expert])[0]).reference
    times = record[expert]["start_time"] + dt * np.arange(1, len(clip_box) + 1)
    ref = jax.jit(jax.vmap(lambda t: frame_at(reference, 0, t)))(times)
    return {k: np.stack(v) for k, v in log.items()} | {"reasons": runner.env.reason_names, "clip_box": clip_box,
                                                       "clip_held": clip_held, "clip_root": np.asarray(ref.root_pos),
                                                       "clip_root_quat": np.asarray(ref.root_quat)}


def episode_line(log: dict, b: int) -> str:
    last = int(log["alive"][:, b].sum()) - 1  # the step its episode ended on (auto-reset follows)
    phase, offset, tilt = log["phase"][: last + 1, b], log["offset"][: last + 1, b], log["tilt"][: last + 1, b]
    reached = [next((str(t) for t, p in enumerate(phase) if p > i), "—") for i in range(len(SUBGOALS))]
    low = next((t for t, o in enumerate(offset) if np.linalg.norm(o[:2]) < 0.5 and o[2] < LOWERED), None)
    if low is None:
        lowered = "never lowered onto the table"
    else:
        x, y, _ = offset[low] * 100
        away, up = log["clip_box"][low] * 100
        lowered = (f"lowered at {low}: {x:+.0f} {y:+.0f} cm off (clip: {away:.0f} away, {up:.0f} up);"
                   f" lean {tilt[low:low + LEAN_WINDOW].max():.0f}°")
    end = log["reasons"][int(log["reason"][last, b])]
    before = max(last - 1, 0)  # the ending step's view is already the reset world's
    return (f"{b:>3} {' '.join(f'{r:>5}' for r in reached)}  {lowered:<66} end {last + 1} ({end}),"
            f" then the box {np.linalg.norm(offset[before]) * 100:.0f} cm off its place, leaning {tilt[before]:.0f}°")


def _spread(values: np.ndarray, word: str) -> str:
    """'mean ± sd word' of [episodes] values."""
    return f"{values.mean():5.1f} ± {values.std():3.1f} {word}"


def _step_line(log: dict, step: int, describe) -> str:
    """'step  describe(running)', `running` the [episodes] mask of those still running at `step`."""
    running = log["alive"][step + 1]  # alive after the step: an episode that ended on it shows the reset world
    if not running.any():
        return f"{step:>4}  no episode still running"
    return f"{step:>4}  " + describe(running)


def reach_line(log: dict, step: int) -> str:
    """At `step`: the box ahead of and above the pelvis (cm), mean ± sd over the episodes still running, and the clip's."""
    def describe(running):
        held = log["held"][step, running] * 100
        ahead, up = log["clip_held"][step, [0, 2]] * 100
        return (f"robot {_spread(held[:, 0], 'ahead')}, {_spread(held[:, 2], 'up')} ({running.sum()} episodes);"
                f"  clip {ahead:5.1f} ahead, {up:5.1f} up")
    return _step_line(log, step, describe)


def pelvis_line(log: dict, step: int) -> str:
    """At `step`: the robot's pelvis ahead of, left of and above the clip's (cm, the clip pelvis's heading frame),
    mean ± sd over the episodes still running."""
    def describe(running):
        off = np.asarray(to_heading_frame(log["root"][step, running] - log["clip_root"][step],
                                          log["clip_root_quat"][step])) * 100
        return ", ".join(_spread(off[:, i], word) for i, word in enumerate(("ahead", "left", "up")))
    return _step_line(log, step, describe)


def grip_line(log: dict, step: int) -> str:
    """At `step`: how far apart the palms are across the box and how far its centre is below them (cm, the box's
    frame), mean ± sd over the episodes still running."""
    def describe(running):
        left, right = log["palms"][step, running, 0] * 100, log["palms"][step, running, 1] * 100
        below = (left[:, 2] + right[:, 2]) / 2
        return f"palms {_spread(left[:, 1] - right[:, 1], 'cm apart')}, box {_spread(below, 'cm below them')}"
    return _step_line(log, step, describe)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experts-dir", type=Path, default=Path("experts"))
    parser.add_argument("--expert", default="carry")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    log = trace(args.experts_dir, args.expert, args.seed, args.episodes, args.steps)
    print(f"{args.expert} alone on fetch, seed {args.seed}: step each sub-goal is reached; the box's offset from its"
          f" resting place (x y) when it comes within {LOWERED * 100:.0f} cm above it, with the clip's box at that"
          f" step (cm from its place, cm above it), and its greatest lean"
          f" over the next {LEAN_WINDOW} steps")
    print(f"{'ep':>3} " + " ".join(f"{g[:5]:>5}" for g in SUBGOALS))
    for b in range(args.episodes):
        print(episode_line(log, b))
    placed = ((log["phase"] >= len(SUBGOALS)) & log["alive"]).any(axis=0).sum()
    print(f"placed: {placed}/{args.episodes}")
    steps = [t for t in REACH_STEPS if t + 1 < len(log["alive"])]
    print("the box relative to the pelvis (cm, its heading frame), robot against clip:")
    for step in steps:
        print(reach_line(log, step))
    print("the robot's pelvis against the clip's (cm, the clip pelvis's heading frame):")
    for step in steps:
        print(pelvis_line(log, step))
    print("the palms across the box and the box below them (cm, the box's frame):")
    for step in steps:
        print(grip_line(log, step))


if __name__ == "__main__":
    main()
