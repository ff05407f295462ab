"""A GIF is fitted under its byte budget by dropping frames, pixels and colours, and is never enlarged."""

import io

import numpy as np
from PIL import Image, ImageSequence

from metaworld_x.play.gif_budget import encode_gif, read_gif


def _frames(n=24, height=240, width=320, seed=0):
    """A textured scene panning sideways: every frame differs, as a tracking camera's do."""
    texture = np.random.default_rng(seed).integers(0, 256, (height, width + 4 * n, 3), dtype=np.uint8)
    return [texture[:, 4 * i: 4 * i + width] for i in range(n)]


def _decoded(data):
    with Image.open(io.BytesIO(data)) as image:
        return image.size, sum(1 for _ in ImageSequence.Iterator(image)), image.info["duration"]


def test_a_gif_within_budget_keeps_every_frame_and_its_size():
    frames = _frames(n=6, height=90, width=160)
    size, count, duration = _decoded(encode_gif(frames, 40.0, max_bytes=10_000_000))
    assert (size, count, duration) == ((160, 90), 6, 40)


def test_a_gif_over_budget_is_cut_until_it_fits(tmp_path):
    frames = _frames()
    generous = encode_gif(frames, 40.0, max_bytes=10_000_000)
    budget = len(generous) // 3
    data = encode_gif(frames, 40.0, max_bytes=budget)
    assert len(data) <= budget
    size, count, duration = _decoded(data)
    assert count < len(frames) and duration == 40 * (len(frames) // count if len(frames) % count == 0 else round(len(frames) / count))
    assert size[0] / size[1] == 320 / 240, "the picture keeps its aspect"
    path = tmp_path / "cut.gif"
    path.write_bytes(data)
    decoded, frame_ms = read_gif(path)
    assert len(decoded) == count and decoded[0].shape == (size[1], size[0], 3) and frame_ms == duration
