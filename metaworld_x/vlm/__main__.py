"""`python -m metaworld_x.vlm "walk to the box, pick it up"`: print the expert scores for a task."""

import argparse
import sys

from metaworld_x.errors import UserError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metaworld_x.vlm", description=__doc__)
    parser.add_argument("task", help="the instruction, in plain language")
    parser.add_argument("--kind", default="text", choices=("text", "transformers"), help="scorer backend")
    parser.add_argument("--model", default=None, help="model folder or hub id (transformers: required)")
    parser.add_argument("--temperature", type=float, default=1.0, help="softmax temperature of the prior")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the label cache")
    parser.add_argument("--segments", action="store_true", help="also score each clause (text prior)")
    args = parser.parse_args(argv)
    from metaworld_x.vlm.factory import make_scorer

    try:
        scorer = make_scorer(
            args.kind, args.model, temperature=args.temperature, cache_dir=False if args.no_cache else None
        )
        print(scorer.score(None, args.task))
        if args.segments and hasattr(scorer, "segment_scores"):
            segments = scorer.segment_scores(args.task)
            for clause, result in zip(segments.clauses, segments.per_clause):
                print(f"  {clause!r}: {result}")
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
