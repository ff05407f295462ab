"""The project describes itself, not how it was made: no tracked text names a numbered round of work, and no
tracked image is too large to read in a browser or clone cheaply."""

import re
import subprocess

import pytest

from metaworld_x.paths import PROJECT_DIR

# The word for a numbered round of work, then an optional plural, dash or space and a digit: the story of a
# round of work belongs in git log. Spelt in two parts here so that this file does not match itself.
WORD = b"sess" + b"ion"
ROUND_OF_WORK = re.compile(WORD + rb"s?[ -]?[0-9]", re.IGNORECASE)
IMAGE_SUFFIXES = (".gif", ".png", ".jpg", ".jpeg", ".webp")
MAX_IMAGE_BYTES = 1_500_000


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
    for text in (b"(%s 22)", b"the %s-39 expert", b"%ss 28-29", b"%s4"):
        assert ROUND_OF_WORK.search(text % WORD), text
    assert ROUND_OF_WORK.search(b"S" + WORD[1:] + b" 4")
    for text in (b"a training %s", b"%ss of play", b"a %s, then 2 more"):
        assert not ROUND_OF_WORK.search(text % WORD), text
        assert not ROUND_OF_WORK.search(text), text


def test_no_tracked_image_is_over_its_size_limit():
    large = [f"{path.relative_to(PROJECT_DIR)}: {path.stat().st_size / 1e6:.1f} MB" for path in _tracked_files()
             if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file() and path.stat().st_size > MAX_IMAGE_BYTES]
    assert not large, f"images over {MAX_IMAGE_BYTES / 1e6} MB (re-encode smaller):\n" + "\n".join(large)
