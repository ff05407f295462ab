"""What an evaluation of a sequential task reports: each sub-goal's success, the handovers, the falls after them.

    success: 3/4, return: 512.3 ± 80.1
    subgoals: arrive 4/4 (2.4 s), still 3/4 (3.8 s), touch 3/4 (5.4 s)
    experts: walk 0.0 s -> stand 2.4 s -> reach_one_hand 3.8 s    (episode 0: the dominant expert, when it took over)
    falls within 2 s of a switch: 1 of 8 switches

`evaluate_scripted` plays the scripted state machine on any instruction the
composer can read (a catalog task, or an open one), with the installed experts.
"""

from pathlib import Path

import jax
import numpy as np

from metaworld_x.routing.rollouts import FALL_WINDOW_S, EpisodeResults, handover_line


def subgoal_summary(results: EpisodeResults, subgoals) -> list[dict]:
    """Per sub-goal: how many episodes reached it, and the mean time (s) they did."""
    rows = []
    for i, goal in enumerate(subgoals):
        times = [t[i] for b in range(results.success.size) if len(t := results.subgoal_times(b)) > i]
        rows.append({"kind": goal.kind, "skill": goal.skill, "clause": goal.clause, "reached": len(times),
                     "mean_time_s": float(np.mean(times)) if times else None})
    return rows


def experts_line(results: EpisodeResults, names, world: int = 0) -> str:
    """`walk 0.0 s -> sit 4.2 s`: world `world`'s dominant expert and the time it took over."""
    return handover_line(names, results.switches(world))


def sequence_record(results: EpisodeResults, names, subgoals) -> dict:
    """The JSON-ready part of a sequence's evaluation: sub-goals, every episode's handovers, falls after them."""
    falls, switches = results.handover_falls()
    return {
        "subgoals": subgoal_summary(results, subgoals),
        "experts_by_episode": [experts_line(results, names, b) for b in range(results.success.size)],
        "switches": switches,
        "falls_after_switch": falls,
        "fall_window_s": FALL_WINDOW_S,
    }


def sequence_lines(record: dict) -> list[str]:
    """The lines `eval` prints for a sequence's record (`sequence_record`)."""
    episodes = len(record["experts_by_episode"])
    goals = ", ".join(
        f"{g['kind']} {g['reached']}/{episodes}" + (f" ({g['mean_time_s']:.1f} s)" if g["mean_time_s"] is not None else "")
        for g in record["subgoals"])
    return [
        f"subgoals: {goals}",
        f"experts: {record['experts_by_episode'][0]}",
        f"falls within {record['fall_window_s']:.0f} s of a switch: {record['falls_after_switch']} of {record['switches']} switches",
    ]


def evaluate_scripted(instruction: str, experts_dir: Path, episodes: int = 10, seed: int = 0, steps: int | None = None,
                      perturb: str = "none") -> dict:
    """The scripted state machine on `instruction`'s sequence (the catalog's, or composed from its clauses)."""
    from metaworld_x.envs.tasks import TASKS
    from metaworld_x.experts.installed import ExpertSet, installed_experts
    from metaworld_x.routing.instructions import SkillMatcher, compose
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.routing.rollouts import SceneRunner, run_episodes
    from metaworld_x.routing.scene import build_expert_scene
    from metaworld_x.routing.scripted import scripted_behaviour

    resolver = TaskResolver()
    entry = resolver.sequence(instruction)
    task_cls = TASKS[entry.task] if entry is not None else compose(instruction, SkillMatcher(resolver.encoder))
    task = task_cls()
    dirs = installed_experts(experts_dir)
    experts = ExpertSet.load(dirs)
    behaviour = scripted_behaviour(task, experts.names)  # names any missing expert before the scene is built
    scene, _ = build_expert_scene(task, dirs, dict(zip(experts.names, experts.specs)))
    runner = SceneRunner(scene, experts.params, episodes, perturb=perturb)
    results = run_episodes(runner, behaviour, jax.random.PRNGKey(seed + 10_000), steps or scene.config.episode_length)
    return {"instruction": instruction, "task": entry.name if entry is not None else "composed",
            "scene": [p.prop for p in task.scene], "experts": list(experts.names), **results.summary(),
            **sequence_record(results, experts.names, task.subgoals)}
