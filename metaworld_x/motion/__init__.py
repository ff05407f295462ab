"""Human motion clips and the robot's reference clips made from them.

Every loader returns a `HumanMotion` (metres, z-up, uniform fps);
`canonical_keypoints` maps one onto the keypoints retargeting uses.
`metaworld_x.motion.retarget.retarget` turns one into a `Clip` for the H1
(`keyframes.compose` makes one from key poses); `load_clip` / `save_clip`
read and write the .npz format of assets/motions.
"""

from metaworld_x.motion.clip import Clip, load_clip, read_clip, save_clip
from metaworld_x.motion.human import HumanMotion
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS, canonical_keypoints
from metaworld_x.motion.loading import load_human_motion

__all__ = [
    "CANONICAL_KEYPOINTS", "Clip", "HumanMotion", "canonical_keypoints", "load_clip", "load_human_motion",
    "read_clip", "save_clip",
]
