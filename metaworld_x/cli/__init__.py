"""The `metaworld-x` command line, generated from dataclass configs by tyro.

Each command is a frozen dataclass with a `run()` method, in a module of its
own that imports heavy libraries only inside `run()`, so `--help` is instant.
Errors that are the user's to fix print as one line, without a traceback, and exit with status 2: a command line
that tyro rejects (`parse_errors.py`), numbers out of range before any command runs (`numbers.py`), and each
command's own refusals, of unreadable inputs and of unwritable outputs, before its work starts. A command whose
verdict is its exit status (`motion check`: 1 when it finds problems) returns it from `run()`.
"""

import sys
from typing import Annotated, Union

import tyro

from metaworld_x.cli.eval import Eval
from metaworld_x.cli.info import Info
from metaworld_x.cli.motion import Motion
from metaworld_x.cli.numbers import check_numbers
from metaworld_x.cli.parse_errors import one_line_parse_errors
from metaworld_x.cli.play import Play
from metaworld_x.cli.snapshot import Snapshot
from metaworld_x.cli.train import Train
from metaworld_x.errors import UserError

Command = Union[
    Annotated[Info, tyro.conf.subcommand("info")],
    Annotated[Snapshot, tyro.conf.subcommand("snapshot")],
    Annotated[Motion, tyro.conf.subcommand("motion")],
    Annotated[Train, tyro.conf.subcommand("train")],
    Annotated[Eval, tyro.conf.subcommand("eval")],
    Annotated[Play, tyro.conf.subcommand("play")],
]
PROG = "metaworld-x"
DESCRIPTION = "MetaWorld-X: humanoid loco-manipulation experts composed by a language-conditioned router."


def main(args: list[str] | None = None) -> int:
    args = sys.argv[1:] if args is None else args
    try:
        with one_line_parse_errors(Command, args, PROG):
            command = tyro.cli(
                Command,
                args=args,
                prog=PROG,
                description=DESCRIPTION,
                config=(tyro.conf.OmitSubcommandPrefixes, tyro.conf.OmitArgPrefixes),
            )
        check_numbers(command)
        status = command.run()  # a command that reports a finding by its exit status returns it
    except UserError as error:
        # one line even where the message quotes a library's multi-line one
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
