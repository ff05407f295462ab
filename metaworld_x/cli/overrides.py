"""Command-line options generated from the config dataclasses they override.

An option such as `train expert --num-envs` overrides `PPOConfig.num_envs`. Declared by hand, its help and default
drift from the config's; generated here, each option has the config field's own type (or None: keep what the
config says), its docstring for help and the config's default as its hint.

The configs are read from their source, not imported: their modules import JAX, and `--help` stays instant
(tests/cli/test_cli_overrides.py checks what is read against the imported configs).
"""

import ast
import dataclasses
import importlib.util
import inspect
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro


@dataclasses.dataclass(frozen=True)
class ConfigField:
    """One field of a config dataclass, as its source declares it."""

    annotation: str
    default: Any  # the literal default, or None where it is not a literal (a default_factory)
    doc: str


@cache
def config_fields(module: str, class_name: str) -> dict[str, ConfigField]:
    """The fields of dataclass `class_name` in `module`, read from the source without importing it (bases first)."""
    # the file from the package's own folder: importlib's finders would import the parent packages (and JAX)
    top, *rest = module.split(".")
    origin = Path(importlib.util.find_spec(top).origin).parent.joinpath(*rest).with_suffix(".py")
    tree = ast.parse(origin.read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    node = classes[class_name]
    fields: dict[str, ConfigField] = {}
    for base in node.bases:  # a base in the same module (a task's config on TaskConfig is elsewhere)
        if isinstance(base, ast.Name) and base.id in classes:
            fields.update(config_fields(module, base.id))
    body = node.body
    for statement, after in zip(body, [*body[1:], None]):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        doc = ""
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            doc = " ".join(inspect.cleandoc(after.value.value).split())
        try:
            default = ast.literal_eval(statement.value) if statement.value is not None else None
        except ValueError:
            default = None
        fields[statement.target.id] = ConfigField(ast.unparse(statement.annotation), default, doc)
    return fields


def option_type(annotation: str) -> Any:
    """The Python type of a field annotation made optional: 'int' -> int | None."""
    return eval(annotation, {"Literal": Literal, "tuple": tuple}) | None  # noqa: S307 (the package's own source)


@dataclasses.dataclass(frozen=True)
class Overrides:
    """Options that override a config's fields; None keeps the config's value."""

    def given(self) -> dict[str, Any]:
        """{field: value} of the options given on the command line."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}


def overrides_of(name: str, sources: dict[str, tuple[str, str]], fields: tuple[str, ...],
                 hint: str | None = None) -> type[Overrides]:
    """A frozen `Overrides` dataclass `name` with one option per field in `fields`, each None by default.

    sources: {label: (module, class)} of the configs the options override, the first for types and help; the
    default hint names each one's default ("(default: 32; --all: 10)"), or is `hint` where given."""
    read = {label: config_fields(*where) for label, where in sources.items()}
    options = []
    for field in fields:
        declared = [label for label, known in read.items() if field in known]
        if not declared:
            raise ValueError(f"no config in {list(sources.values())} declares {field!r}")
        spec = read[declared[0]][field]  # the first config that declares it
        values = [read[label][field].default for label in declared]
        defaults = "; ".join(f"{label + ': ' if label else ''}{value}" for label, value in zip(declared, values))
        if len(set(map(repr, values))) == 1 and declared[0] == "":  # the same default everywhere: say it once
            defaults = str(values[0])
        annotated = Annotated[option_type(spec.annotation),
                              tyro.conf.arg(help=spec.doc, help_behavior_hint=hint or f"(default: {defaults})")]
        options.append((field, annotated, dataclasses.field(default=None)))
    return dataclasses.make_dataclass(name, options, bases=(Overrides,), frozen=True)

