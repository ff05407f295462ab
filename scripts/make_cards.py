"""Write the model cards experts/README.md and router/README.md from the shipped artifacts' metadata.

    python scripts/make_cards.py           # rewrite the cards that changed
    python scripts/make_cards.py --check   # exit 1 if a card is stale, writing nothing
"""

import argparse
import sys
from pathlib import Path

from metaworld_x.cards import stale, write
from metaworld_x.paths import PROJECT_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a card differs from its artifacts; write nothing")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR, help="the checkout holding experts/ and router/")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale(args.project_dir)
        for path in out_of_date:
            print(f"stale: {path} (run python scripts/make_cards.py)")
        return 1 if out_of_date else 0
    for path in write(args.project_dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
