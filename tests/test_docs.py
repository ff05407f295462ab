"""The project describes itself, not how it was made: no tracked text names a numbered round of work."""

import re
import subprocess

import pytest

from metaworld_x.paths import PROJECT_DIR

# "session 12", "session-40", "sessions 28-29", "Session14": the story of a round of work belongs in git log.
ROUND_OF_WORK = re.compile(rb"sessions?[ -]?[0-9]", re.IGNORECASE)


def _tracked_files():
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_DIR, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [PROJECT_DIR / name.decode() for name in listed.split(b"\0") if name]


def _is_text(data: bytes) -> bool:
    return b"\0" not in data[:8192]


def test_no_tracked_text_file_narrates_numbered_rounds_of_work():
    found = []
    for path in _tracked_files():
        if not path.is_file():
            continue  # deleted in the working tree
        data = path.read_bytes()
        if not _is_text(data):
            continue
        for number, line in enumerate(data.splitlines(), 1):
            if ROUND_OF_WORK.search(line):
                found.append(f"{path.relative_to(PROJECT_DIR)}:{number}: {line.decode(errors='replace').strip()[:120]}")
    assert not found, "say what was learnt (docs/design-notes.md), not which round of work learnt it:\n" + "\n".join(found)


def test_the_pattern_finds_rounds_of_work_and_nothing_else():
    for text in (b"(session 22)", b"the session-39 expert", b"sessions 28-29", b"Session 4"):
        assert ROUND_OF_WORK.search(text), text
    for text in (b"a training session", b"sessions of play", b"jax.distributed session"):
        assert not ROUND_OF_WORK.search(text), text

