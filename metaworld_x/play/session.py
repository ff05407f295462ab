"""One `metaworld-x play` run: choose the scenario, then the viewer or a headless recording."""

from pathlib import Path

from metaworld_x.play.scenario import Scenario

DEFAULT_HEADLESS_VIDEO = Path("play.mp4")
"""What a headless run records when neither --video nor --gif names a file."""


def build_scenario(config) -> Scenario:
    """The expert's scenario with --expert, else the router's for the instruction."""
    from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
    from metaworld_x.play.scenario import expert_scenario, router_scenario

    experts_dir = config.experts_dir or EXPERTS_DIR
    if config.expert is not None:
        return expert_scenario(config.expert, experts_dir)
    return router_scenario(config.task_instruction, config.router_dir or ROUTER_DIR, experts_dir)


def _headless(reason: str) -> Path:
    """The video a headless fallback records, announced in one line."""
    print(f"{reason}: running headless, recording to {DEFAULT_HEADLESS_VIDEO} (choose the file with --video)")
    return DEFAULT_HEADLESS_VIDEO


def play(config) -> None:
    """Run `config` (a `metaworld_x.cli.play.Play`); prints the outcome lines."""
    from metaworld_x.play.episode import EpisodeRunner
    from metaworld_x.play.ghost import Ghost, load_reference, motion_path
    from metaworld_x.play.viewer import display_problem

    if config.instruction is None and config.expert is None:
        print(f'no instruction given: playing the default, "{config.task_instruction}"')
    scenario = build_scenario(config)  # missing artifacts fail here, before any simulation
    if config.motion is not None:
        motion_path(config.motion)
    video = config.video
    if video is None and config.gif is None:
        problem = display_problem()
        if config.headless:
            video = DEFAULT_HEADLESS_VIDEO
        elif problem is not None:
            video = _headless(problem)

    runner = EpisodeRunner(scenario, seed=config.seed)
    ghost = None
    if config.motion is not None:
        ghost = Ghost(runner.model, load_reference(config.motion, runner.model), config.motion_offset, config.motion)
    print(f"playing {scenario.title}, seed {config.seed}: {scenario.task.scene} scene, "
          f"{runner.episode_length} steps per episode at {1 / runner.control_dt:g} Hz")

    if video is None and config.gif is None:
        from metaworld_x.play.viewer import ViewerUnavailable, run_viewer

        try:
            run_viewer(runner, config.task_instruction, ghost, config.steps)
            return
        except ViewerUnavailable as error:
            video = _headless(f"no viewer window ({error})")

    from metaworld_x.play.headless import RecordOptions, outcome_lines, record_episode

    options = RecordOptions(
        steps=config.steps or runner.episode_length,
        video=video, gif=config.gif,
        plots=Path(video or config.gif).with_suffix("") if config.plots else None,
        width=config.width, height=config.height, shadows=config.shadows,
        instruction=config.task_instruction,
    )
    _, written = record_episode(runner, options, ghost)
    for path in written:
        print(f"wrote {path}")
    print("\n".join(outcome_lines(runner)))
