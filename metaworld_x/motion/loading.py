"""One entry point for every human motion format, chosen by file suffix and content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metaworld_x.errors import UserError
from metaworld_x.motion.amass import load_amass
from metaworld_x.motion.bvh import load_bvh
from metaworld_x.motion.deepmimic import is_deepmimic_file, load_deepmimic
from metaworld_x.motion.human import HumanMotion

_FORMATS = ".bvh (BVH), .npz (AMASS-style joint positions), .txt / .json (DeepMimic)"


def load_human_motion(path: str | Path, **options: Any) -> HumanMotion:
    """Load any supported clip; `options` go to the format's loader.

    .bvh -> load_bvh, .npz -> load_amass, .txt / .json -> load_deepmimic when
    the content is DeepMimic's JSON layout.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such motion file")
    suffix = path.suffix.lower()
    if suffix == ".bvh":
        return load_bvh(path, **options)
    if suffix == ".npz":
        return load_amass(path, **options)
    if suffix in (".txt", ".json"):
        if not is_deepmimic_file(path):
            raise UserError(f'{path}: a {suffix} motion must be DeepMimic JSON ({{"Frames": [[...], ...]}})')
        return load_deepmimic(path, **options)
    raise UserError(f"{path}: unknown motion format {suffix or '(no suffix)'!r}; supported: {_FORMATS}")
