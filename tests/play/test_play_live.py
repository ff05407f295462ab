"""The live play session behind Studio's panels, without a browser or a window: weights history and switch marks,
sub-goal ticks, pacing, re-planning an instruction, the control loop's answers to the panels, and `--web`'s checks."""

import socket
import types

import numpy as np
import pytest

from metaworld_x.cli import main
from metaworld_x.errors import UserError
from metaworld_x.paths import EXPERTS_DIR
from metaworld_x.play.live_session import (
    MAX_LAG_S, Pacer, RateMeter, Replan, Replanner, subgoal_labels, subgoal_names, tick_subgoals,
)
from metaworld_x.play.weights_history import WeightsHistory, switch_marks

# ---- pure pieces --------------------------------------------------------------------------


def test_weights_history_keeps_the_last_seconds_and_marks_each_switch():
    history = WeightsHistory(num_experts=2, control_dt=0.5, seconds=2.0)  # four rows
    for step, lead in enumerate([0, 0, 1, 1, 0, 0]):
        history.push((step + 1) * 0.5, np.eye(2)[lead] * 0.8 + 0.1)
    times, weights = history.window()
    assert times.tolist() == [1.5, 2.0, 2.5, 3.0] and weights.shape == (4, 2)
    assert history.switch_marks() == [(2.5, 0)]  # the switch to 1 at 1.5 s opens the window: no mark
    with pytest.raises(ValueError, match="expected"):
        history.push(3.5, np.ones(3))
    history.clear()
    assert len(history) == 0 and history.switch_marks() == [] and history.window()[1].shape == (0, 2)


def test_switch_marks_name_the_expert_that_took_over():
    times = np.arange(1, 6) * 0.02
    weights = np.array([[0.9, 0.1, 0], [0.2, 0.7, 0.1], [0.2, 0.7, 0.1], [0, 0.1, 0.9], [0.6, 0.2, 0.2]])
    assert switch_marks(times, weights) == [(0.04, 1), (0.08, 2), (0.1, 0)]
    assert switch_marks(times[:1], weights[:1]) == []


def test_subgoals_are_named_in_task_order_and_stay_ticked():
    from metaworld_x.envs.tasks import make_task

    fetch, walk_sit = make_task("fetch"), make_task("walk_sit")
    assert subgoal_names(fetch) == ("approach", "lift", "transport", "place")
    assert subgoal_labels(fetch) == subgoal_names(fetch)
    assert subgoal_labels(walk_sit) == ("walk to the chair", "turn round", "sit down")  # a sequence's clauses
    assert subgoal_names(make_task("walk")) == ()
    names = subgoal_names(fetch)
    metrics = {f"subgoal/{n}": np.zeros(1) for n in names}
    reached = tick_subgoals((False,) * 4, names, {**metrics, "subgoal/approach": np.ones(1)})
    assert reached == (True, False, False, False)
    assert tick_subgoals(reached, names, metrics) == reached  # a tick stays for the episode


def test_pacer_steps_at_the_control_rate_and_drops_a_long_lag():
    pacer = Pacer(0.02)
    assert pacer.due(10.0, 1.0) and not pacer.due(10.01, 1.0) and pacer.due(10.02, 1.0)
    assert pacer.wait(10.03) == pytest.approx(0.01)
    assert pacer.due(10.04, 2.0) and not pacer.due(10.045, 2.0) and pacer.due(10.05, 2.0)  # twice as fast
    assert pacer.due(11.0, 1.0)  # far behind: resumes from now ...
    assert not pacer.due(11.0 + MAX_LAG_S / 10, 1.0)  # ... without a burst of steps to catch up
    meter = RateMeter()
    for i in range(51):
        meter.tick(i * 0.02)
    assert meter.rate(1.0) == pytest.approx(50.0) and meter.rate(5.0) == 0.0


# ---- re-planning, with stand-ins for the runner -------------------------------------------


class FakeController:
    task, mode, expert_names = "stand", "router", ("a", "b")

    def __init__(self):
        self.told = []

    def instruct(self, text):
        self.told.append(text)
        return f"router now follows {text!r}"


def _fake_runner():
    scenario = types.SimpleNamespace(controller=FakeController(), title="router stand")
    return types.SimpleNamespace(scenario=scenario, seed=0)


def test_an_instruction_for_the_same_task_re_instructs_the_controller():
    runner = _fake_runner()
    built = []
    replanner = Replanner(lambda text: "stand", built.append)
    done = replanner.replan("  stand up straight ", runner)
    assert done.accepted and done.runner is None and done.instruction == "stand up straight"
    assert runner.scenario.controller.told == ["stand up straight"] and built == []


def test_an_instruction_for_another_task_builds_its_scene_off_the_loop_thread():
    def build(text):
        raise UserError(f"no trained router for task 'run' (from {text!r})")

    replanner = Replanner(lambda text: "run", build)
    assert replanner.submit("run forward", _fake_runner())
    done = replanner.wait(10.0)
    assert not done.accepted and "no trained router for task 'run'" in done.line  # the build was asked for
    assert replanner.poll() is None  # handed over once
    assert not Replanner(None, None).replan("   ", _fake_runner()).accepted  # an empty instruction is refused


# ---- the live session on the shipped walk expert ------------------------------------------


@pytest.fixture(scope="module")
def walk_runner():
    if not (EXPERTS_DIR / "walk" / "policy.json").is_file():
        pytest.skip("needs the shipped walk expert")
    from metaworld_x.play.episode import EpisodeRunner
    from metaworld_x.play.live_session import warm_up
    from metaworld_x.play.scenario import expert_scenario

    runner = EpisodeRunner(expert_scenario("walk", EXPERTS_DIR))
    warm_up(runner)
    assert runner.log.steps == 0 and runner.seed == 0  # compiled, and back at the episode's start
    return runner


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_live_session_steps_when_due_pauses_shoves_and_reports(walk_runner):
    from metaworld_x.play.live_session import LiveSession

    clock, lines = Clock(), []
    walk_runner.reset(0)
    session = LiveSession(walk_runner, "", announce=lines.append, clock=clock, steps=40)
    stepped = 0
    for _ in range(30):  # 30 ticks 0.02 s apart: 30 control steps at 50 Hz
        stepped += session.tick()
        clock.now += 0.02
    assert stepped == 30 and walk_runner.log.steps == 30
    report = session.report()
    assert report.title == report.task == "expert walk" and report.expert_names[int(np.argmax(report.weights))] == "walk"
    assert report.history.shape == (30, len(report.expert_names)) and report.switches == ()
    assert report.rate_hz == pytest.approx(50.0) and report.control_hz == 50.0 and report.subgoals == ()

    session.set_paused(True)
    clock.now += 1.0
    assert not session.tick() and session.report().paused
    session.set_paused(False)

    from metaworld_x.envs.perturb import SUITES

    walk_runner.sync_data()
    velocity = walk_runner.data.qvel[:2].copy()
    session.shove()
    walk_runner.sync_data()
    kick = np.linalg.norm(walk_runner.data.qvel[:2] - velocity)
    low, high = SUITES["push"].push_speed  # the push suite's shove, in a random direction
    assert low < kick <= high + 1e-6 and lines[-1].startswith(f"shoved: {kick:.2f} m/s")

    session.reset()
    assert walk_runner.seed == 1 and walk_runner.log.steps == 0 and len(session.history) == 0
    session.steps = session.played
    assert session.finished and not session.tick()


def test_a_finished_re_plan_installs_its_runner_and_asks_for_the_model_to_be_published(walk_runner):
    from metaworld_x.play.live_session import LiveSession

    replanner = Replanner(None, None)
    session = LiveSession(walk_runner, "", replanner, announce=lambda line: None)
    replanner._done = Replan("walk on", "new scene: expert walk", runner=walk_runner)
    assert session.poll_replan() and session.model_changed and session.instruction == "walk on"
    replanner._done = Replan("dance", "not re-planned: no such task", accepted=False)
    assert not session.poll_replan() and session.instruction == "walk on" and "no such task" in session.line


# ---- the Studio plugin's answers, with a stand-in handle ----------------------------------


class FakeHandle:
    def __init__(self):
        self.sent, self.models = [], []

    def send_to_viewer(self, message):
        self.sent.append(message)

    def set_model(self, model, data=None):
        self.models.append(model)


def test_the_control_loop_plugin_answers_the_panels(walk_runner):
    from mujoco.studio import messages, sim

    from metaworld_x.play.live_session import LiveSession
    from metaworld_x.play.studio_messages import InstructEvent, ReportSnapshot, ShoveEvent
    from metaworld_x.play.studio_panels import PlayPanels
    from metaworld_x.play.studio_sim import PlaySim

    walk_runner.reset(0)
    lines = []
    session = LiveSession(walk_runner, "", announce=lines.append)
    loop, handle = PlaySim(session), FakeHandle()
    loop.handle = handle
    loop._on_load_model(messages.LoadModelEvent())
    assert handle.models == [walk_runner.model]
    assert walk_runner.model.vis.global_.cameraid == walk_runner.model.camera("track").id  # Studio follows the robot

    loop._on_step_control(messages.StepControlSnapshot(pause_state=sim.PauseState.NORMAL_PAUSED, speed=50.0))
    assert session.paused and session.speed == 0.5
    echoed = [m for m in handle.sent if isinstance(m, messages.StepControlSnapshot)][-1]
    assert echoed.pause_state == sim.PauseState.NORMAL_PAUSED and echoed.speed == 50.0  # Studio's own controls agree
    loop._on_single_step(messages.SingleStepEvent())
    assert walk_runner.log.steps == 1
    loop._on_shove(ShoveEvent())
    loop._on_instruct(InstructEvent("walk faster"))
    assert "a single expert ignores instructions" in lines[-1]
    assert loop._on_reset(messages.ResetEvent()) and walk_runner.log.steps == 0 and walk_runner.seed == 1

    panels = PlayPanels()
    report = [m for m in handle.sent if isinstance(m, ReportSnapshot)][-1]
    panels._on_report(report)
    assert panels.report is report.report and panels.draft == ""


# ---- --web's checks -----------------------------------------------------------------------


def test_web_viewer_addresses():
    from metaworld_x.play.studio import is_loopback, network_warning, tunnel_hint, viewer_url

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert "no authentication" in network_warning("0.0.0.0") and "\n" not in network_warning("0.0.0.0")
    assert "ssh -L 8080:127.0.0.1:8080" in tunnel_hint(8080)
    assert viewer_url("localhost", 8080) == "http://127.0.0.1:8080/"
    assert viewer_url("0.0.0.0", 8081) == f"http://{socket.gethostname()}:8081/"
    assert viewer_url("::1", 8082) == "http://127.0.0.1:8082/" and viewer_url("fe80::1", 1) == "http://[fe80::1]:1/"


@pytest.mark.slow
def test_play_web_on_every_interface_warns_in_one_line_and_serves_there(capsys, monkeypatch):
    """`play --web --host 0.0.0.0`, headless, for a few steps: the warning, the URL, the socket on every interface."""
    if not (EXPERTS_DIR / "walk" / "policy.json").is_file():
        pytest.skip("needs the shipped walk expert")
    from metaworld_x.play import studio

    runs, start = [], studio.start

    def recorded(*args, **kwargs):
        runs.append(start(*args, **kwargs))
        runs.append(runs[-1].bound_address)  # read while the viewer is up
        return runs[0]

    monkeypatch.setattr(studio, "start", recorded)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = main(["play", "--expert", "walk", "--web", "--host", "0.0.0.0", "--port", str(port), "--steps", "5"])
    out = capsys.readouterr().out
    assert code == 0
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warnings == [studio.network_warning("0.0.0.0")]
    assert f"web viewer: http://{socket.gethostname()}:{port}/" in out and "ssh -L" not in out
    assert runs[1][:2] == ("0.0.0.0", port)
    assert "return: " in out  # the episode in progress when the loop ended


def _one_line_error(capsys, args, *fragments):
    code = main(["play", "--expert", "walk", *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


@pytest.mark.parametrize(
    "args,expected",
    [
        (("--host", "0.0.0.0"), "--host and --port say where --web serves the viewer; add --web"),
        (("--web", "--video", "out.mp4"), "--web serves the run live while --video records it headless"),
        (("--web", "--classic"), "--classic asks for another; choose one"),
        (("--web", "--port", "70000"), "--port 70000 is not a port number"),
        (("--web", "--host", "300.1.2.3"), "--host '300.1.2.3' is not an address of this machine"),
    ],
)
def test_bad_web_options_are_one_line(capsys, args, expected):
    _one_line_error(capsys, args, expected)


def test_a_taken_port_is_one_line(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _one_line_error(capsys, ("--web", "--port", str(port)), f"cannot listen on port {port} on 127.0.0.1")
