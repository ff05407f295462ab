"""The command line and the package import, run as a user would."""

import subprocess
import sys

import pytest


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "metaworld_x.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_import_pulls_in_no_torch_transformers_or_brax():
    code = (
        "import sys, metaworld_x; heavy = [m for m in ('torch', 'transformers', 'brax', 'jax') if m in sys.modules];"
        " print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("egl_found, expected", [(True, "egl"), (False, "unset")])
def test_headless_import_chooses_egl_only_where_libegl_exists(egl_found, expected):
    """Choosing EGL without libEGL made `import mujoco` itself fail on a bare GPU server."""
    import os

    code = (
        "import ctypes.util; real = ctypes.util.find_library;"
        f" ctypes.util.find_library = lambda name: ('libEGL.so.1' if {egl_found} else None) if name == 'EGL' else real(name);"
        " import os, metaworld_x, mujoco; print(os.environ.get('MUJOCO_GL', 'unset'))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip().splitlines()[-1] == expected


def test_info_prints_the_robot_with_19_actuators():
    result = _run("info")
    assert result.returncode == 0, result.stderr
    assert "nu 19" in result.stdout
    assert "left_hip_yaw" in result.stdout and "carry" in result.stdout


def test_snapshot_renders_a_png(tmp_path):
    import imageio.v3 as iio

    out = tmp_path / "robot.png"
    result = _run("snapshot", "--out", str(out), "--width", "320", "--height", "240")
    assert result.returncode == 0, result.stderr
    image = iio.imread(out)
    assert image.shape == (240, 320, 3) and image.std() > 10


@pytest.mark.parametrize(
    "args,expected",
    [
        (("snapshot", "--scene", "kitchen"), "unknown scene 'kitchen'"),
        (("info", "--robot-path", "/no/such/h1.xml"), "robot MJCF not found"),
        (("info", "--variant", "h2"), "unknown robot variant"),
    ],
)
def test_bad_input_is_one_line_without_traceback(args, expected):
    result = _run(*args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_malformed_mjcf_is_one_line_without_traceback(tmp_path):
    bad = tmp_path / "h1.xml"
    bad.write_text("<mujoco><worldbody><body")
    result = _run("info", "--robot-path", str(bad))
    assert result.returncode == 2
    assert "cannot load robot MJCF" in result.stderr and str(bad) in result.stderr
    assert "Traceback" not in result.stderr


def test_train_expert_help_names_every_expert_in_the_library():
    import re

    from metaworld_x.experts.specs import EXPERTS

    help_text = _run("train", "expert", "--help").stdout
    named = set(re.findall(r"[a-z_]+", help_text.split("Expert skill:")[1].split("with --clip")[0]))
    assert set(EXPERTS) <= named, f"train expert --help leaves out {sorted(set(EXPERTS) - named)}"
