"""Every command in the README's and the user guides' fenced blocks is run by a test, or excluded here with the reason.

The checks:
- each command matches one rule of HOW_TESTED: run here, run by another
  test (named), or not run (why); a new command fails the first test until
  someone says how it is tested;
- every `metaworld-x` command parses with the real command line (stale
  options fail here even where running the command is too slow for a test);
- the README stays a short page for users (README_MAX_BYTES), its test
  command is the one CI runs, and every relative link in the README and the
  guides leads to a file (and a heading) that exists;
- the set-up command's `play` (the flagship task with the shipped router)
  runs in a subprocess without a display: the one line saying it runs
  headless, a video whose frames differ, the weights plot, the outcome lines,
  exit 0; and so does the tour's `play "INSTRUCTION"` of the same task, to
  --video. Only the length and size of the episode are cut (flags appended),
  to keep them to seconds.
"""

import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

from metaworld_x.paths import PROJECT_DIR, ROUTER_DIR

README = PROJECT_DIR / "README.md"
# The user guides the README links to; docs/design-notes.md holds lessons, not instructions to follow.
GUIDES = tuple(sorted(p for p in (PROJECT_DIR / "docs").glob("*.md") if p.name != "design-notes.md"))
README_MAX_BYTES = 12_288
"""Detail beyond this goes into a guide under docs/, linked from the README."""
SETUP_PLAY = "metaworld-x play"
HEADLINE_PLAY = 'metaworld-x play "walk to the box, pick it up and carry it to the table"'
CHEAPER = ("--steps", "30", "--width", "160", "--height", "96", "--no-shadows")
EXACT = "$"
"""A rule ending in this matches the whole command only (`metaworld-x play` alone is a prefix of every play)."""

# (command prefix, how it is tested); the first matching prefix wins
HOW_TESTED = (
    ("pip install", "not run: installs packages (network)"),
    ("python -m pytest", "not run: it is the test suite"),
    (SETUP_PLAY + EXACT, "run here: test_setup_play_command_runs_headless_and_records_a_varied_video"),
    (HEADLINE_PLAY, "run here: test_headline_play_command_records_the_shipped_router_to_a_video"),
    ("metaworld-x play --web", "parsed here; serves until closed: the web viewer in headless Chromium is "
     "tests/play/test_play_browser.py"),
    ("ssh -L", "not run: tunnels to another machine"),
    ("metaworld-x play --expert walk --motion walk", "run, cut to 8 steps, by "
     "tests/play/test_play.py::test_the_same_seed_plays_the_same_episode"),
    ("metaworld-x play --expert walk --steps 150 --gif", "parsed here; the --expert path with --seed runs in "
     "tests/play/test_play.py::test_the_same_seed_plays_the_same_episode"),
    ("metaworld-x train expert stand --total-env-steps 200000", "parsed here; minutes of training: the trainer's short runs are "
     "tests/experts/test_expert_training.py and tests/training/test_ppo.py"),
    ("metaworld-x eval expert stand --expert-dir runs/tour/stand", "parsed here; needs the tour's trained expert; evaluation: "
     "tests/artifacts/test_shipped_experts.py::test_every_shipped_expert_meets_its_recorded_metrics"),
    ("metaworld-x play --expert stand --experts-dir runs/tour", "parsed here; needs the tour's trained expert"),
    ("metaworld-x motion check my_hop.bvh", "parsed here; my_hop.bvh stands for the user's file; each check on a clip "
     "made to fail it: tests/motion/test_motion_check.py"),
    ("metaworld-x train expert hop --clip my_hop.bvh", "parsed here; minutes of training; a short run that eval and play "
     "load: tests/experts/test_own_motion.py::test_train_expert_with_a_clip_ships_an_expert_that_eval_and_play_load"),
    ("metaworld-x motion list --report", "run by tests/motion/test_retarget.py::test_cli_list_report_shows_every_clip"),
    ("metaworld-x motion retarget FILE.bvh", "parsed here; FILE.bvh stands for the user's file; retargeting: tests/motion/test_retarget.py"),
    ("metaworld-x motion show walk", "parsed here; rendering a clip: tests/motion/test_retarget.py (motion show --video on a short clip)"),
    ("metaworld-x train expert run --init-from experts/run", "parsed here; minutes of training; starting from a shipped "
     "policy: tests/training/test_ppo.py::test_init_from_a_shipped_policy_keeps_its_network_and_input_statistics"),
    ("metaworld-x train expert walk", "parsed here; 29 minutes of training"),
    ("metaworld-x eval expert walk", "parsed here; evaluating each shipped expert: "
     "tests/artifacts/test_shipped_experts.py::test_every_shipped_expert_meets_its_recorded_metrics"),
    ("metaworld-x eval expert hop", "parsed here; needs the trained hop expert; eval loading a short own-motion run: "
     "tests/experts/test_own_motion.py::test_train_expert_with_a_clip_ships_an_expert_that_eval_and_play_load"),
    ("metaworld-x play --expert hop", "parsed here; needs the trained hop expert; play loading a short own-motion run: "
     "tests/experts/test_own_motion.py::test_train_expert_with_a_clip_ships_an_expert_that_eval_and_play_load"),
    ("JAX_COORDINATOR_ADDRESS=127.0.0.1:1234 JAX_NUM_PROCESSES=2", "two processes on one machine, cut to 3 iterations: "
     "tests/training/test_distributed.py::test_two_processes_train_as_one_process_with_two_devices"),
    ("srun ", "not run: needs a SLURM cluster; the coordinates it sets: "
     "tests/training/test_distributed.py::test_the_coordinates_come_from_the_environment_or_a_clear_error"),
    ("metaworld-x train router", "parsed here; about 20 minutes: tests/routing/test_router_pipeline.py runs a short one"),
    ("metaworld-x eval router", "parsed here; run by tests/routing/test_router_pipeline.py"),
    ("metaworld-x eval scripted", "parsed here; run, cut to 5 steps, by "
     "tests/routing/test_sequences.py::test_eval_scripted_plays_the_state_machine_and_reports_the_handovers"),
    ("python:gymnasium-tour", "run by tests/envs/test_gym.py::test_readme_gymnasium_example_drives_the_walk_expert"),
    ("python:gymnasium-environments", "covered by tests/envs/test_gym.py (make with rgb_array, reset, step, make_vec)"),
)


def fenced_blocks(language: str) -> list[str]:
    """The bodies of the ```language blocks of the README, then of each guide, in order."""
    return [block for document in (README, *GUIDES)
            for block in re.findall(rf"^```{language}\n(.*?)^```", document.read_text(), flags=re.M | re.S)]


def shell_commands() -> list[str]:
    """Every command of the ```bash blocks: comments dropped, `a && b` split."""
    commands = []
    for block in fenced_blocks("bash"):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()  # a trailing comment (no README command quotes a '#')
            if line and not line.startswith("#"):
                commands += [part.strip() for part in line.split("&&")]
    return commands


def python_blocks() -> dict[str, str]:
    """The ```python blocks, named by what they show."""
    named = {}
    for block in fenced_blocks("python"):
        name = "python:gymnasium-tour" if "ExpertAgent" in block else "python:gymnasium-environments" if "gymnasium" in block else None
        assert name is not None, f"name this README python block in tests/test_readme.py:\n{block}"
        named[name] = block
    return named


def how_tested(command: str) -> str | None:
    def matches(rule: str) -> bool:
        return command == rule[: -len(EXACT)] if rule.endswith(EXACT) else command.startswith(rule)

    return next((how for rule, how in HOW_TESTED if matches(rule)), None)


def test_every_readme_and_guide_command_is_run_or_excluded_with_a_reason():
    commands = shell_commands() + list(python_blocks())
    assert SETUP_PLAY in commands, "the set-up play command changed; update SETUP_PLAY"
    assert HEADLINE_PLAY in commands, "the tour's play command of the flagship task changed; update HEADLINE_PLAY"
    unclassified = [c for c in commands if how_tested(c) is None]
    assert not unclassified, f"README or guide commands no test accounts for; add them to HOW_TESTED: {unclassified}"


def test_every_metaworld_x_command_in_the_readme_and_guides_parses():
    import tyro

    from metaworld_x.cli import Command

    for command in shell_commands():
        if not command.startswith("metaworld-x "):
            continue
        try:
            # the same tyro call as metaworld_x.cli.main, without running the command
            tyro.cli(Command, args=shlex.split(command)[1:], prog="metaworld-x",
                     config=(tyro.conf.OmitSubcommandPrefixes, tyro.conf.OmitArgPrefixes))
        except SystemExit as exit:
            pytest.fail(f"README or guide command does not parse (exit {exit.code}): {command}")


def test_the_readme_is_a_short_page():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, (f"README.md is {size} bytes, over {README_MAX_BYTES}: move detail into a guide"
                                      f" under docs/ and link it")


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = (PROJECT_DIR / ".ci" / "run").read_text().splitlines()
    runs = [line.strip() for line in ci if line.strip().startswith("python -m pytest")]
    assert runs == ["python -m pytest -q -rs -n 2 --dist loadfile"], runs
    assert runs[0] in shell_commands(), "the README's set-up runs the tests with the command CI runs"


def _heading_anchors(document) -> set[str]:
    """GitHub's anchors for a markdown file's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#+ (.+)$", document.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_in_the_readme_and_guides_leads_somewhere():
    broken = []
    for document in (README, *GUIDES):
        for target in re.findall(r"\]\(([^)\s]+)\)", document.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            linked = (document.parent / path).resolve() if path else document
            if not linked.exists():
                broken.append(f"{document.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _heading_anchors(linked):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


@pytest.fixture(scope="module")
def play_env(tmp_path_factory) -> dict:
    """The environment both `play` subprocesses run in: no display, and one JAX compilation cache between them.

    Both play the flagship task with the shipped router, so the second reuses the first's compiled functions:
    most of a short run is compiling (on the loaded 2-core machine the first took 66 s, the second 22 s)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL")}
    env.update(JAX_COMPILATION_CACHE_DIR=str(tmp_path_factory.mktemp("jax_cache")),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    return env


def _play(args: list[str], cwd, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "metaworld_x.cli", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def _check_outcome_and_video(stdout: str, video, shape: tuple[int, int]) -> None:
    """The outcome lines, and a video of at least 10 frames of `shape` (H, W) where no two in a row are the same."""
    import imageio.v3 as iio

    lines = stdout.splitlines()
    assert "success: true" in lines or "success: false" in lines, stdout
    assert re.search(r"^return: -?\d+\.\d+$", stdout, flags=re.M), stdout
    frames = iio.imread(video)
    assert frames.shape[0] >= 10 and frames.shape[1:] == (*shape, 3)
    assert np.abs(frames[1:].astype(int) - frames[:-1].astype(int)).max(axis=(1, 2, 3)).min() > 0, "two frames in a row are identical"


needs_router = pytest.mark.skipif(not (ROUTER_DIR / "fetch" / "router.json").is_file(), reason="needs the shipped router/fetch")


@needs_router
def test_setup_play_command_runs_headless_and_records_a_varied_video(tmp_path, play_env):
    """`metaworld-x play` alone: the flagship task's default instruction, the shipped router, headless without a display."""
    result = _play(shlex.split(SETUP_PLAY)[1:] + list(CHEAPER), tmp_path, play_env)
    lines = result.stdout.splitlines()
    headless = [line for line in lines if "headless" in line]
    assert len(headless) == 1 and "no display" in headless[0] and "play.mp4" in headless[0], result.stdout
    assert 'no instruction given: playing the default, "walk to the box, pick it up and carry it to the table"' in lines
    assert any(line.startswith("playing router fetch, seed 0: fetch scene") for line in lines), result.stdout
    _check_outcome_and_video(result.stdout, tmp_path / "play.mp4", (96, 160))
    assert (tmp_path / "play_weights.png").stat().st_size > 0


@needs_router
def test_headline_play_command_records_the_shipped_router_to_a_video(tmp_path, play_env):
    """The README's headline command, to --video with a seed: the shipped router, a varied video, outcome, weights plot."""
    args = shlex.split(HEADLINE_PLAY)[1:] + ["--video", "fetch.mp4", "--seed", "1", *CHEAPER]
    result = _play(args, tmp_path, play_env)
    assert "headless" not in result.stdout and "no instruction given" not in result.stdout  # --video asks for no window
    assert any(line.startswith("playing router fetch, seed 1: fetch scene") for line in result.stdout.splitlines())
    _check_outcome_and_video(result.stdout, tmp_path / "fetch.mp4", (96, 160))
    assert "experts: carry 0.0 s" in result.stdout.splitlines(), "the router runs carry alone from the start"
    assert (tmp_path / "fetch_weights.png").stat().st_size > 0
