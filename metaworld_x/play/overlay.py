"""The expert-weight bars and status lines, drawn onto frames with Pillow.

The same panel goes into recorded videos and, as an image overlay, into the
interactive viewer, so what a user sees live is what a video shows.
"""

from functools import lru_cache

import numpy as np

ROW_HEIGHT = 22
PANEL_WIDTH = 260
_NAME_WIDTH = 96
_BAR_COLOUR = (70, 140, 230)
_DOMINANT_COLOUR = (240, 150, 40)
_BACKGROUND = (20, 20, 20)
_TEXT = (235, 235, 235)


@lru_cache(maxsize=4)
def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: one fixed size
        return ImageFont.load_default()


def dominant(names: tuple[str, ...], weights: np.ndarray) -> str:
    """The skill with the largest weight."""
    return names[int(np.argmax(weights))]


SHOWN_LEAST = 0.005
"""Experts weighted under this are left off the panel: with eleven experts, bars for all of them covered half a
small video while most read 0.00."""


def weights_panel(names: tuple[str, ...], weights: np.ndarray, title: str = "", width: int = PANEL_WIDTH,
                  rows: int = 4) -> np.ndarray:
    """An RGB image [H, width, 3]: a bar for each expert that has weight (the heaviest `rows`, heaviest first),
    the dominant one highlighted and named.

    Args:
      names: [K] expert names.
      weights: [K] mixture weights (sum to 1).
      title: a first line, e.g. the mode ("router", "expert walk").
      rows: the most bars drawn.
    """
    from PIL import Image, ImageDraw

    weights = np.asarray(weights, np.float64)
    lead = int(np.argmax(weights))
    order = [int(i) for i in np.argsort(-weights, kind="stable") if weights[i] >= SHOWN_LEAST or i == lead]
    shown = order[:rows]
    header = [line for line in (title, f"dominant: {names[lead]}") if line]
    footer = [f"+{len(order) - len(shown)} more"] if len(order) > len(shown) else []
    height = ROW_HEIGHT * (len(header) + len(shown) + len(footer)) + 8
    image = Image.new("RGB", (width, height), _BACKGROUND)
    draw = ImageDraw.Draw(image)
    font = _font(14)
    y = 4
    for line in header:
        draw.text((6, y + 3), line, fill=_TEXT, font=font)
        y += ROW_HEIGHT
    bar_space = width - _NAME_WIDTH - 48
    for i in shown:
        draw.text((6, y + 3), names[i][:13], fill=_TEXT, font=font)
        length = int(round(bar_space * float(np.clip(weights[i], 0.0, 1.0))))
        colour = _DOMINANT_COLOUR if i == lead else _BAR_COLOUR
        draw.rectangle((_NAME_WIDTH, y + 4, _NAME_WIDTH + max(length, 1), y + ROW_HEIGHT - 4), fill=colour)
        draw.text((width - 42, y + 3), f"{weights[i]:.2f}", fill=_TEXT, font=font)
        y += ROW_HEIGHT
    for line in footer:
        draw.text((6, y + 3), line, fill=_TEXT, font=font)
    return np.asarray(image)


def text_strip(lines: list[str], width: int) -> np.ndarray:
    """An RGB image [H, width, 3] holding status lines (instruction, time, return)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, ROW_HEIGHT * len(lines) + 4), _BACKGROUND)
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((6, 2 + i * ROW_HEIGHT + 3), line, fill=_TEXT, font=_font(14))
    return np.asarray(image)


def stamp(frame: np.ndarray, patch: np.ndarray, corner: str = "top_right", alpha: float = 0.8) -> np.ndarray:
    """`frame` with `patch` blended into a corner (top_left, top_right, bottom_left); clipped to fit."""
    out = frame.copy()
    height, width = min(patch.shape[0], frame.shape[0]), min(patch.shape[1], frame.shape[1])
    top = 0 if corner.startswith("top") else frame.shape[0] - height
    left = frame.shape[1] - width if corner.endswith("right") else 0
    region = out[top : top + height, left : left + width].astype(np.float32)
    blended = alpha * patch[:height, :width].astype(np.float32) + (1 - alpha) * region
    out[top : top + height, left : left + width] = blended.astype(np.uint8)
    return out
