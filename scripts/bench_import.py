"""How long `import metaworld_x` takes in a fresh interpreter, and what it pulls in, as one table.

    python scripts/bench_import.py [--runs 5]

Rows: `import metaworld_x` alone, and with gymnasium (which registers the MetaWorldX/ ids). Each is timed in its
own fresh interpreter `--runs` times, inside that interpreter (its start-up excluded); the median and the slowest
are printed with the heavy libraries the import loaded (there should be none: tests/cli/test_cli.py and
tests/envs/test_gym.py assert that, this script only measures time).
"""

import argparse
import json
import statistics
import subprocess
import sys

from metaworld_x.machine import describe_machine

HEAVY = ("jax", "mujoco", "torch", "transformers", "brax")
IMPORTS = ("import metaworld_x", "import metaworld_x, gymnasium")


def time_import(statement: str) -> dict:
    """Seconds the statement takes in a fresh interpreter, and the heavy modules it loaded."""
    code = (
        "import json, sys, time; t = time.perf_counter();"
        f" {statement}; t = time.perf_counter() - t;"
        f" print(json.dumps({{'seconds': t, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per row")
    args = parser.parse_args()
    print(f"# Import time: {describe_machine()}")
    print("| what | median s | slowest s | heavy modules loaded |")
    print("|---|---:|---:|---|")
    for statement in IMPORTS:
        runs = [time_import(statement) for _ in range(args.runs)]
        seconds = [run["seconds"] for run in runs]
        heavy = sorted({module for run in runs for module in run["heavy"]})
        print(f"| `{statement}` | {statistics.median(seconds):.2f} | {max(seconds):.2f} |"
              f" {', '.join(heavy) or 'none'} |")


if __name__ == "__main__":
    main()
