"""What each clip in the motion library stands on: airborne frames and the centre of mass over the support.

    python scripts/clip_support.py [--clips crawl crawl_get_down] [--outside 0.05]

One row per clip (`metaworld_x.motion.support`): the share of frames whose lowest point is more than 3 cm above
the floor and the longest such stretch; the deepest the centre of mass goes past the edge of the support polygon
(negative: outside) and the longest stretch it stays more than `--outside` m past it. A run's flight phases and
a walk's steps leave the support for a fraction of a second each; a pose held still, or a get-down, should not.
"""

import time
from dataclasses import dataclass
from pathlib import Path

import tyro

from metaworld_x.machine import describe_machine
from metaworld_x.motion.clip import read_clip
from metaworld_x.motion.support import support_trace
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import robot_spec


@dataclass(frozen=True)
class Args:
    clips: tuple[str, ...] = ()
    """Clip names in `motions_dir` (default: every one)."""
    motions_dir: Path = MOTIONS_DIR
    outside: float = 0.05
    """Metres past the support's edge that count as off it for the longest-stretch column."""


def main(args: Args) -> None:
    model = robot_spec("h1").compile()
    names = args.clips or tuple(sorted(path.stem for path in args.motions_dir.glob("*.npz")))
    clock = time.perf_counter()
    print(f"# machine: {describe_machine()}")
    print(f"| clip | s | airborne | longest airborne (s) | deepest margin (cm) | longest > {args.outside * 100:.0f} cm past (s) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        clip = read_clip(args.motions_dir / f"{name}.npz")
        figures = support_trace(model, clip.qpos, clip.fps).summary(outside=args.outside)
        print(f"| {name} | {clip.duration:.1f} | {figures['airborne_share']:.0%} | {figures['airborne_longest_s']:.2f} "
              f"| {figures['margin_min_m'] * 100:+.1f} | {figures['outside_longest_s']:.2f} |")
    print(f"# {len(names)} clips in {time.perf_counter() - clock:.1f} s")


if __name__ == "__main__":
    main(tyro.cli(Args))
