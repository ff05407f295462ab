"""Bad input to `metaworld-x`, one table: each is one line on stderr, exit status 2, no traceback, and no file left.

The classes: a command line the parser rejects (an unknown option, a value of the wrong type, a missing argument,
an invalid choice), an unreadable input file (a cut-short .npz, a policy.json that is not JSON, an expert built for
another task or another skill, non-finite weights or actions), an output that cannot be written (a read-only
folder, a file where a folder should be), checked before any work starts, and a number out of range. The
commands that would write into the shipped folders (experts/, router/, assets/) write there only when told to.
Every file a case needs is made here, from the repository's own experts and clips.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metaworld_x.cli import main
from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR

FLAGSHIP = "walk to the box, pick it up and carry it to the table"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The inputs the cases read, made once: damaged files, and copies of the shipped walk expert altered."""
    from flax import serialization

    root = tmp_path_factory.mktemp("inputs")
    clip = MOTIONS_DIR.joinpath("walk.npz").read_bytes()
    (root / "cut_clip.npz").write_bytes(clip[: len(clip) // 2])
    rng = np.random.default_rng(0)  # three joints spanning about a metre: human-sized, so the loader takes it
    np.savez(root / "joints.npz", joints=rng.uniform(0, 1, (20, 3, 3)), joint_names=np.array(["a", "b", "c"]), fps=30.0)
    joints = (root / "joints.npz").read_bytes()
    (root / "cut_joints.npz").write_bytes(joints[: len(joints) // 2])

    def expert(name, change_arrays=None, change_record=None):
        folder = root / name / "walk"
        folder.mkdir(parents=True)
        for file in ("policy.json", "policy.msgpack", "spec.json"):
            shutil.copy(EXPERTS_DIR / "walk" / file, folder / file)
        if change_arrays is not None:
            arrays = serialization.msgpack_restore((folder / "policy.msgpack").read_bytes())
            change_arrays(arrays)
            (folder / "policy.msgpack").write_bytes(serialization.msgpack_serialize(arrays))
        if change_record is not None:
            (folder / "policy.json").write_text(change_record((folder / "policy.json").read_text()))
        return folder

    def fewer_inputs(arrays):  # an expert trained when the task gave 200 observation entries
        arrays["obs_mean"], arrays["obs_std"] = arrays["obs_mean"][:200], arrays["obs_std"][:200]
        arrays["weights"]["0"] = arrays["weights"]["0"][:200]

    def nan_weights(arrays):
        arrays["weights"]["0"] = np.full_like(arrays["weights"]["0"], np.nan)

    def huge_weights(arrays):  # finite, but the layers overflow to inf - inf: NaN actions
        for key in arrays["weights"]:
            arrays["weights"][key] = (arrays["weights"][key] * 1e30).astype(np.float32)

    def record_of_200(text):
        return json.dumps({**json.loads(text), "observation_size": 200})

    broken_router = root / "broken_router" / "stand"
    broken_router.mkdir(parents=True)
    (broken_router / "router.json").write_text('{"task": "stand", "instruction": ')

    return {
        "root": root,
        "broken_router": broken_router.parent,
        "cut_clip": root / "cut_clip.npz",
        "joints": root / "joints.npz",
        "cut_joints": root / "cut_joints.npz",
        "walk": expert("copy"),
        "broken_json": expert("broken_json", change_record=lambda text: text[: len(text) // 2]),
        "old_inputs": expert("old_inputs", fewer_inputs, record_of_200),
        "nan_weights": expert("nan_weights", nan_weights),
        "huge_weights": expert("huge_weights", huge_weights),
    }


@pytest.fixture
def out(tmp_path, monkeypatch):
    """Where the cases write, the working folder among them: a writable folder, a read-only one, and a regular
    file that stands where a folder should be."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "blocker").write_text("a file, not a folder")
    read_only = work / "read_only"
    read_only.mkdir()
    locked = _lock(read_only)
    monkeypatch.chdir(work)
    yield {"work": work, "read_only": read_only if locked else None, "blocker": work / "blocker"}
    if locked:
        _unlock(read_only)


def _lock(folder: Path) -> bool:
    """Make `folder` unwritable for this process: root writes anywhere a mode allows nothing, but not in an
    immutable folder. False where neither works."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    else:
        folder.chmod(0o555)
        done = True
    return done and not os.access(folder, os.W_OK)


def _unlock(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o755)


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# (case id, command line with {placeholders} filled from `files` and `out`, what the one line must say)
CASES = [
    # unreadable inputs
    ("cut-clip-show", "motion show {cut_clip} --video v.mp4", "not a readable clip .npz"),
    ("cut-joints-retarget", "motion retarget {cut_joints} --skill walk --out c.npz", "cannot read the .npz file"),
    ("policy-json-not-json-eval", "eval expert walk --expert-dir {broken_json} --episodes 1 --steps 3",
     "policy record is not valid JSON"),
    ("policy-json-not-json-play", "play --expert walk --experts-dir {broken_json.parent} --steps 1 --video v.mp4",
     "policy record is not valid JSON"),
    ("router-json-not-json-play", "play stand --router-dir {broken_router} --steps 1 --video v.mp4",
     "the router record is not valid JSON"),
    ("expert-for-old-inputs", "eval expert walk --expert-dir {old_inputs} --episodes 1 --steps 3",
     "reads 200 observation entries but its task now gives"),
    ("nan-weights", "eval expert walk --expert-dir {nan_weights} --episodes 1 --steps 3", "non-finite"),
    ("nan-actions", "eval expert walk --expert-dir {huge_weights} --episodes 1 --steps 3", "non-finite actions"),
    ("folder-of-another-skill", "eval expert run --expert-dir {walk} --episodes 1 --steps 3",
     "holds the 'walk' expert"),
    ("non-latin-instruction", "play 走到箱子那里，把它拿起来 --headless --steps 1", "non-Latin script"),
    # outputs that cannot be written, refused before the work
    ("retarget-out-read-only", "motion retarget {joints} --skill walk --out {read_only}/c.npz", "is not writable"),
    ("retarget-out-under-a-file", "motion retarget {joints} --skill walk --out {blocker}/c.npz",
     "is a file, not a folder"),
    ("retarget-out-not-npz", "motion retarget {joints} --skill walk --out c.txt", "must end in .npz"),
    ("play-video-read-only", "play --expert walk --video {read_only}/v.mp4", "is not writable"),
    ("play-gif-under-a-file", "play --expert walk --gif {blocker}/v.gif", "is not a folder"),
    ("snapshot-read-only", "snapshot --out {read_only}/s.png", "is not writable"),
    ("snapshot-under-a-file", "snapshot --out {blocker}/s.png", "is a file, not a folder"),
    ("show-video-read-only", "motion show walk --video {read_only}/v.mp4", "is not writable"),
    ("eval-json-out-under-a-file", "eval expert walk --episodes 1 --steps 3 --json-out {blocker}/m.json",
     "is a file, not a folder"),
    ("eval-json-out-read-only", "eval expert walk --episodes 1 --steps 3 --json-out {read_only}/m.json",
     "is not writable"),
    ("eval-router-json-out-read-only", "eval router --task stand --episodes 1 --json-out {read_only}/r.json",
     "is not writable"),
    ("train-run-dir-read-only", "train expert walk --num-envs 8 --total-env-steps 160 --run-dir {read_only}/run",
     "is not writable"),
    ("train-out-is-a-file", "train expert walk --num-envs 8 --total-env-steps 160 --run-dir run --out {blocker}",
     "is a file; name a folder"),
    ("train-router-out-read-only", "train router --run-dir run --out {read_only}", "is not writable"),
    # numbers out of range
    ("seed-overflow", "eval expert walk --seed 99999999999999999999999", "--seed must be 0 to 2147483647"),
    ("negative-seed", "play --expert walk --seed -1", "--seed must be 0 to"),
    ("steps-overflow", "play --expert walk --steps 99999999999", "--steps must be -2147483647 to 2147483647"),
    ("nan-offset", "play --expert walk --motion-offset nan", "--motion-offset must be a finite number"),
    ("zero-width", "snapshot --width 0", "--width and --height must be 16 to 4096 pixels"),
    ("video-beyond-the-framebuffer", "motion show walk --video v.mp4 --width 4000", "at most 1280x720"),
    ("zero-loops", "motion show walk --loops 0", "--loops must be at least 1"),
    ("retarget-start-after-end", "motion retarget {joints} --skill walk --out c.npz --start 2 --end 1",
     "0 <= --start < --end"),
    ("router-zero-episodes", "eval router --episodes 0", "--episodes must be at least 1"),
    ("negative-eval-every", "train expert walk --eval-every -1", "--eval-every must be 0"),
    # the shipped folders are written only when asked
    ("retarget-without-out", "motion retarget {joints} --skill walk", "--out FILE.npz (or --force"),
    # command lines the parser rejects, each pointing at its subcommand's --help
    ("unknown-command", "evl expert walk",
     "'evl' is not a command: info, snapshot, motion, train, eval or play; see metaworld-x --help"),
    ("eval-without-its-command", "eval", "missing a command: expert, router or scripted; see metaworld-x eval --help"),
    ("train-unknown-option", "train expert walk --bogus",
     "unknown option --bogus; see metaworld-x train expert --help"),
    ("train-without-skill", "train expert --num-envs 8", "missing SKILL; see metaworld-x train expert --help"),
    ("train-fractional-envs", "train expert walk --num-envs 1.5", "--num-envs must be an integer, not '1.5'"),
    ("train-invalid-backend", "train expert walk --backend gpu",
     "--backend must be cpu, mjx or None, not 'gpu'; see metaworld-x train expert --help"),
    ("eval-episodes-not-a-number", "eval expert walk --episodes abc",
     "--episodes must be an integer, not 'abc'; see metaworld-x eval expert --help"),
    ("eval-seed-with-equals", "eval expert walk --seed=one", "--seed must be an integer, not 'one'"),
    ("eval-extra-argument", "eval expert walk run", "unexpected argument run; see metaworld-x eval expert --help"),
    ("eval-router-invalid-plan", "eval router --plan lqr",
     "--plan must be mppi or none, not 'lqr'; see metaworld-x eval router --help"),
    ("eval-router-unknown-option", "eval router --task stand --episode 1",
     "unknown option --episode; see metaworld-x eval router --help"),
    ("play-steps-not-a-number", "play --expert walk --steps x",
     "--steps must be an integer, not 'x'; see metaworld-x play --help"),
    ("play-offset-not-a-number", "play --expert walk --motion-offset half",
     "--motion-offset must be a number, not 'half'"),
    ("play-option-without-value", "play --expert walk --steps", "--steps needs a value; see metaworld-x play --help"),
    ("motion-check-without-file", "motion check", "missing FILE; see metaworld-x motion check --help"),
    ("motion-check-unknown-option", "motion check walk --strict",
     "unknown option --strict; see metaworld-x motion check --help"),
    ("retarget-without-file-or-skill", "motion retarget",
     "missing FILE and --skill; see metaworld-x motion retarget --help"),
]


@pytest.mark.parametrize("case, line, expected", CASES, ids=[case[0] for case in CASES])
def test_bad_input_is_one_line_with_status_2_and_leaves_nothing(case, line, expected, files, out, capsys):
    if "{read_only}" in line and out["read_only"] is None:
        pytest.skip("no way to make a folder read-only here")
    places = {**files, **out}
    args = [word.format(**places) for word in line.split()]
    before = _tree(out["work"]), _tree(files["root"])
    code = main(args)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]
    assert (_tree(out["work"]), _tree(files["root"])) == before, "a file was left behind"


@pytest.mark.parametrize("line", ["--help", "eval expert --help", "motion check --help"])
def test_help_is_tyros_own(line, capsys):
    """The parse errors are one line; asking for help still prints tyro's usage and options, with status 0."""
    with pytest.raises(SystemExit) as exit_:
        main(line.split())
    printed = capsys.readouterr()
    assert exit_.value.code == 0 and printed.err == ""
    assert printed.out.startswith(f"usage: metaworld-x {line.removesuffix('--help')}".rstrip())
    assert "options" in printed.out


def test_a_shortened_evaluation_does_not_claim_the_goals_and_its_json_folder_is_made(files, out, capsys):
    """`--episodes 1 --steps 3` ran too little to judge goals defined on 10 whole episodes; --json-out's missing
    folders are made, as for every output."""
    target = out["work"] / "new" / "folder" / "walk.json"
    code = main(["eval", "expert", "walk", "--expert-dir", str(files["walk"]), "--episodes", "1", "--steps", "3",
                 "--json-out", str(target)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "goals: not checked (shortened run)" in printed and "goals: met" not in printed
    assert json.loads(target.read_text())["episodes"] == 1


def test_training_ships_under_its_run_folder_unless_told_otherwise(out, capsys):
    """With no --out the expert goes to <run-dir>/expert, not experts/<skill>: a file there is what refuses it."""
    (out["work"] / "run").mkdir()
    (out["work"] / "run" / "expert").write_text("a file where the default ship folder goes")
    code = main(["train", "expert", "walk", "--num-envs", "8", "--total-env-steps", "160", "--run-dir", "run"])
    assert code == 2
    assert capsys.readouterr().err.strip() == "error: --out run/expert is a file; name a folder"


def test_router_plots_go_under_runs_unless_told_otherwise(out, capsys):
    """With no --plots-dir the weight plots go to runs/eval_router/<task>/, not the shipped router/<task>/."""
    (out["work"] / "runs").write_text("a file where the default plots folder goes")
    code = main(["eval", "router", "--task", "stand", "--episodes", "1"])
    assert code == 2
    assert capsys.readouterr().err.strip() == "error: --plots-dir runs/eval_router/stand: runs is a file, not a folder"
