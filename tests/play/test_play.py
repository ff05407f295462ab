"""`metaworld-x play`: missing artifacts, bad input, the router path, and the pieces of the viewer.

The end-to-end run (`play` in a subprocess without a display: the one line
saying it runs headless, a video whose frames differ, exit 0) is the README's
set-up command, run in tests/test_readme.py.
"""

import io
import shutil
import time

import jax
import mujoco
import numpy as np
import pytest

from metaworld_x.cli import main
from metaworld_x.paths import EXPERTS_DIR


def _play(capsys, *args) -> tuple[int, str, str]:
    code = main(["play", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---- missing artifacts name the command that makes them ---------------------------------


def test_missing_expert_names_the_command_that_trains_it(capsys, tmp_path):
    code, _, err = _play(capsys, "--expert", "sit", "--experts-dir", str(tmp_path))
    assert code == 2
    _one_line_error(err, "no trained expert 'sit'", "`metaworld-x train expert sit`")


def test_missing_router_names_the_command_that_trains_it(capsys, tmp_path):
    code, _, err = _play(capsys, "walk to the box, pick it up and carry it to the table", "--router-dir", str(tmp_path))
    assert code == 2
    # it suggests the first installed expert
    _one_line_error(err, "no trained router", "`metaworld-x train router`", "(or play one expert: --expert ")


def test_router_needing_an_expert_that_is_not_installed_names_the_expert_command(capsys, tmp_path):
    import json

    folder = tmp_path / "router" / "fetch"
    folder.mkdir(parents=True)
    record = {"task": "fetch", "instruction": "fetch it", "experts": [{"name": "carry", "hash": "0"}, {"name": "walk", "hash": "0"}]}
    (folder / "router.json").write_text(json.dumps(record))
    experts = tmp_path / "experts"  # walk installed, carry not
    shutil.copytree(EXPERTS_DIR / "walk", experts / "walk")
    code, _, err = _play(capsys, "fetch it", "--router-dir", str(tmp_path / "router"), "--experts-dir", str(experts))
    assert code == 2
    _one_line_error(err, "needs expert(s) carry", "`metaworld-x train expert carry`")


@pytest.mark.parametrize(
    "args,expected",
    [
        (("  ",), "the instruction is empty: say what to do"),
        (("--expert", "dance"), "unknown expert 'dance'"),
        (("--expert", "walk", "--video", "out.avi"), "--video out.avi must end in .mp4"),
        (("--expert", "walk", "--gif", "out.mp4"), "--gif out.mp4 must end in .gif"),
        (("--expert", "walk", "--steps", "0"), "--steps must be at least 1"),
        (("--expert", "walk", "--motion", "moonwalk"), "no motion clip 'moonwalk'"),
    ],
)
def test_bad_input_is_one_line(capsys, args, expected):
    code, _, err = _play(capsys, *args)
    assert code == 2
    _one_line_error(err, expected)


def test_no_instruction_plays_the_flagship_task_with_its_shipped_router():
    """`metaworld-x play` alone plays fetch's canonical instruction, which finds router/fetch by exact match."""
    import json

    from metaworld_x.cli.play import DEFAULT_INSTRUCTION, Play
    from metaworld_x.paths import ROUTER_DIR
    from metaworld_x.routing.language import CATALOG

    assert Play().task_instruction == DEFAULT_INSTRUCTION == next(t for t in CATALOG if t.name == "fetch").instruction
    assert Play(expert="walk").task_instruction == ""  # one expert follows no instruction
    assert Play(instruction="sit down").task_instruction == "sit down"
    record = ROUTER_DIR / "fetch" / "router.json"
    if record.is_file():
        assert json.loads(record.read_text())["instruction"] == DEFAULT_INSTRUCTION


@pytest.mark.skipif(not (EXPERTS_DIR / "walk" / "policy.json").is_file(), reason="needs the shipped walk expert")
def test_the_same_seed_plays_the_same_episode(capsys, tmp_path):
    """`--seed N` twice gives the same `return:` line; another seed another episode (the tour's --expert --motion
    command, cut to a few steps)."""

    def returns(seed: int) -> str:
        code, out, err = _play(capsys, "--expert", "walk", "--motion", "walk", "--seed", str(seed), "--steps", "8",
                               "--video", str(tmp_path / f"seed{seed}.mp4"), "--width", "64", "--height", "48",
                               "--no-shadows", "--no-plots")
        assert code == 0, err
        return next(line for line in out.splitlines() if line.startswith("return: "))

    first = returns(3)
    assert returns(3) == first
    assert returns(4) != first


# ---- the router path, with a small untrained router over two copies of walk ----------------


def _untrained_router(root, task: str = "stand", instruction: str = "stand still"):
    """experts/{walk, walk_twin} and router/<task>/ holding a random router for them."""
    from metaworld_x.experts.environment import make_env
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing import Router, RouterConfig, save_router
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.scene import build_expert_scene

    experts_dir = root / "experts"
    experts_dir.mkdir()
    for name in ("walk", "walk_twin"):
        (experts_dir / name).symlink_to(EXPERTS_DIR / "walk", target_is_directory=True)
    dirs = {p.name: p for p in sorted(experts_dir.iterdir())}
    experts = ExpertSet.load(dirs)
    scene, _ = build_expert_scene(make_task(task), dirs, dict(zip(experts.names, experts.specs)))
    obs_size = make_env(scene, 1, "cpu", nthread=1).reset(jax.random.PRNGKey(0)).obs["state"].shape[-1]
    router = Router(RouterConfig(hidden=(16,)), obs_size, 8, experts.names)
    meta = {"task": task, "task_env": task, "instruction": instruction, "text_embedding": [1.0] * 8}
    save_router(root / "router" / task, router, router.init(jax.random.PRNGKey(1)), experts, meta=meta)
    return experts_dir, root / "router"


@pytest.fixture(scope="module")
def untrained_router(tmp_path_factory):
    if not (EXPERTS_DIR / "walk" / "policy.json").is_file():
        pytest.skip("needs the shipped walk expert")
    return _untrained_router(tmp_path_factory.mktemp("router"))


def test_router_path_mixes_the_experts_and_plots_their_weights(capsys, tmp_path, untrained_router):
    experts_dir, router_dir = untrained_router
    video = tmp_path / "router.mp4"
    code, out, err = _play(capsys, "stand still", "--experts-dir", str(experts_dir), "--router-dir", str(router_dir),
                           "--steps", "6", "--video", str(video), "--width", "96", "--height", "64", "--no-shadows")
    assert code == 0, err
    assert "playing router stand" in out and "success: false" in out and "return: " in out
    assert video.stat().st_size > 0 and (tmp_path / "router_weights.png").stat().st_size > 0


class FakeViewer:
    """Stands in for mujoco.viewer's Handle (no window here); presses `keys[i]` at the i-th sync."""

    def __init__(self, model, data, key_callback, keys: dict):
        self.cam = mujoco.MjvCamera()
        self.user_scn = mujoco.MjvScene(model, maxgeom=100)
        self.viewport = mujoco.MjrRect(0, 0, 800, 600)
        self.key_callback, self.keys, self.syncs, self.images, self.texts = key_callback, keys, 0, [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def is_running(self):
        return self.syncs < 40

    def lock(self):
        import contextlib

        return contextlib.nullcontext()

    def sync(self):
        self.syncs += 1
        if self.syncs in self.keys:
            self.key_callback(self.keys[self.syncs])

    def set_images(self, item):
        rect, image = item
        assert image.shape[:2] == (rect.height, rect.width) and rect.left + rect.width <= self.viewport.width
        self.images.append(image)

    def set_texts(self, item):
        self.texts.append(item[2])


def test_viewer_loop_steps_pauses_and_toggles_the_router(monkeypatch, capsys, untrained_router):
    import mujoco.viewer

    from metaworld_x.play.episode import EpisodeRunner
    from metaworld_x.play.scenario import router_scenario
    from metaworld_x.play.viewer import KEY_ENTER, KEY_SPACE, run_viewer

    experts_dir, router_dir = untrained_router
    runner = EpisodeRunner(router_scenario("stand still", router_dir, experts_dir), seed=0)
    keys = {2: KEY_ENTER, 4: KEY_SPACE, 7: KEY_SPACE}  # toggle, then pause for three frames
    viewers = []
    monkeypatch.setattr(mujoco.viewer, "launch_passive",
                        lambda m, d, key_callback, **ui: viewers.append(FakeViewer(m, d, key_callback, keys)) or viewers[-1])
    run_viewer(runner, "stand still", steps=6)
    viewer, out = viewers[0], capsys.readouterr().out
    assert runner.log.steps == 6 and viewer.syncs == 9  # 6 steps + 3 paused frames
    assert "single expert: walk" in out and runner.scenario.controller.mode.endswith("alone")
    assert set(np.unique(np.stack(runner.log.weights[2:]))) <= {0.0, 1.0}  # one expert alone after the toggle
    assert viewer.images and any("paused" in text for text in viewer.texts)


# ---- the pieces -------------------------------------------------------------------------


def test_keys_pause_reset_slow_down_and_toggle():
    from metaworld_x.play.viewer import KEY_BACKSPACE, KEY_ENTER, KEY_EQUAL, KEY_MINUS, KEY_SPACE, Controls

    controls = Controls()
    controls.on_key(KEY_SPACE)
    assert controls.paused
    controls.on_key(KEY_MINUS)
    controls.on_key(KEY_MINUS)
    assert controls.speed == 0.25
    for _ in range(10):
        controls.on_key(KEY_EQUAL)
    assert controls.speed == 2.0
    controls.on_key(KEY_BACKSPACE)
    controls.on_key(KEY_ENTER)
    assert controls.reset and controls.toggle
    controls.on_key(ord("W"))  # MuJoCo's own key (wireframe): ignored here
    assert controls.paused


def test_display_problem_without_display(monkeypatch):
    from metaworld_x.play.viewer import display_problem

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert "no display" in display_problem()
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setenv("MUJOCO_GL", "egl")
    assert "off-screen" in display_problem()


def test_prompt_thread_delivers_typed_instructions_in_order():
    from metaworld_x.play.prompt import InstructionPrompt

    prompt = InstructionPrompt(stream=io.StringIO("sit down\n\n  walk to the door \n")).start()
    seen, deadline = [], time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        line = prompt.poll()
        if line is not None:
            seen.append(line)
    assert seen == ["sit down", "walk to the door"] and prompt.poll() is None


def test_an_unreadable_stdin_stops_the_prompt_quietly():
    from metaworld_x.play.prompt import InstructionPrompt

    closed = io.StringIO("sit down\n")
    closed.close()  # readline raises ValueError, as a captured stdin raises OSError
    prompt = InstructionPrompt(stream=closed).start()
    prompt._thread.join(timeout=5)
    assert not prompt._thread.is_alive() and prompt.poll() is None


def test_weights_panel_names_the_dominant_expert_and_highlights_its_bar():
    from metaworld_x.play.overlay import dominant, stamp, weights_panel

    names = ("stand", "walk", "carry")
    panel = weights_panel(names, np.array([0.2, 0.7, 0.1]), "router")
    assert dominant(names, np.array([0.2, 0.7, 0.1])) == "walk"
    assert panel.ndim == 3 and panel.dtype == np.uint8
    other = weights_panel(names, np.array([0.7, 0.2, 0.1]), "router")
    assert not np.array_equal(panel, other)
    frame = np.zeros((120, 400, 3), np.uint8)
    assert stamp(frame, panel).shape == frame.shape and stamp(frame, panel).any()


def test_weights_panel_shows_only_the_experts_with_weight_heaviest_first():
    from metaworld_x.play.overlay import ROW_HEIGHT, weights_panel

    names = tuple(f"expert_{i}" for i in range(11))
    one = weights_panel(names, np.eye(11)[3], "router")
    assert one.shape[0] == ROW_HEIGHT * 3 + 8  # the title, the dominant's name and one bar, not eleven
    mixed = weights_panel(names, np.array([0.5, 0.3, 0.2] + [0.0] * 8), "router")
    assert mixed.shape[0] == ROW_HEIGHT * 5 + 8
    spread = weights_panel(names, np.full(11, 1 / 11), "router", rows=4)
    assert spread.shape[0] == ROW_HEIGHT * 7 + 8  # four bars and a line saying how many more


def test_video_files_are_written_whole(tmp_path):
    import imageio.v3 as iio

    from metaworld_x.play.video import VideoSink

    frames = [np.full((48, 64, 3), 10 * i, np.uint8) for i in range(6)]
    sink = VideoSink(25, tmp_path / "a.mp4", tmp_path / "a.gif")
    for frame in frames:
        sink.add(frame)
    assert sorted(p.name for p in sink.close()) == ["a.gif", "a.mp4"]
    assert iio.imread(tmp_path / "a.mp4").shape[0] == 6
    assert len(list(tmp_path.glob(".*tmp*"))) == 0


def test_ghost_is_translucent_and_follows_its_clip():
    from metaworld_x.play.ghost import GHOST_RGBA, Ghost, load_reference
    from metaworld_x.scene import build_model

    model = build_model("floor", "h1")
    ghost = Ghost(model, load_reference("walk", model), offset=1.0, name="walk")
    scene = mujoco.MjvScene(model, maxgeom=500)
    ghost.pose(0.0)
    start = ghost.data.xpos[model.body("pelvis").id].copy()
    ghost.draw(scene)
    assert scene.ngeom > 10 and all(scene.geoms[i].rgba[3] == GHOST_RGBA[3] for i in range(scene.ngeom))
    ghost.pose(1.0)
    moved = ghost.data.xpos[model.body("pelvis").id]
    assert moved[0] - start[0] > 0.3 and moved[1] == pytest.approx(start[1], abs=0.2)  # walks forward, keeps its lane


def test_tracking_error_and_weights_plots(tmp_path):
    from metaworld_x.play.plots import plot_tracking_error
    from matplotlib.colors import to_rgba

    from metaworld_x.routing.curves import expert_colours, plot_weights

    errors = np.abs(np.random.default_rng(0).normal(0.03, 0.01, (50, 3)))
    errors[:, 0] = 0.0  # the root: zero by construction, left out
    path = plot_tracking_error(("pelvis", "left_foot", "right_hand"), errors, 0.02, tmp_path / "e.png")
    weights = np.random.default_rng(1).dirichlet(np.ones(3), 50)[:, None, :]
    marks = {"switches": [(0, 0.0), (2, 0.5)], "subgoals": [("arrive", 0.5), ("seated", None)]}
    assert path.stat().st_size > 0 and plot_weights(tmp_path / "w.png", weights, ("a", "b", "c"), 0.02, "w", **marks).stat().st_size > 0
    for count in (3, 11, 14):  # one colour per expert, however many are installed
        assert len({to_rgba(c) for c in expert_colours(count)}) == count
