"""One line naming the machine a figure was measured on.

Every benchmark table, audit and router record quotes it, since a speed or a
success count holds for the machine it came from (a recount of ten closed-loop
episodes on another CPU can differ by two).
"""

import os
import platform
from pathlib import Path

import jax


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or what `platform` knows elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def describe_machine() -> str:
    """CPU, logical cores, system, and jax with its backend (and the accelerator's kind where jax runs on one)."""
    text = f"{cpu_model()}, {os.cpu_count()} logical cores, {platform.system()}; jax {jax.__version__} on {jax.default_backend()}"
    if jax.default_backend() != "cpu":
        text += f" ({jax.devices()[0].device_kind})"
    return text
