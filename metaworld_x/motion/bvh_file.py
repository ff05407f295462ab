"""The BVH file format: its hierarchy and frames, read as written, checked line by line.

A hand parser, not `bvhio`: bvhio loops forever on a truncated MOTION section and answers a short frame line
with a bare IndexError, naming neither the file nor the line. Every error here names the file and the line.
End Sites become joints named `<parent>_end` (head top, toe and finger tips). Units, axes and the meaning of
the channels are left to `bvh.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metaworld_x.errors import UserError

POSITION_CHANNELS = {"Xposition": 0, "Yposition": 1, "Zposition": 2}
"""Position channel names and the axis each sets."""
ROTATION_CHANNELS = {"Xrotation": "X", "Yrotation": "Y", "Zrotation": "Z"}
"""Rotation channel names and the axis each turns about."""


@dataclass(frozen=True)
class BvhJoint:
    """One joint (or End Site) of a BVH hierarchy.

    Attributes:
      name: the name in the file; End Sites are `<parent>_end`.
      parent: index of the parent joint in hierarchy order, -1 for the root.
      offset: [3] offset from the parent, file units and axes.
      channels: channel names in file order; empty for an End Site.
      first_column: column of the first channel in a frame line.
    """

    name: str
    parent: int
    offset: np.ndarray
    channels: tuple[str, ...]
    first_column: int


@dataclass(frozen=True)
class BvhFile:
    """The contents of a BVH file, before any interpretation of units or axes.

    Attributes:
      joints: hierarchy in file order (parents before children).
      frames: [T, C] channel values, one row per frame line.
      frame_time: seconds per frame.
    """

    joints: tuple[BvhJoint, ...]
    frames: np.ndarray
    frame_time: float


def _error(path: Path, line: int, problem: str) -> UserError:
    return UserError(f"{path}, line {line}: {problem}")


class _Tokens:
    """The hierarchy's words with their line numbers, read front to back."""

    def __init__(self, path: Path, words: list[tuple[str, int]], end_line: int):
        self.path, self.words, self.end_line, self.at = path, words, end_line, 0

    def peek(self) -> str | None:
        return self.words[self.at][0] if self.at < len(self.words) else None

    def take(self) -> tuple[str, int]:
        if self.at >= len(self.words):
            raise _error(self.path, self.end_line, "the HIERARCHY section ends inside a joint (missing '}'?)")
        self.at += 1
        return self.words[self.at - 1]

    def expect(self, word: str) -> int:
        found, line = self.take()
        if found != word:
            raise _error(self.path, line, f"expected {word!r}, found {found!r}")
        return line

    def numbers(self, count: int, what: str) -> np.ndarray:
        values = []
        for _ in range(count):
            word, line = self.take()
            try:
                values.append(float(word))
            except ValueError:
                raise _error(self.path, line, f"{what} needs {count} numbers, found {word!r}") from None
        return np.array(values)


def parse_bvh(path: Path) -> BvhFile:
    """Read a BVH file's hierarchy and frames, checking each line; errors name the line."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read the BVH file ({error})") from None
    motion_line = next((i for i, line in enumerate(lines) if line.split()[:1] == ["MOTION"]), None)
    if motion_line is None:
        raise _error(path, len(lines), "no MOTION section (a line 'MOTION' after the hierarchy)")
    words = [(word, number) for number, line in enumerate(lines[:motion_line], 1) for word in line.split()]
    joints = _parse_hierarchy(_Tokens(path, words, motion_line + 1))
    frames, frame_time = _parse_motion(path, lines, motion_line, joints)
    return BvhFile(joints=tuple(joints), frames=frames, frame_time=frame_time)


def _parse_hierarchy(tokens: _Tokens) -> list[BvhJoint]:
    if tokens.peek() != "HIERARCHY":
        word, line = tokens.words[0] if tokens.words else ("nothing", tokens.end_line)
        raise _error(tokens.path, line, f"a BVH file starts with 'HIERARCHY', found {word!r}")
    tokens.take()
    tokens.expect("ROOT")
    joints: list[BvhJoint] = []
    _parse_joint(tokens, tokens.take()[0], -1, joints, 0)
    if tokens.peek() is not None:
        word, line = tokens.take()
        raise _error(tokens.path, line, f"expected 'MOTION' after the root joint, found {word!r}")
    return joints


def _parse_joint(tokens: _Tokens, name: str, parent: int, joints: list[BvhJoint], column: int) -> int:
    """Append the joint `name` and its subtree to `joints`; return the next free channel column."""
    tokens.expect("{")
    tokens.expect("OFFSET")
    offset = tokens.numbers(3, "OFFSET")
    channels: tuple[str, ...] = ()
    if tokens.peek() == "CHANNELS":
        channels = _parse_channels(tokens)
    index = len(joints)
    joints.append(BvhJoint(name, parent, offset, channels, column))
    column += len(channels)
    while True:
        word, line = tokens.take()
        if word == "JOINT":
            column = _parse_joint(tokens, tokens.take()[0], index, joints, column)
        elif word == "End":
            tokens.expect("Site")
            tokens.expect("{")
            tokens.expect("OFFSET")
            end_offset = tokens.numbers(3, "OFFSET")
            tokens.expect("}")
            joints.append(BvhJoint(_end_site_name(name, joints), index, end_offset, (), column))
        elif word == "}":
            return column
        else:
            raise _error(tokens.path, line, f"expected JOINT, End Site or '}}' in joint {name!r}, found {word!r}")


def _parse_channels(tokens: _Tokens) -> tuple[str, ...]:
    line = tokens.expect("CHANNELS")
    word, _ = tokens.take()
    if not word.isdigit():
        raise _error(tokens.path, line, f"CHANNELS needs a count, found {word!r}")
    channels = []
    for _ in range(int(word)):
        channel, channel_line = tokens.take()
        if channel not in POSITION_CHANNELS and channel not in ROTATION_CHANNELS:
            raise _error(
                tokens.path, channel_line,
                f"unknown channel {channel!r} (CHANNELS {word} on line {line} lists fewer names?)",
            )
        channels.append(channel)
    return tuple(channels)


def _end_site_name(parent: str, joints: list[BvhJoint]) -> str:
    taken = {joint.name for joint in joints}
    name, suffix = f"{parent}_end", 1
    while name in taken:
        suffix += 1
        name = f"{parent}_end{suffix}"
    return name


def _parse_motion(
    path: Path, lines: list[str], motion_line: int, joints: list[BvhJoint]
) -> tuple[np.ndarray, float]:
    """[T, C] frame values and the frame time from the lines after 'MOTION' (index motion_line)."""
    rows = [(number, line.split()) for number, line in enumerate(lines[motion_line:], motion_line + 1)]
    rows = [(number, words) for number, words in rows if words]
    if rows[0][1] != ["MOTION"]:
        raise _error(path, rows[0][0], f"expected 'MOTION' alone on its line, found {' '.join(rows[0][1])!r}")
    if len(rows) < 3:
        raise _error(path, len(lines), "MOTION needs 'Frames: N' and 'Frame Time: SECONDS' lines")
    (count_line, count_words), (time_line, time_words) = rows[1], rows[2]
    if len(count_words) != 2 or count_words[0] != "Frames:" or not count_words[1].isdigit():
        raise _error(path, count_line, f"expected 'Frames: N', found {' '.join(count_words)!r}")
    if len(time_words) != 3 or time_words[:2] != ["Frame", "Time:"] or not _is_positive(time_words[2]):
        raise _error(path, time_line, f"expected 'Frame Time: SECONDS', found {' '.join(time_words)!r}")
    frame_count, frame_time = int(count_words[1]), float(time_words[2])
    if frame_count == 0:
        raise _error(path, count_line, "the clip has no frames")
    width = sum(len(joint.channels) for joint in joints)

    frame_rows = rows[3:]
    for index, (number, words) in enumerate(frame_rows):
        if index == frame_count:
            raise _error(path, number, f"more frame lines than 'Frames: {frame_count}' on line {count_line}")
        if len(words) != width:
            raise _error(
                path, number,
                f"frame {index} has {len(words)} values, but the hierarchy declares {width} channels",
            )
    if len(frame_rows) < frame_count:
        last = frame_rows[-1][0] if frame_rows else time_line
        raise _error(
            path, last + 1,
            f"the MOTION section ends after {len(frame_rows)} frames, but line {count_line} says "
            f"'Frames: {frame_count}' (truncated file?)",
        )
    try:
        frames = np.array([words for _, words in frame_rows], dtype=np.float64).reshape(frame_count, width)
    except ValueError:
        number, word = _first_non_number(frame_rows)
        raise _error(path, number, f"non-numeric value {word!r} in a frame line") from None
    bad = np.argwhere(~np.isfinite(frames))
    if len(bad):
        raise _error(path, frame_rows[bad[0][0]][0], f"non-finite value {frames[tuple(bad[0])]} in a frame line")
    return frames, frame_time


def _is_positive(word: str) -> bool:
    try:
        value = float(word)
    except ValueError:
        return False
    return math.isfinite(value) and value > 0


def _first_non_number(rows: list[tuple[int, list[str]]]) -> tuple[int, str]:
    for number, words in rows:
        for word in words:
            try:
                float(word)
            except ValueError:
                return number, word
    raise AssertionError("numpy refused a frame that float() accepts")
