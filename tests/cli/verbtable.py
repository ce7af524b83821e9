"""The generator of gpuadmin/cli/verb_table.py from the op registry (tests/cli/test_verbs_cli.py holds the file
equal to what this writes; `GPUADMIN_UPDATE_GOLDEN=1` rewrites it)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gpuadmin.cli import verb_table
from gpuadmin.engine.ops import OPS, Verb

TABLE = Path(verb_table.__file__)
START = "VERBS: tuple[Verb, ...] = (\n"


def expected_verbs() -> tuple[verb_table.Verb, ...]:
    """The registry's verbs, as the table holds them."""
    return tuple(
        verb_table.Verb(spec.op, spec.doc, spec.verb.words, tuple(verb_table.Arg(*arg) for arg in spec.verb.args),
                        spec.verb.example, spec.verb.one_of)
        for spec in OPS.values() if isinstance(spec.verb, Verb))


def _text(value: str, indent: int) -> str:
    """A string literal, split into adjacent literals where it would pass the line length."""
    pieces = textwrap.wrap(value, 70, drop_whitespace=False, replace_whitespace=False) or [""]
    if len(pieces) == 1:
        return repr(value)
    return "(" + f"\n{' ' * (indent + 1)}".join(repr(piece) for piece in pieces) + ")"


def _arg(arg: verb_table.Arg) -> str:
    extra = "".join(f", {name}={getattr(arg, name)!r}" for name in ("many", "each", "choices")
                    if getattr(arg, name) != verb_table.Arg._field_defaults[name])
    head = f"            Arg({arg.name!r}, {arg.field!r}, {arg.kind!r},"
    return f"{head}\n                {_text(arg.help, 16)}{extra}),\n"


def render() -> str:
    """The whole of verb_table.py: its hand-written head, then the table."""
    head = TABLE.read_text(encoding="utf-8").split(START, 1)[0]
    out = [head, START]
    for verb in expected_verbs():
        out.append(f"    Verb(\n        {verb.op!r},\n        {_text(verb.summary, 8)},\n        {verb.words!r},\n"
                   "        (\n")
        out += [_arg(arg) for arg in verb.args]
        out.append(f"        ),\n        {_text(verb.example, 8)},\n")
        if verb.one_of:
            out.append(f"        {verb.one_of!r},\n")
        out.append("    ),\n")
    out.append(")\n")
    return "".join(out)


def synopsis(verb: verb_table.Verb) -> str:
    """`gpuadmin cordon NODE...`, with its arguments: the line docs/cli.md lists for the verb."""
    words = ["gpuadmin", *verb.words]
    for arg in verb.args:
        option = arg.name.startswith("-")
        choices = "{" + "|".join(arg.choices) + "}" if arg.choices else ""
        shown = arg.name if option or not choices else choices
        if option and arg.kind != "flag":
            shown += " " + (choices or arg.name.lstrip("-").upper())
        shown += "..." if arg.many and not option else ""
        words.append(f"[{shown}]" if option or arg.name in verb.one_of else shown)
    return " ".join(words)


MARK_START = "<!-- verbs: generated from gpuadmin/engine/ops.py by tests/cli/test_verbs_cli.py -->\n"
MARK_END = "<!-- verbs: end -->\n"


def markdown() -> str:
    """The verbs' list in docs/cli.md: each verb's synopsis, what it does, and its op."""
    out = [MARK_START, "\n"]
    for verb in expected_verbs():
        out.append(f"- `{synopsis(verb)}` — {verb.summary} (`{verb.op}`)\n")
    out += ["\n", MARK_END]
    return "".join(out)
