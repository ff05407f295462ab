"""Human motion clips: loaders for BVH, AMASS-style .npz and DeepMimic files.

Every loader returns a `HumanMotion` (metres, z-up, uniform fps);
`canonical_keypoints` maps one onto the keypoints retargeting uses.
"""

from metaworld_x.motion.human import HumanMotion
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS, canonical_keypoints
from metaworld_x.motion.loading import load_human_motion

__all__ = ["CANONICAL_KEYPOINTS", "HumanMotion", "canonical_keypoints", "load_human_motion"]
