"""A command line that tyro rejects, told in one line that names the problem and the `--help` to read.

tyro reports each way it rejects a command line as a structured event before it prints its boxed error; the hook
registered here turns the event into a `UserError`, which the command line prints as one line with exit status 2.
The hook is tyro's private `tyro._errors` interface, which is why pyproject.toml bounds tyro's version.
"""

import contextlib
import dataclasses
import types
import typing
from typing import Any, Iterator

import tyro
from tyro import _errors

from metaworld_x.errors import UserError

SUBCOMMAND = type(tyro.conf.subcommand("name"))
"""The marker that `Annotated[Command, tyro.conf.subcommand(name)]` carries."""
KINDS = {int: "an integer", float: "a number"}
"""How a value of each type is named in the line: `--episodes must be an integer, not 'abc'`."""


@contextlib.contextmanager
def one_line_parse_errors(command_type: Any, args: list[str], prog: str) -> Iterator[None]:
    """Within the block, a command line that tyro rejects raises `UserError` instead of printing a box and
    exiting; `command_type` and `args` name the subcommand whose `--help` the line points at."""

    def hook(event: _errors.ParseErrorEvent) -> None:
        path, rest = subcommand_path(command_type, args)
        problem = describe(event, rest, choices=list(subcommands(command_at(command_type, path))))
        raise UserError(f"{problem}; see {' '.join([prog, *path])} --help")

    with _errors.on_parse_error(hook):
        yield


def describe(event: _errors.ParseErrorEvent, rest: list[str], choices: list[str]) -> str:
    """The problem `event` reports. `rest` is the command line after the subcommands, `choices` the subcommands
    that could come next (none when a command has been chosen)."""
    if isinstance(event, _errors.UnrecognizedArgs):
        return unrecognized(event.tokens, choices)
    if isinstance(event, _errors.MissingArgs):
        return "missing " + " and ".join(name(context.arg) for context in event.missing_arguments)
    if isinstance(event, _errors.MissingSubcommand):
        return f"missing a command: {listing(list(event.subcommand_spec.parser_from_name))}"
    if isinstance(event, _errors.InvalidChoice):
        return f"{name(event.argument)} must be {listing(sorted(event.choices, key=str.lower))}, not {event.value!r}"
    if isinstance(event, _errors.BadValue) and event.reason == "too_few_values":
        return f"{name(event.argument)} needs a value"
    if isinstance(event, _errors.InstantiationFailure) and event.argument is not None:
        return bad_value(event.argument, event.message, rest)
    if isinstance(event, _errors.InstantiationFailure):
        return event.message.splitlines()[0]
    if isinstance(event, _errors.MutexConflict):
        return f"{event.first_token} and {event.second_token} cannot be given together"
    return "the command line is not understood"


def unrecognized(tokens: list[str], choices: list[str]) -> str:
    """A word where a command was expected, unknown options (the words among them taken for their values), or
    words a command does not take."""
    options = [token for token in tokens if token.startswith("-")]
    words = [token for token in tokens if not token.startswith("-")]
    if choices and words and not tokens[0].startswith("-"):
        return f"{words[0]!r} is not a command: {listing(choices)}"
    if options:
        return f"unknown option{'s' if len(options) > 1 else ''} {' '.join(options)}"
    return f"unexpected argument{'s' if len(words) > 1 else ''} {' '.join(words)}"


def listing(names: list[str]) -> str:
    """`a, b or c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def bad_value(argument: Any, message: str, rest: list[str]) -> str:
    """`--episodes must be an integer, not 'abc'`; tyro's own first line where the value or its kind is unknown."""
    flag = name(argument)
    value = given_value(argument.lowered.name_or_flags, rest)
    kind = KINDS.get(value_type(argument.field.type_stripped))
    if value is None or kind is None:
        return f"{flag}: {message.splitlines()[0]}"
    return f"{flag} must be {kind}, not {value!r}"


def name(argument: Any) -> str:
    """An option's flag (`--skill`), or a positional's field name in capitals (`SKILL`)."""
    if argument.is_positional():
        return argument.field.intern_name.upper()
    return argument.lowered.name_or_flags[0]


def given_value(flags: tuple[str, ...], rest: list[str]) -> str | None:
    """The value that follows any of `flags` in `rest` (`--seed 1` or `--seed=1`); None if there is none."""
    spellings = {flag.replace("_", "-") for flag in flags}
    for index, token in enumerate(rest):
        flag, equals, value = token.partition("=")
        if flag.replace("_", "-") in spellings:
            if equals:
                return value
            if index + 1 < len(rest):
                return rest[index + 1]
    return None


def value_type(annotation: Any) -> Any:
    """`int` for `int` and for `int | None`; other annotations as they are."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        others = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return others[0] if len(others) == 1 else annotation
    return annotation


def subcommands(command_type: Any) -> dict[str, Any]:
    """The subcommands that can follow `command_type`: those of a union of `tyro.conf.subcommand`s, or of a
    dataclass's field that is one. Empty for a command that takes no subcommand."""
    if dataclasses.is_dataclass(command_type):
        hints = typing.get_type_hints(command_type, include_extras=True)
        return next((found for hint in hints.values() if (found := subcommands(hint))), {})
    found = {}
    if typing.get_origin(command_type) is typing.Union:
        for member in typing.get_args(command_type):
            configs = [meta for meta in getattr(member, "__metadata__", ()) if isinstance(meta, SUBCOMMAND)]
            if configs and configs[0].name is not None:
                found[configs[0].name] = typing.get_args(member)[0]
    return found


def subcommand_path(command_type: Any, args: list[str]) -> tuple[list[str], list[str]]:
    """The subcommands named in `args`, and the words after them: `(['eval', 'expert'], ['walk', '--seed', '1'])`
    for `eval expert walk --seed 1`. Options among the subcommands are passed over."""
    path, rest = [], list(args)
    for index, token in enumerate(args):
        if token.startswith("-"):
            continue
        if token not in subcommands(command_at(command_type, path)):
            break
        path.append(token)
        rest = args[index + 1:]
    return path, rest


def command_at(command_type: Any, path: list[str]) -> Any:
    """The command that `path`'s subcommands select."""
    for token in path:
        command_type = subcommands(command_type)[token]
    return command_type

