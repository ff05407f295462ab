"""Numbers on the command line, checked before any command runs: one out of range is refused in one line.

tyro parses any integer and any float, "nan" and "inf" among them. Every command's numbers pass through
`check_numbers` first, so that no command meets a seed that overflows deep inside JAX, or a NaN offset.
Each command still checks its own lower bounds (at least one episode, at least 16 pixels).
"""

import dataclasses
import math

from metaworld_x.errors import UserError

INT_LIMIT = 2**31 - 1
"""The largest magnitude an integer option takes: JAX counts and seeds in 32 bits."""
PIXELS = (16, 4096)
"""The width and height an image or a video may have, in pixels."""


def option(name: str) -> str:
    """The command-line spelling of a config field."""
    return "--" + name.replace("_", "-")


def check_numbers(command) -> None:
    """Refuse any integer field of `command` (and of the commands nested in it) beyond ±INT_LIMIT, any float that
    is not finite, and a negative seed."""
    for field in dataclasses.fields(command):
        value = getattr(command, field.name)
        if dataclasses.is_dataclass(value):
            check_numbers(value)
            continue
        if field.name == "seed" and isinstance(value, int) and not 0 <= value <= INT_LIMIT:
            raise UserError(f"--seed must be 0 to {INT_LIMIT}, got {value}")
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, bool):
                continue
            if isinstance(item, int) and abs(item) > INT_LIMIT:
                raise UserError(f"{option(field.name)} must be -{INT_LIMIT} to {INT_LIMIT}, got {item}")
            if isinstance(item, float) and not math.isfinite(item):
                raise UserError(f"{option(field.name)} must be a finite number, got {item}")


def check_pixels(width: int, height: int) -> None:
    """Refuse an image size the renderer cannot make."""
    low, high = PIXELS
    if not (low <= width <= high and low <= height <= high):
        raise UserError(f"--width and --height must be {low} to {high} pixels, got {width}x{height}")
