"""Stance detection: which foot stands, including mocap whose foot floats above the floor it stands on."""

import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.motion.contacts import ContactConfig, detect_contacts, phases

FPS = 50.0


def _one_foot(heights: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[T, 2] sole heights and [T, 2, 3] sole centres: the left foot as given, the right one planted."""
    count = len(heights)
    sole_height = np.stack([heights, np.zeros(count)], axis=1)
    sole_position = np.zeros((count, 2, 3))
    sole_position[:, 0, 0] = xs
    sole_position[:, 1, 1] = -0.2
    return sole_height, sole_position


def _floating_walk() -> tuple[np.ndarray, np.ndarray]:
    """The left foot of OMOMO's carry: swings 10-20 cm up, and between swings stands still 7 cm up for 0.4 s."""
    heights, xs, x = [], [], 0.0
    for _ in range(3):
        heights += [0.07] * 20  # standing, floating
        xs += [x] * 20
        swing = np.sin(np.linspace(0, np.pi, 25))
        heights += list(0.07 + 0.13 * swing)
        xs += list(x + np.linspace(0, 0.5, 25))  # 1 m/s
        x += 0.5
    return _one_foot(np.array(heights), np.array(xs))


def test_a_floating_foot_held_still_stands_only_when_asked():
    sole_height, sole_position = _floating_walk()
    plain = detect_contacts(sole_height, sole_position, FPS, ContactConfig())
    assert not plain[:, 0].any(), "7 cm up is a swing to the plain detector"
    assert plain[:, 1].all()
    hovering = detect_contacts(sole_height, sole_position, FPS, ContactConfig(hover_height=0.1))
    stances = phases(hovering[:, 0])
    assert len(stances) == 3 and all(stop - start == 20 for start, stop in stances), stances
    assert hovering[:, 1].all()


def test_a_slow_swing_or_a_short_pause_in_the_air_is_no_stance():
    count = 60
    slow = _one_foot(np.full(count, 0.07), np.linspace(0, 0.3, count))  # 0.25 m/s: moving, if slowly
    assert not detect_contacts(*slow, FPS, ContactConfig(hover_height=0.1))[:, 0].any()
    pause = np.r_[np.linspace(0, 0.3, 25), np.full(6, 0.3), np.linspace(0.3, 0.6, 29)]  # 6 frames still
    paused = _one_foot(np.full(count, 0.07), pause)
    assert not detect_contacts(*paused, FPS, ContactConfig(hover_height=0.1))[:, 0].any()
    high = _one_foot(np.full(count, 0.12), np.zeros(count))  # still, but above hover_height
    assert not detect_contacts(*high, FPS, ContactConfig(hover_height=0.1))[:, 0].any()


def test_bad_stance_settings_are_refused_with_what_to_change():
    for settings in ({"hover_height": 0.03}, {"hover_height": 0.3}, {"hover_frames": 0}, {"hover_speed": 0.0}):
        with pytest.raises(UserError, match="hover"):
            ContactConfig(**settings)
