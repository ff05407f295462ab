"""Re-encode GIFs over the size budget in place, without rendering them again (metaworld_x.play.gif_budget).

    python scripts/shrink_gifs.py experts/*/rollout.gif assets/images/*.gif
"""

import argparse
import sys
from pathlib import Path

from metaworld_x.atomic import write_bytes
from metaworld_x.play.gif_budget import MAX_GIF_BYTES, encode_gif, read_gif


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gifs", nargs="+", type=Path)
    parser.add_argument("--max-bytes", type=int, default=MAX_GIF_BYTES, help="size budget per file")
    args = parser.parse_args(argv)
    for path in args.gifs:
        before = path.stat().st_size
        if before <= args.max_bytes:
            print(f"{path}: {before / 1e6:.2f} MB, within the budget")
            continue
        frames, frame_ms = read_gif(path)
        data = encode_gif(frames, frame_ms, args.max_bytes)
        write_bytes(path, data)
        print(f"{path}: {before / 1e6:.2f} -> {len(data) / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
