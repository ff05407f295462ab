"""A non-editable install (`pip install .`) carries the robot, the motions, the shipped experts and the routers.

The package is built from a copy of the checkout and installed into a fresh virtual environment that sees this
machine's packages (`--system-site-packages`: no network), then run from an empty folder, where nothing of the
checkout is in reach: `eval expert` loads a shipped expert and its clip, `play` the shipped router and its experts.
"""

import os
import re
import shutil
import subprocess
import venv

import pytest

from metaworld_x.paths import PROJECT_DIR

# What a checkout may hold besides its sources: none of it goes into a build.
NOT_SOURCES = (".git", "runs", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".pytest_cache", ".benchmarks")


def _run(args: list, cwd, env: dict, timeout: int = 240) -> str:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(map(str, args))} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """{python, cli, env, cwd}: a venv holding metaworld-x installed from a wheel, and an empty folder to run in."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    shutil.copytree(PROJECT_DIR, source, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL")}
    # --ignore-installed: this machine's own (editable) install stays as it is, outside the venv
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--ignore-installed", "."],
         source, env)
    cwd = root / "elsewhere"
    cwd.mkdir()
    return {"python": python, "cli": root / "venv" / "bin" / "metaworld-x", "env": env, "cwd": cwd}


@pytest.mark.slow
def test_a_wheel_installs_the_package_with_its_data_and_without_previews(installed):
    code = ("import metaworld_x, metaworld_x.paths as p; print(metaworld_x.__file__); print(p.EXPERTS_DIR);"
            " print(sum(1 for f in p.DATA_DIR.rglob('*') if f.suffix in ('.gif', '.png')))")
    module, experts, previews = _run([installed["python"], "-c", code], installed["cwd"], installed["env"]).split()
    venv_dir = str(installed["python"].parent.parent)
    assert module.startswith(venv_dir) and not module.startswith(str(PROJECT_DIR)), module
    assert experts.startswith(venv_dir) and experts.endswith("/metaworld_x/_data/experts"), experts
    assert previews == "0", "GIF and PNG previews are left out of the wheel (setup.py)"


@pytest.mark.slow
def test_the_installed_command_evaluates_a_shipped_expert_and_plays_the_router_from_another_folder(installed):
    out = _run([installed["cli"], "eval", "expert", "walk", "--episodes", "1", "--steps", "50"],
               installed["cwd"], installed["env"])
    assert re.search(r"^success: [01]/1$", out, flags=re.M), out
    assert re.search(r"^task return: \d+\.\d", out, flags=re.M), out

    out = _run([installed["cli"], "play", "--steps", "50", "--video", "x.mp4", "--width", "160", "--height", "96",
                "--no-shadows"], installed["cwd"], installed["env"])
    lines = out.splitlines()
    assert any(line.startswith("playing router ") for line in lines), out
    assert "success: true" in lines or "success: false" in lines, out
    assert re.search(r"^return: -?\d+\.\d+$", out, flags=re.M), out
    video = installed["cwd"] / "x.mp4"
    assert video.is_file() and video.stat().st_size > 0, out
