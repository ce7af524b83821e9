"""A strict YAML reader for inventories and change files.

`load_yaml(text, file)` parses with PyYAML's C parser (libyaml) and returns a `LoadedYaml`: the plain Python
data plus the text. Any path tuple — from a pydantic error, a reference check, a rule — is mapped to
`(line, column)` *lazily*, only when an error has to be reported (`LoadedYaml.mark(path)` /
`LoadedYaml.locate(diagnostic)`), through a node tree composed from the text on first use.

Two paths read the same data:

1. `_read_plain`: the data straight from libyaml's events; gives up (returns None) on anything it cannot vouch
   for (an alias, a tag, a refused value, a duplicate key, a syntax error...).
2. `_parse_composed`, the reference: reads the file again through libyaml's composer and reports every problem.

tests/store/test_store_yamlsafe_fastpath.py holds the fast path equal to the reference.

What is refused, each as a `Diagnostic(kind="yaml")` with `file:line:column`, all of a file in one
`InputError`:

- files over `MAX_BYTES` (checked before parsing; `load_yaml_file` checks the size before reading), and
  documents of more than `MAX_EVENTS` values (counted by libyaml without building anything, before any path);
- bytes that are not UTF-8 (each bad byte sequence by its offset); a UTF-8 BOM is accepted and dropped;
- syntax errors (the parser's own mark), tabs used for indentation (named as such);
- duplicate mapping keys (both lines named), non-scalar keys, YAML 1.1 merge keys (`<<`);
- octal-looking numbers (`0755`, `012`, `0o17`, `0b101`) and YAML 1.1 sexagesimal numbers (`1:30`);
- integers outside the signed 64-bit range (refused before conversion, so a 5,000-digit one costs nothing);
- aliases that expand past `max(ALIAS_MIN_BOUND, ALIAS_RATIO * written nodes)` nodes (billion laughs), and
  recursive aliases; any tag beyond the YAML core schema (`!!python/...`, `!!binary`, `!!set`, custom `!x`);
- an empty document and a top level that is not a mapping.

Scalars resolve by the YAML 1.2 core schema, not PyYAML's YAML 1.1 one: only `true`/`false` (`True`,
`TRUE`...) are booleans, `yes`/`no`/`on`/`off`/`y`/`n` stay strings (so a schema reports "not a boolean"
at the right path), `1e3` is a float, `2024-01-01` is a string, `null`/`~`/empty is null.
"""

from __future__ import annotations

import math
import operator
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gpuadmin.model.diagnostics import Diagnostic, InputError, PathPart

__all__ = [
    "ALIAS_MIN_BOUND",
    "ALIAS_RATIO",
    "INT_MAX",
    "INT_MIN",
    "MAX_BYTES",
    "MAX_EVENTS",
    "YAML11_BOOLEANS",
    "LoadedYaml",
    "load_yaml",
    "load_yaml_file",
    "resolve_plain",
]

#: Files larger than this are refused before they are parsed (tests lower it).
MAX_BYTES = 64 * 1024 * 1024
#: Documents holding more YAML values than this (parser events: each scalar, and each list's and mapping's start
#: and end) are refused before anything is built from them (tests lower it). The 1,024-node, 100,000-job
#: inventory holds 1.7 million; a 62 MB file of 500,000 jobs took 71 s and 4.5 GB to validate.
MAX_EVENTS = 4_000_000
#: Alias expansion bound: a document may expand to at most max(ALIAS_MIN_BOUND, ALIAS_RATIO * written) nodes.
ALIAS_MIN_BOUND = 100_000
ALIAS_RATIO = 10
#: Words YAML 1.1 reads as booleans; here they are strings, and schemas name them in their errors.
YAML11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})

_MAX_ENCODING_ERRORS = 20

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
# Internal tags for plain scalars that are refused; no document can name them by accident.
_OCTAL = "tag:gpuadmin.invalid,2024:octal"
_SEXAGESIMAL = "tag:gpuadmin.invalid,2024:sexagesimal"
_MERGE = "tag:gpuadmin.invalid,2024:merge"

_INT_RE = re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_NAN_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_OCTAL_RE = re.compile(r"[-+]?0[0-9_]+|[-+]?0[oObB][0-9a-fA-F_]+")
_SEXAGESIMAL_RE = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_NUMBER_START = frozenset("0123456789+-.")


def resolve_plain(value: str) -> str:
    """The tag of a plain scalar under the YAML 1.2 core schema, with the refused YAML 1.1 forms marked."""
    if value in _NULLS:
        return _NULL
    first = value[0]
    if first in _NUMBER_START:
        if _INT_RE.fullmatch(value):
            return _INT
        if _OCTAL_RE.fullmatch(value):
            return _OCTAL
        if _FLOAT_RE.fullmatch(value) or _INF_NAN_RE.fullmatch(value):
            return _FLOAT
        if _SEXAGESIMAL_RE.fullmatch(value):
            return _SEXAGESIMAL
        return _STR
    if value in _BOOLS:
        return _BOOL
    if value == "<<":
        return _MERGE
    return _STR


try:
    _Base: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
    _HAS_LIBYAML = True
except AttributeError:  # pragma: no cover - only without libyaml
    warnings.warn(
        "PyYAML was built without libyaml: inventories load with the slow pure-Python parser",
        RuntimeWarning,
        stacklevel=1,
    )
    _Base = yaml.SafeLoader
    _HAS_LIBYAML = False


class _Loader(_Base):  # type: ignore[valid-type,misc]
    """The C parser and composer with our resolver; construction is done by `_Builder`, not by PyYAML.

    `descend_resolver`/`ascend_resolver` are called by the composer once per node; path resolvers are not
    used, so they are bound to C builtins that do nothing useful, instead of Python methods (a measurable
    share of composing a large file).
    """

    descend_resolver = staticmethod(operator.is_)  # called as (parent, index): a no-op C builtin
    ascend_resolver = staticmethod(tuple)  # called with no arguments: a no-op C builtin

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return resolve_plain(value) if implicit[0] else _STR
        return _SEQ if kind is SequenceNode else _MAP


class _Refused(Exception):
    """A scalar that the core schema does not read as its tag says, or one of the refused YAML 1.1 forms."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _core_value(tag: str, value: str) -> Any:
    """The Python value of a scalar with its (resolved or written) tag; `_Refused` says why there is none."""
    if tag == _STR:
        return value
    if tag == _INT:
        if _INT_RE.fullmatch(value):
            return _integer(value)
        if _OCTAL_RE.fullmatch(value):
            raise _octal(value)
        raise _Refused(f"{value!r} is not an integer")
    if tag == _FLOAT:
        if _FLOAT_RE.fullmatch(value) or _INT_RE.fullmatch(value):
            return float(_integer(value)) if value.startswith("0x") else float(value)
        if _INF_NAN_RE.fullmatch(value):
            return math.nan if "nan" in value.lower() else (-math.inf if value[0] == "-" else math.inf)
        raise _Refused(f"{value!r} is not a number")
    if tag == _BOOL:
        b = _BOOLS.get(value)
        if b is None:
            raise _Refused(f"{value!r} is not a boolean: write true or false")
        return b
    if tag == _NULL:
        if value not in _NULLS:
            raise _Refused(f"{value!r} is not null: write null or ~")
        return None
    if tag == _OCTAL:
        raise _octal(value)
    if tag == _SEXAGESIMAL:
        raise _Refused(f"{value!r} is a YAML 1.1 base-60 number, which reads as {_sexagesimal(value)}",
                       f'quote it ("{value}") if it is text, or write the number in decimal')
    if tag == _MERGE:
        raise _Refused("merge keys ('<<') are not supported",
                       "write the keys out, or use an alias for the whole value")
    raise _Refused(f"tag {_short_tag(tag)!r} is not allowed",
                   "only plain YAML values (strings, numbers, true/false, null, lists, mappings) are read")


#: Integers are read within the signed 64-bit range (SQLite's; every field's bound lies far inside it).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def _integer(value: str) -> int:
    """A decimal or `0x` integer within [INT_MIN, INT_MAX]; `_Refused` past it. A text longer than the
    largest is refused before it is converted: `int()` of 5,000 digits raises, and its cost grows as the
    square of the length."""
    hex_digits = value.startswith("0x")
    digits = value[2:].lstrip("0") if hex_digits else value.lstrip("+-")
    if len(digits) <= (16 if hex_digits else 19):
        number = int(value, 16) if hex_digits else int(value)
        if INT_MIN <= number <= INT_MAX:
            return number
    shown = value if len(value) <= 24 else f"{value[:20]}... ({len(value):,} characters)"
    raise _Refused(f"{shown} is out of range: integers are read between -2^63 and 2^63-1",
                   "no field takes a number this large; quote it if it is text")


def _octal(value: str) -> _Refused:
    return _Refused(f"{value!r} looks like an octal (or binary) number: YAML 1.1 reads it as a different number",
                    f'write the decimal number without leading zeros, or quote it ("{value}") if it is text')


@dataclass(frozen=True, slots=True)
class _Error:
    message: str
    node: Node | None  # located at node.start_mark; path found lazily
    key: PathPart | None = None  # the mapping key, for errors about a key of `node` (a mapping)
    key_node: Node | None = None
    hint: str | None = None


def _line_col(node: Node) -> tuple[int, int]:
    mark = node.start_mark
    return mark.line + 1, mark.column + 1


class _Builder:
    """Builds plain Python data from the composed tree, collecting every error instead of stopping."""

    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: list[_Error] = []

    def scalar(self, node: ScalarNode) -> Any:
        try:
            return _core_value(node.tag, node.value)
        except _Refused as refused:
            self.errors.append(_Error(refused.message, node, hint=refused.hint))
            return node.value

    def build(self, node: Node) -> Any:
        cls = node.__class__
        if cls is ScalarNode:
            if node.tag == _STR:
                return node.value
            return self.scalar(node)  # type: ignore[arg-type]
        if cls is MappingNode:
            if node.tag != _MAP:
                self.errors.append(_Error(f"tag {_short_tag(node.tag)!r} is not allowed", node))
            data: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if key_node.__class__ is not ScalarNode:
                    self.errors.append(_Error("a mapping key must be a plain scalar, not a list or mapping",
                                              key_node))
                    continue
                key = key_node.value if key_node.tag == _STR else self.scalar(key_node)
                if key in data:
                    first = _first_key_node(node, key)  # type: ignore[arg-type]
                    self.errors.append(_Error(
                        f"duplicate key {key!r} (first defined at line {first.start_mark.line + 1})",
                        node, key=key, key_node=key_node))
                    continue
                data[key] = self.build(value_node)
            return data
        if cls is SequenceNode:
            if node.tag != _SEQ:
                self.errors.append(_Error(f"tag {_short_tag(node.tag)!r} is not allowed", node))
            build = self.build
            return [build(child) for child in node.value]
        raise TypeError(f"unexpected YAML node {node!r}")  # pragma: no cover


def _first_key_node(node: MappingNode, key: Any) -> Node:
    """The first key node of `key` in a mapping (slow path: only when a duplicate was found)."""
    quiet = _Builder()
    for key_node, _ in node.value:
        if key_node.__class__ is ScalarNode and quiet.scalar(key_node) == key:
            return key_node
    raise AssertionError("a duplicate key without a first occurrence")  # pragma: no cover


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag


def _sexagesimal(value: str) -> str:
    sign = -1 if value.startswith("-") else 1
    total = 0.0
    for part in value.lstrip("+-").replace("_", "").split(":"):
        total = total * 60 + float(part)
    total *= sign
    return str(int(total)) if total.is_integer() else str(total)


@dataclass(slots=True)
class LoadedYaml:
    """Parsed data and its text, for mapping paths to marks when (only when) errors occur.

    The node tree that holds the marks is composed from the text on first use of `root`: a document read on
    the fast path (`_read_plain`) has none until a diagnostic needs a line:column.
    """

    data: dict[str, Any]
    file: str
    text: str = field(repr=False)
    _root: MappingNode | None = field(default=None, repr=False)
    _paths: dict[int, tuple[PathPart, ...]] | None = field(default=None, repr=False)

    @property
    def root(self) -> MappingNode:
        """The composed node tree of `text` (composed now if the fast path read the data)."""
        if self._root is None:
            self._root = _compose(self.text, self.file)
        return self._root

    def node_at(self, path: tuple[PathPart, ...]) -> tuple[Node, int, Node | None]:
        """The deepest node along `path`: (node, how many parts of `path` it covers, its last key node).

        A path that leaves the document (a missing field, an index past the end) stops at the deepest node
        that exists; the caller sees that from the count.
        """
        node: Node = self.root
        key_node: Node | None = None
        for depth, part in enumerate(path):
            child: Node | None = None
            if isinstance(node, MappingNode):
                want = str(part)
                for k, v in node.value:
                    if isinstance(k, ScalarNode) and k.value == want:
                        child, key_node = v, k
                        break
            elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child, key_node = node.value[part], None
            if child is None:
                return node, depth, None
            node = child
        return node, len(path), key_node

    def mark(self, path: tuple[PathPart, ...], *, at_key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of `path`: its value, or its key with `at_key`, or the nearest parent."""
        node, covered, key_node = self.node_at(path)
        if at_key and covered == len(path) and key_node is not None:
            node = key_node
        return _line_col(node)

    def locate(self, diagnostic: Diagnostic, *, at_key: bool = False) -> Diagnostic:
        """`diagnostic` with this file and the line:column of its path (already located ones are kept)."""
        if diagnostic.line is not None:
            return diagnostic if diagnostic.file else diagnostic.located(self.file, diagnostic.line,
                                                                        diagnostic.column)
        line, column = self.mark(diagnostic.path, at_key=at_key)
        return diagnostic.located(self.file, line, column)

    def path_of(self, node: Node) -> tuple[PathPart, ...] | None:
        """The first path at which `node` occurs (slow path: walks the whole tree once, then cached)."""
        if self._paths is None:
            self._paths = dict(_walk_paths(self.root))
        return self._paths.get(id(node))


def _walk_paths(root: Node) -> Iterator[tuple[int, tuple[PathPart, ...]]]:
    seen: set[int] = set()
    stack: list[tuple[Node, tuple[PathPart, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield id(node), path
        if isinstance(node, MappingNode):
            for k, v in reversed(node.value):
                key: PathPart = k.value if isinstance(k, ScalarNode) else "?"
                stack.append((v, (*path, key)))
                stack.append((k, (*path, key)))
        elif isinstance(node, SequenceNode):
            for i in range(len(node.value) - 1, -1, -1):
                stack.append((node.value[i], (*path, i)))


def _diag(file: str, message: str, line: int | None = None, column: int | None = None,
          path: tuple[PathPart, ...] = (), hint: str | None = None) -> Diagnostic:
    return Diagnostic(message, path, "yaml", file, line, column, hint)


def _decode(data: bytes, file: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError([_diag(file, "the file is UTF-16, not UTF-8", 1, 1,
                                hint="save it as UTF-8")])
    diags: list[Diagnostic] = []
    pos = 0
    while pos < len(data) and len(diags) < _MAX_ENCODING_ERRORS:
        try:
            data[pos:].decode("utf-8")
            break
        except UnicodeDecodeError as exc:
            offset = pos + exc.start
            line_start = data.rfind(b"\n", 0, offset) + 1
            line = data.count(b"\n", 0, offset) + 1
            column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
            bad = data[offset:pos + exc.end].hex(" ")
            diags.append(_diag(file, f"not UTF-8: byte {bad} at byte offset {offset}", line, column,
                               hint="save the file as UTF-8"))
            pos += exc.end
    raise InputError(diags)


def _check_size(size: int, file: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise InputError([_diag(file, f"the file is {size:,} bytes, over the limit of {max_bytes:,} bytes; "
                                      "it was not read")])


_TAB_INDENT_RE = re.compile(r"^[ ]*\t", re.MULTILINE)


def _syntax_error(exc: yaml.YAMLError, text: str, file: str) -> list[Diagnostic]:
    """The parser's error at its mark; tabs used for indentation are named as such, each line of them."""
    if isinstance(exc, yaml.reader.ReaderError):
        # a character YAML does not allow (control characters); libyaml's `position` is a byte offset into
        # the UTF-8 text, the pure-Python reader's a character offset
        at = exc.position
        if _Base is not yaml.SafeLoader:
            at = len(text.encode("utf-8", "surrogatepass")[:at].decode("utf-8", "ignore"))
        at_line = text.count("\n", 0, at) + 1
        at_column = at - (text.rfind("\n", 0, at) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return [_diag(file, f"character {code:#06x} is not allowed: {exc.reason}", at_line, at_column,
                      hint="remove it, or write it as an escape in a double-quoted string")]
    if not isinstance(exc, yaml.MarkedYAMLError):
        return [_diag(file, str(exc))]  # pragma: no cover - every parser error carries a mark
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    column = mark.column + 1 if mark is not None else None
    lines = text.split("\n")
    last = len(lines) - 1
    truncated = mark is not None and (mark.line > last
                                      or (mark.line == last and mark.column >= len(lines[-1])))
    if truncated:
        # the parser reports the end of the stream on the line after the last; point at the text's end
        body = text.rstrip("\n")
        line = body.count("\n") + 1
        column = len(body) - (body.rfind("\n") + 1) + 1
    tab_lines = [text.count("\n", 0, m.start()) + 1 for m in _TAB_INDENT_RE.finditer(text)]
    at_tab = False
    if line is not None and 0 < line <= len(lines):
        src = lines[line - 1]
        col0 = (column or 1) - 1
        at_tab = (col0 < len(src) and src[col0] == "\t") or line in tab_lines
    diags: list[Diagnostic] = []
    for tab_line in tab_lines:
        src = lines[tab_line - 1]
        diags.append(_diag(file, "a tab is used for indentation: YAML indents with spaces only", tab_line,
                           src.index("\t") + 1, hint="replace the tab with spaces"))
    if at_tab and line is not None:
        if line not in tab_lines:
            src = lines[line - 1]
            tab_col = src.find("\t", max(0, (column or 1) - 2)) + 1 or column
            diags.append(_diag(file, "a tab is used where YAML allows only spaces", line, tab_col,
                               hint="replace the tab with spaces"))
        return diags
    problem = exc.problem or "invalid YAML"
    message = problem
    context_mark = exc.context_mark
    if exc.context and not exc.context.startswith("while"):
        # the composer's "expected a single document in the stream, but found another document"
        message = f"{exc.context}, {problem}"
    elif exc.context:
        message += f" ({exc.context}"
        if context_mark is not None and (mark is None or context_mark.index != mark.index):
            message += f" that starts at line {context_mark.line + 1}, column {context_mark.column + 1}"
        message += ")"
    if truncated:
        message += "; the file looks truncated"
    diags.append(_diag(file, message, line, column))
    return diags


def _check_aliases(root: Node) -> _Error | None:
    """Expanded size of the graph, counted with memoization: cheap even for a billion-laughs document."""
    sizes: dict[int, int] = {}
    refs: dict[int, int] = {}
    nodes: dict[int, Node] = {}
    in_progress: set[int] = set()
    cycle: list[Node] = []

    def count(node: Node) -> int:
        key = id(node)
        size = sizes.get(key)
        if size is not None:
            refs[key] = refs.get(key, 0) + 1
            return size
        if key in in_progress:
            cycle.append(node)
            return 1
        nodes[key] = node
        if isinstance(node, ScalarNode):
            sizes[key] = 1
            return 1
        in_progress.add(key)
        total = 1
        if isinstance(node, MappingNode):
            for k, v in node.value:
                total += count(k) + count(v)
        else:
            for child in node.value:
                total += count(child)
        in_progress.discard(key)
        sizes[key] = total
        return total

    expanded = count(root)
    if cycle:
        return _Error("recursive alias: this node contains an alias to itself", cycle[0])
    written = len(sizes)
    bound = max(ALIAS_MIN_BOUND, ALIAS_RATIO * written)
    if expanded <= bound:
        return None
    worst = max(refs, key=lambda k: sizes[k] * refs[k])
    return _Error(f"alias expansion exceeds {bound:,} nodes: the document expands to {expanded:,} nodes from "
                  f"{written:,} written; the anchor here is used {refs[worst] + 1:,} times",
                  nodes[worst], hint="aliases may repeat a small value, not multiply a document")


def load_yaml(text: str | bytes, file: str, *, max_bytes: int | None = None) -> LoadedYaml:
    """Parse one YAML document whose top level is a mapping; raise `InputError` with every problem found."""
    limit = MAX_BYTES if max_bytes is None else max_bytes
    if isinstance(text, bytes):
        _check_size(len(text), file, limit)
        text = _decode(text, file)
    else:
        if len(text) > limit // 4:
            _check_size(len(text.encode("utf-8", "surrogatepass")), file, limit)
        if text.startswith("\ufeff"):
            text = text[1:]
    return _parse(text, file)


def _parse(text: str, file: str) -> LoadedYaml:
    events = _count_events(text) if _HAS_LIBYAML else None
    _check_events(events, file)
    data = _read_plain(text)
    if data is not None:
        return LoadedYaml(data, file, text)
    return _parse_composed(text, file)


def _count_events(text: str) -> int | None:
    """libyaml's event count of `text` (the bound of `_check_events`), counted in C without building a Python
    object per event; None where libyaml refuses the syntax (the composer path then reports where)."""
    parser = _Loader(text)
    try:
        events: int = parser.raw_parse()
    except yaml.YAMLError:
        return None
    finally:
        parser.dispose()
    return events


def _check_events(events: int | None, file: str) -> None:
    """Refuse a document of more than MAX_EVENTS values before any path builds it: the work of reading and
    validating is bounded by what the document holds, not only by its bytes."""
    if events is not None and events > MAX_EVENTS:
        raise InputError([_diag(file, f"the file holds {events:,} YAML values (each scalar, list and mapping), over "
                                      f"the limit of {MAX_EVENTS:,}; it was not read",
                                hint="an inventory of 1,024 nodes and 100,000 jobs holds about 1.7 million")])


#: Nesting the fast path reads; deeper documents (never a real inventory) go through the composer.
_FAST_MAX_DEPTH = 64


class _NotPlain(Exception):
    """The fast path met something only the composer path reads or reports (raised and caught inside)."""


def _plain_scalar(value: str) -> Any:
    """The value of a plain scalar; `_NotPlain` for the refused forms."""
    tag = resolve_plain(value)
    if tag == _STR:
        return value
    try:
        return _core_value(tag, value)
    except _Refused:
        raise _NotPlain from None


def _read_plain(text: str) -> dict[str, Any] | None:
    """The data of a document that needs no diagnostic, built straight from libyaml's events; else None.

    Most of a large inventory's load time used to be spent composing a node tree (a Python object and two
    marks per value) and walking it again to build the data. Here each event goes straight into the data,
    and each distinct plain scalar is resolved once (`memo`: names, models and numbers repeat across
    thousands of entries). Anything this path does not read exactly as the composer path would -- an alias,
    an explicit tag, a refused or duplicate key or value, a syntax error, more than one document, a top level
    that is not a mapping, deep nesting -- returns None, and `_parse_composed` reads the file again to report
    it (or, for aliases and tags, to read it): the fast path never has to produce a diagnostic.
    """
    loader = _Loader(text)
    get_event = loader.get_event
    memo: dict[str, Any] = {}
    # Each open mapping or list collects its items in a list (a mapping's keys and values alternate) and
    # becomes a dict when it closes: the per-event work is one append.
    documents: list[Any] = []
    items = documents
    append = items.append
    open_parents: list[list[Any]] = []
    try:
        while True:
            event = get_event()
            cls = event.__class__
            if cls is ScalarEvent:
                if event.tag is not None:
                    return None
                value = event.value
                if event.implicit[0]:
                    try:
                        value = memo[value]
                    except KeyError:
                        value = memo[value] = _plain_scalar(value)
                append(value)
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                if event.tag is not None or len(open_parents) >= _FAST_MAX_DEPTH:
                    return None
                open_parents.append(items)
                items = []
                append = items.append
            elif cls is MappingEndEvent:
                pairs = iter(items)
                mapping = dict(zip(pairs, pairs, strict=True))  # TypeError for a list or mapping as a key
                if 2 * len(mapping) != len(items):
                    return None  # a duplicate key
                items = open_parents.pop()
                append = items.append
                append(mapping)
            elif cls is SequenceEndEvent:
                sequence = items
                items = open_parents.pop()
                append = items.append
                append(sequence)
            elif cls is StreamEndEvent:
                break
            elif cls is AliasEvent:
                return None
    except (yaml.YAMLError, _NotPlain, TypeError):
        return None
    finally:
        loader.dispose()
    if len(documents) != 1 or documents[0].__class__ is not dict:
        return None
    root: dict[str, Any] = documents[0]
    return root


def _compose(text: str, file: str) -> MappingNode:
    """The node tree of a one-document YAML text whose top level is a mapping; `InputError` otherwise."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise InputError(_syntax_error(exc, text, file)) from None
    finally:
        loader.dispose()
    if root is None or (isinstance(root, ScalarNode) and root.tag == _NULL and root.value == ""):
        raise InputError([_diag(file, "the file is empty: expected a mapping such as 'version: 1'", 1, 1)])
    if not isinstance(root, MappingNode):
        got = "a list" if isinstance(root, SequenceNode) else f"a single value {root.value!r}"
        line, column = _line_col(root)
        raise InputError([_diag(file, f"the top level must be a mapping (key: value lines), got {got}",
                                line, column)])
    return root


def _parse_composed(text: str, file: str) -> LoadedYaml:
    """The reference reading: compose the node tree, bound aliases, build the data, collect every error."""
    root = _compose(text, file)
    errors: list[_Error] = []
    if "*" in text:  # an alias needs a '*'; without one there is nothing to bound
        alias_error = _check_aliases(root)
        if alias_error is not None:
            errors.append(alias_error)
    builder = _Builder()
    data: dict[str, Any] = {}
    if not errors:
        try:
            data = builder.build(root)
        except RecursionError:
            errors.append(_Error("the document is nested too deeply", root))
        errors += builder.errors
    loaded = LoadedYaml(data, file, text, root)
    if errors:
        raise InputError(sorted((_locate_error(loaded, e) for e in errors), key=_sort_key))
    return loaded


def _locate_error(loaded: LoadedYaml, error: _Error) -> Diagnostic:
    at = error.key_node if error.key_node is not None else error.node
    line, column = _line_col(at) if at is not None else (None, None)
    path: tuple[PathPart, ...] = ()
    if error.node is not None:
        path = loaded.path_of(error.node) or ()
        if error.key is not None:
            path = (*path, error.key)
    return _diag(loaded.file, error.message, line, column, path, error.hint)


def _sort_key(d: Diagnostic) -> tuple[int, int]:
    return (d.line or 0, d.column or 0)


def load_yaml_file(path: str | Path, *, max_bytes: int | None = None) -> LoadedYaml:
    """`load_yaml` on a file, refusing an oversized file by its size before reading it."""
    name = str(path)
    limit = MAX_BYTES if max_bytes is None else max_bytes
    try:
        with open(path, "rb") as handle:
            _check_size(os.fstat(handle.fileno()).st_size, name, limit)
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError([_diag(name, f"cannot read the file: {exc.strerror or exc}")]) from None
    return load_yaml(data, name, max_bytes=limit)
