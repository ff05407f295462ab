"""`metaworld-x play --web` in a real headless browser: the page loads, the scene moves, a typed instruction re-plans.

The session plays an untrained router over two copies of the walk expert in
the `stand` scene; typing `run` (the wording a second router, for the `run`
task, was saved with) must rebuild the scene in place and change the task the
session reports. Chromium is Debian's (`apt-get install chromium`) or Playwright's
(`playwright install chromium`), driven by Playwright; without one the test
skips and says which is missing.
"""

import os
import shutil
import socket
import threading
import time

import jax
import numpy as np
import pytest

from metaworld_x.paths import EXPERTS_DIR

CHROMIUM_FLAGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"]
VIEWPORT = {"width": 900, "height": 640}
SCENE_LEFT = 440
"""Pixels left of this column show the panel; right of it the 3D scene."""


def _browser() -> tuple[object, str | None]:
    """(playwright's sync_playwright, a Chromium executable or None for Playwright's own); skips without them."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the browser test needs Playwright: pip install playwright")
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return sync_playwright, shutil.which(name)
    with sync_playwright() as p:
        if os.path.isfile(p.chromium.executable_path):
            return sync_playwright, None
    pytest.skip("no Chromium found: apt-get install chromium, or playwright install chromium")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _routers(root):
    """experts/{walk, walk_twin} and untrained routers for `stand` ("stand still") and `run` ("run")."""
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
    for task, instruction in (("stand", "stand still"), ("run", "run")):
        scene, _ = build_expert_scene(make_task(task), dirs, dict(zip(experts.names, experts.specs)))
        obs_size = make_env(scene, 1, "cpu", nthread=1).reset(jax.random.PRNGKey(0)).obs["state"].shape[-1]
        router = Router(RouterConfig(hidden=(16,)), obs_size, 8, experts.names)
        meta = {"task": task, "task_env": task, "instruction": instruction, "text_embedding": [1.0] * 8}
        save_router(root / "router" / task, router, router.init(jax.random.PRNGKey(1)), experts, meta=meta)
    return experts_dir, root / "router"


def _until(condition, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def _press(page, panels, key: str, expected: str, timeout: float = 20.0) -> None:
    """Press `key` in the browser and wait until the panel's box holds `expected`.

    The remote UI applies keys in order but late when the machine is busy, so each key is awaited before the next."""
    page.keyboard.press(key)
    assert _until(lambda: panels.draft == expected, timeout), f"the box holds {panels.draft!r}, expected {expected!r}"


def _scene(png: bytes) -> np.ndarray:
    import io

    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("L"), np.float32)
    return image[40:-80, SCENE_LEFT:]  # under the menu bar, above the status bars, right of the panel


@pytest.mark.slow
def test_web_viewer_in_a_browser_shows_the_scene_and_takes_a_new_instruction(tmp_path):
    if not (EXPERTS_DIR / "walk" / "policy.json").is_file():
        pytest.skip("needs the shipped walk expert")
    sync_playwright, executable = _browser()
    from metaworld_x.cli.play import Play
    from metaworld_x.play import studio
    from metaworld_x.play.episode import EpisodeRunner
    from metaworld_x.play.live_session import warm_up
    from metaworld_x.play.scenario import router_scenario
    from metaworld_x.play.session import live_session

    experts_dir, router_dir = _routers(tmp_path)
    config = Play(instruction="stand still", experts_dir=experts_dir, router_dir=router_dir, web=True)
    runner = EpisodeRunner(router_scenario("stand still", router_dir, experts_dir))
    warm_up(runner)  # as `play` does before the viewer opens
    session = live_session(config, runner)
    session.announce = lambda line: None
    run = studio.start(session, web=True, port=_free_port())
    loop = threading.Thread(target=run.run, daemon=True)
    loop.start()
    try:
        assert run.bound_address[0] == "127.0.0.1"  # loopback unless --host says otherwise
        assert run.url == f"http://127.0.0.1:{run.port}/"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport=VIEWPORT)
            with page.expect_console_message(lambda m: "First remote draw frame" in m.text, timeout=30_000):
                page.goto(run.url)
            assert _until(lambda: session.played > 10, 20.0)
            first = _scene(page.screenshot())
            time.sleep(1.5)
            second = _scene(page.screenshot())
            assert first.std() > 10, "the scene is blank"
            assert np.abs(first - second).mean() > 0.2, "the scene does not move"

            assert _until(lambda: panels_ready(run.panels), 10.0)
            left, top, right, bottom = run.panels.instruction_box
            page.mouse.click((left + right) / 2, (top + bottom) / 2)
            # a late frame sees a key held long enough to repeat: select all, then one Backspace empties the box
            page.keyboard.press("Control+A")
            _press(page, run.panels, "Backspace", "")
            for char in "run":
                _press(page, run.panels, "Space" if char == " " else char, run.panels.draft + char)
            page.keyboard.press("Enter")
            assert _until(lambda: session.report().task == "run", 60.0), session.line
            assert session.report().instruction == "run" and session.report().title == "router run"
            steps = session.played
            assert _until(lambda: session.played > steps + 5, 20.0), "the rebuilt scene does not play"
            browser.close()
    finally:
        session.steps = session.played  # ends the control loop, which closes the viewer
        loop.join(10.0)
    assert not loop.is_alive()


def panels_ready(panels) -> bool:
    return panels.instruction_box is not None and panels.report is not None
