"""A GIF fitted under a byte budget: fewer frames, a smaller picture and fewer colours, in that order, until it fits.

A rendered episode stored frame by frame with its own 256 colours is 5-7 MB at 320x240, too much to read in a
browser or keep in a repository (`tests/test_docs.py` holds every tracked image to `MAX_GIF_BYTES`). One shared
palette without dithering keeps colours from flickering between frames and lets the encoder store only what
changed; each step of `LADDER` then trades a little smoothness or sharpness for size.
"""

from __future__ import annotations

import io

import numpy as np

MAX_GIF_BYTES = 1_500_000
# (keep every n-th frame, longest side in pixels, colours), tried in order
LADDER = ((1, 320, 64), (2, 320, 64), (2, 320, 48), (2, 240, 64), (2, 240, 48), (3, 240, 48), (4, 240, 32))


def _quantize(frames: list, colours: int) -> list:
    """The frames in one palette taken from a strip of up to 8 of them, undithered."""
    from PIL import Image

    sample = frames[:: max(1, len(frames) // 8)]
    strip = Image.new("RGB", (frames[0].width, frames[0].height * len(sample)))
    for i, frame in enumerate(sample):
        strip.paste(frame, (0, i * frame.height))
    palette = strip.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    return [frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in frames]


def encode_gif(frames: list[np.ndarray], frame_ms: float, max_bytes: int = MAX_GIF_BYTES) -> bytes:
    """GIF bytes of `frames` ([H, W, 3] uint8, `frame_ms` apart), looping, at the first `LADDER` step under
    `max_bytes` (never enlarged); the last step's bytes if none fits."""
    from PIL import Image

    images = [Image.fromarray(np.asarray(f)[..., :3]) for f in frames]
    data = b""
    for every, longest, colours in LADDER:
        chosen = images[::every]
        scale = min(1.0, longest / max(chosen[0].size))
        if scale < 1.0:
            size = (round(chosen[0].width * scale), round(chosen[0].height * scale))
            chosen = [image.resize(size, Image.LANCZOS) for image in chosen]
        paletted = _quantize(chosen, colours)
        buffer = io.BytesIO()
        paletted[0].save(buffer, format="GIF", save_all=True, append_images=paletted[1:],
                         duration=round(frame_ms * every), loop=0, optimize=True)
        data = buffer.getvalue()
        if len(data) <= max_bytes:
            break
    return data


def read_gif(path) -> tuple[list[np.ndarray], float]:
    """The frames of a GIF as RGB arrays, and its frame duration (ms)."""
    from PIL import Image, ImageSequence

    with Image.open(path) as image:
        frame_ms = float(image.info.get("duration", 40))
        frames = [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(image)]
    return frames, frame_ms
