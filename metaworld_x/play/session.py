"""One `metaworld-x play` run: choose the scenario, then Studio (a window or a browser), the classic viewer, or a
headless recording."""

from pathlib import Path

from metaworld_x.errors import UserError
from metaworld_x.play.scenario import Scenario

DEFAULT_HEADLESS_VIDEO = Path("play.mp4")
"""What a headless run records when neither --video nor --gif names a file."""


def build_scenario(config) -> Scenario:
    """The expert's scenario with --expert, the scripted state machine's with --scripted, else the router's for the
    instruction."""
    from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
    from metaworld_x.play.scenario import expert_scenario, router_scenario

    experts_dir = config.experts_dir or EXPERTS_DIR
    if config.expert is not None:
        return expert_scenario(config.expert, experts_dir)
    if config.scripted:
        from metaworld_x.play.router_controller import scripted_scenario

        return scripted_scenario(config.task_instruction, experts_dir)
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
    if video is None and config.gif is None and not config.web:
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

    classic = config.classic
    if video is None and config.gif is None and not classic:
        from metaworld_x.play.studio import StudioUnavailable

        try:
            play_in_studio(config, runner, ghost)
            return
        except StudioUnavailable as error:
            if config.web:
                raise UserError(f"the web viewer could not start ({error}); record headless with --video instead")
            print(f"Studio's window cannot open here ({error}): opening the classic viewer")
            classic = True
    if video is None and config.gif is None and classic:
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


def router_task_of(router_dir: Path):
    """instruction -> the task it asks for: a shipped router's own wording by exact match, else the text encoder's."""
    from metaworld_x.play.router_controller import _shipped

    resolver = None

    def task_of(text: str) -> str:
        nonlocal resolver
        exact = next((task for task, record in _shipped(router_dir).items() if record.get("instruction") == text), None)
        if exact is not None:
            return exact
        if resolver is None:
            from metaworld_x.routing.language import TaskResolver

            resolver = TaskResolver()
        return resolver.resolve(text).task.name

    return task_of


def live_session(config, runner, ghost=None):
    """The LiveSession of `config`: the router's re-plans an instruction (possibly into another scene), an expert's
    only notes it."""
    from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
    from metaworld_x.play.live_session import LiveSession, Replanner
    from metaworld_x.play.scenario import router_scenario

    replanner = None
    if config.expert is None:
        router_dir, experts_dir = config.router_dir or ROUTER_DIR, config.experts_dir or EXPERTS_DIR
        ghost_for = None
        if config.motion is not None:
            from metaworld_x.play.ghost import Ghost, load_reference

            def ghost_for(model):
                return Ghost(model, load_reference(config.motion, model), config.motion_offset, config.motion)

        if config.scripted:
            from metaworld_x.play.router_controller import scripted_scenario

            def scenario_for(text):
                return scripted_scenario(text, experts_dir)
        else:
            def scenario_for(text):
                return router_scenario(text, router_dir, experts_dir)

        replanner = Replanner(router_task_of(router_dir), scenario_for, ghost_for)
    return LiveSession(runner, config.task_instruction, replanner, ghost, config.steps)


def play_in_studio(config, runner, ghost=None) -> None:
    """Play live in Studio, in its window or (--web) served to a browser, until it closes."""
    from metaworld_x.play import studio
    from metaworld_x.play.headless import outcome_lines

    from metaworld_x.play.live_session import warm_up

    warm_up(runner)
    session = live_session(config, runner, ghost)
    if config.web and not studio.is_loopback(config.host):
        print(studio.network_warning(config.host))
    run = studio.start(session, web=config.web, host=config.host, port=config.port)
    if run.url is not None:
        print(f"web viewer: {run.url}")
        if studio.is_loopback(config.host):
            print(studio.tunnel_hint(run.port))
    print("type an instruction in the panel's box and press Enter to re-plan; close the viewer or Ctrl+C to stop")
    run.run()
    if session.runner.log.steps:  # the episode in progress when the viewer closed
        print("\n".join(outcome_lines(session.runner)))
