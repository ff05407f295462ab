"""One `metaworld-x play` run: choose the scenario, then the viewer or a headless recording."""

from pathlib import Path

from metaworld_x.play.scenario import Scenario


def build_scenario(config) -> Scenario:
    """The expert's scenario with --expert, else the router's for the instruction."""
    from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
    from metaworld_x.play.scenario import expert_scenario, router_scenario

    experts_dir = config.experts_dir or EXPERTS_DIR
    if config.expert is not None:
        return expert_scenario(config.expert, experts_dir)
    return router_scenario(config.instruction, config.router_dir or ROUTER_DIR, experts_dir)


def play(config) -> None:
    """Run `config` (a `metaworld_x.cli.play.Play`); prints the outcome lines."""
    from metaworld_x.play.viewer import display_problem

    from metaworld_x.play.ghost import motion_path

    scenario = build_scenario(config)  # missing artifacts fail here, before any simulation
    if config.motion is not None:
        motion_path(config.motion)
    recording = config.video is not None or config.gif is not None
    problem = None if (recording or config.headless) else display_problem()
    video = config.video
    if problem is not None:
        from metaworld_x.cli.play import DEFAULT_HEADLESS_VIDEO

        video = DEFAULT_HEADLESS_VIDEO
        print(f"{problem}: running headless, recording to {video} (choose the file with --video)")
    elif config.headless and not recording:
        from metaworld_x.cli.play import DEFAULT_HEADLESS_VIDEO

        video = DEFAULT_HEADLESS_VIDEO

    from metaworld_x.play.episode import EpisodeRunner
    from metaworld_x.play.ghost import Ghost, load_reference

    runner = EpisodeRunner(scenario, seed=config.seed)
    ghost = None
    if config.motion is not None:
        ghost = Ghost(runner.model, load_reference(config.motion, runner.model), config.motion_offset, config.motion)
    print(f"playing {scenario.title}, seed {config.seed}: {scenario.task.scene} scene, "
          f"{runner.episode_length} steps per episode at {1 / runner.control_dt:g} Hz")

    if video is None and config.gif is None:
        from metaworld_x.play.viewer import run_viewer

        run_viewer(runner, config.instruction, ghost, config.steps)
        return

    from metaworld_x.play.headless import RecordOptions, outcome_lines, record_episode

    stem = (video or config.gif)
    options = RecordOptions(
        steps=config.steps or runner.episode_length,
        video=video, gif=config.gif,
        plots=Path(stem).with_suffix("") if config.plots else None,
        width=config.width, height=config.height, shadows=config.shadows,
        instruction=config.instruction,
    )
    _, written = record_episode(runner, options, ghost)
    for path in written:
        print(f"wrote {path}")
    print("\n".join(outcome_lines(runner)))
