"""The strict YAML reader: YAML 1.2 scalars, every error located, bounded aliases, size and encoding."""

from __future__ import annotations

import gc
import math
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuadmin.model.diagnostics import Diagnostic, InputError, dotted
from gpuadmin.store import load_inventory, load_yaml, load_yaml_file, schema_diagnostics, yamlsafe

FIXTURES = Path(__file__).parent / "fixtures"


def errors_of(text: str | bytes, **kwargs: Any) -> list[Diagnostic]:
    with pytest.raises(InputError) as caught:
        load_yaml(text, "t.yaml", **kwargs)
    return caught.value.diagnostics


def one_error(text: str | bytes, **kwargs: Any) -> Diagnostic:
    diagnostics = errors_of(text, **kwargs)
    assert len(diagnostics) == 1, diagnostics
    assert diagnostics[0].kind == "yaml" and diagnostics[0].file == "t.yaml"
    return diagnostics[0]


@pytest.mark.parametrize(("written", "value"), [
    ("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False), ("FALSE", False),
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("y", "y"), ("n", "n"), ("Yes", "Yes"),
    ("NO", "NO"), ("On", "On"), ("tRUE", "tRUE"),
    ("0", 0), ("-5", -5), ("+7", 7), ("1234567890123", 1234567890123), ("0x1f", 31),
    ("1.5", 1.5), ("-0.25", -0.25), ("1e3", 1000.0), ("2.5E-3", 0.0025), (".5", 0.5), ("1.", 1.0),
    (".inf", math.inf), ("-.Inf", -math.inf),
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("", None),
    ("2024-01-01", "2024-01-01"), ("1_000", "1_000"), ("8.0U1", "8.0U1"), ("3g.40gb", "3g.40gb"),
    ("=", "="), ("0x", "0x"), ("1.2.3", "1.2.3"), ("+", "+"), (".", "."), ("-x", "-x"),
    ('"0755"', "0755"), ("'yes'", "yes"), ('"true"', "true"), ("'1:30'", "1:30"), ('""', ""),
    ("!!str 0755", "0755"), ("!!int 12", 12), ("!!float 1", 1.0), ("!!bool true", True), ("!!null ''", None),
])
def test_scalars_resolve_by_yaml_1_2_core(written: str, value: Any) -> None:
    assert load_yaml(f"v: {written}\n", "t.yaml").data == {"v": value}


def test_nan_is_a_float() -> None:
    assert math.isnan(load_yaml("v: .nan\n", "t.yaml").data["v"])


@pytest.mark.parametrize(("written", "message"), [
    ("0755", "'0755' looks like an octal"), ("012", "'012' looks like an octal"),
    ("00", "looks like an octal"), ("0o17", "'0o17' looks like an octal"),
    ("-012", "'-012' looks like an octal"), ("0b101", "binary"),
    ("1:30", "'1:30' is a YAML 1.1 base-60 number, which reads as 90"), ("-1:30", "reads as -90"),
    ("190:20:30", "reads as 685230"), ("!!int 0755", "looks like an octal"),
    ("!!int abc", "is not an integer"), ("!!float abc", "is not a number"),
    ("!!bool yes", "'yes' is not a boolean: write true or false"), ("!!null x", "is not null"),
    ("!!python/object:os.system x", "tag '!!python/object:os.system' is not allowed"),
    ("!!timestamp 2024-01-01", "tag '!!timestamp' is not allowed"),
    ("!local x", "tag '!local' is not allowed"), ("!!omap [{a: 1}]", "tag '!!omap' is not allowed"),
])
def test_refused_scalars(written: str, message: str) -> None:
    d = one_error(f"a: 1\nv: {written}\n")
    assert message in d.message
    assert (d.line, d.column, d.path) == (2, 4, ("v",))


def test_python_tags_never_construct_anything(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    d = one_error(f"v: !!python/object/apply:os.system ['touch {marker}']\n")
    assert "is not allowed" in d.message
    assert not marker.exists()


def test_duplicate_keys_name_both_lines() -> None:
    diagnostics = errors_of("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\na: 4\n")
    assert [(d.line, d.column, dotted(d.path), d.message) for d in diagnostics] == [
        (5, 3, "b.c", "duplicate key 'c' (first defined at line 3)"),
        (6, 1, "a", "duplicate key 'a' (first defined at line 1)"),
    ]


def test_duplicate_keys_in_flow_mappings_and_of_other_types() -> None:
    d = one_error("m: {x: 1, y: 2, x: 3}\n")
    assert (d.line, d.column, d.path) == (1, 17, ("m", "x"))
    assert "duplicate key 1" in one_error("m:\n  1: a\n  1: b\n").message
    assert "duplicate key True" in one_error("m: {true: a, True: b}\n").message


def test_all_errors_of_a_file_come_in_one_report_sorted_by_line() -> None:
    text = "a: 0755\nb: {x: 1, x: 2}\nc: !!binary aGk=\nd: 1:30\ne: fine\nf: 012\n"
    diagnostics = errors_of(text)
    assert [d.line for d in diagnostics] == [1, 2, 3, 4, 6]
    assert all(d.kind == "yaml" for d in diagnostics)


def test_non_scalar_keys_and_merge_keys_are_refused() -> None:
    assert "must be a plain scalar" in one_error("? [a, b]\n: 1\n").message
    d = one_error("base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n")
    assert "merge keys" in d.message and (d.line, d.column) == (3, 3)


def test_billion_laughs_fails_fast() -> None:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i, name in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    start = time.perf_counter()
    d = one_error("\n".join(lines) + "\n")
    assert time.perf_counter() - start < 0.5
    assert d.message.startswith("alias expansion exceeds 100,000 nodes")
    assert "nodes from 31 written" in d.message


def test_alias_bound_scales_with_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsafe, "ALIAS_MIN_BOUND", 50)
    # 9 nodes written, 41 expanded: within max(50, 10 * 9)
    loaded = load_yaml("a: &x [1, 2, 3]\nb: [*x, *x, *x, *x, *x, *x, *x, *x]\n", "t.yaml")
    assert loaded.data["b"][7] == [1, 2, 3]
    d = one_error("a: &x [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [" + ", ".join(["*x"] * 30) + "]\n")
    # 14 nodes written: the bound is max(50, 10 * 14)
    assert "alias expansion exceeds 140 nodes: the document expands to 314 nodes" in d.message and d.line == 1


def test_small_aliases_are_fine_and_recursive_ones_are_not() -> None:
    loaded = load_yaml("q: &q {gpus: 8}\nr: *q\ns: [*q, *q]\n", "t.yaml")
    assert loaded.data == {"q": {"gpus": 8}, "r": {"gpus": 8}, "s": [{"gpus": 8}, {"gpus": 8}]}
    d = one_error("a: &x\n  b: *x\n")
    assert "recursive alias" in d.message


@pytest.mark.parametrize(("text", "line", "column"), [
    ("a:\n\tb: 1\n", 2, 1),
    ("a:\n  b: 1\n  \tc: 2\n", 3, 3),
    ("a:\n  - \tb\n", 2, 5),
])
def test_tabs_for_indentation_are_named(text: str, line: int, column: int) -> None:
    d = one_error(text)
    assert "tab" in d.message and "spaces" in (d.hint or "")
    assert (d.line, d.column) == (line, column)


def test_tabs_where_yaml_allows_them_are_fine() -> None:
    assert load_yaml("a: {b: 1,\n\tc: 2}\nd: |\n  x\n  \ty\ne:\tf\n", "t.yaml").data == {
        "a": {"b": 1, "c": 2}, "d": "x\n\ty\n", "e": "f"}


@pytest.mark.parametrize(("text", "line", "column", "message"), [
    ("a: [1, 2\n", 1, 9, "did not find expected ',' or ']'"),
    ("a: {b: 1\n", 1, 9, "did not find expected ',' or '}'"),
    ('a: "abc', 1, 8, "found unexpected end of stream"),
    ("a:\n  b: 1\n  c", 3, 4, "could not find expected ':'"),
])
def test_truncated_files_point_at_their_end(text: str, line: int, column: int, message: str) -> None:
    d = one_error(text)
    assert (d.line, d.column) == (line, column)
    assert message in d.message and "truncated" in d.message


@pytest.mark.parametrize(("text", "line", "message"), [
    ("a: 1\n b: 2\n", 2, "mapping values are not allowed"),
    ("a:\n  - 1\n - 2\n", 3, ""),
    ("a: 1\n---\nb: 2\n", 2, "expected a single document in the stream, but found another document"),
    ("a: b: c\n", 1, "mapping values are not allowed"),
    ("a: [1, 2]]\n", 1, ""),
    ("a: 'x\x01y'\n", 1, "control characters are not allowed"),
])
def test_syntax_errors_carry_the_parsers_mark(text: str, line: int, message: str) -> None:
    d = one_error(text)
    assert d.line == line and d.column is not None
    assert message in d.message


def test_empty_and_non_mapping_documents() -> None:
    for text in ("", "\n\n", "# only a comment\n", "---\n...\n"):
        d = one_error(text)
        assert "the file is empty" in d.message and (d.line, d.column) == (1, 1)
    assert "got a list" in one_error("- a\n- b\n").message
    assert "got a single value 'hello'" in one_error("hello\n").message
    assert "got a single value None" not in one_error("[1]\n").message


def test_utf8_bom_is_accepted() -> None:
    assert load_yaml(b"\xef\xbb\xbfa: 1\n", "t.yaml").data == {"a": 1}
    assert load_yaml("\ufeffa: 1\n", "t.yaml").data == {"a": 1}
    inv = load_inventory(FIXTURES / "bom.yaml")
    assert inv.cluster == "bom-cluster"


def test_non_utf8_bytes_are_reported_by_offset() -> None:
    diagnostics = errors_of(b"a: caf\xe9\nb: ok\nc: \xff\xfe\n")
    assert [(d.line, d.column, d.message) for d in diagnostics] == [
        (1, 7, "not UTF-8: byte e9 at byte offset 6"),
        (3, 4, "not UTF-8: byte ff at byte offset 17"),
        (3, 5, "not UTF-8: byte fe at byte offset 18"),
    ]
    assert "UTF-16" in one_error("a: 1\n".encode("utf-16")).message


def test_non_ascii_text_keeps_character_columns() -> None:
    d = one_error("ä: ö\nb: [ü, 0755]\n")
    assert (d.line, d.column) == (2, 8)


def test_size_cap_is_checked_before_parsing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    d = one_error("a: 1234567890\n", max_bytes=8)
    assert d.message == "the file is 14 bytes, over the limit of 8 bytes; it was not read"
    assert d.line is None
    monkeypatch.setattr(yamlsafe, "MAX_BYTES", 100)
    one_error(b"a: [" + b"1, " * 40 + b"]\n")
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(10**9)  # sparse: refused by its size, never read
    start = time.perf_counter()
    with pytest.raises(InputError) as caught:
        load_yaml_file(big)
    assert time.perf_counter() - start < 0.5
    assert "1,000,000,000 bytes, over the limit of 100 bytes" in str(caught.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml_file(tmp_path / "missing.yaml")
    d = caught.value.diagnostics[0]
    assert d.file == str(tmp_path / "missing.yaml") and "No such file" in d.message


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    d = one_error("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nesting" in d.message


def test_gc_state_is_restored() -> None:
    assert gc.isenabled()
    load_yaml("a: 1\n", "t.yaml")
    assert gc.isenabled()
    errors_of("a: [\n")
    assert gc.isenabled()
    gc.disable()
    try:
        load_yaml("a: 1\n", "t.yaml")
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- path -> line:column, for diagnostics found after parsing ------------------------------------------

DOC = """\
top: 1
nodes:
  - name: a
    gpus:
      - {index: 0, model: X}
      - index: 1
        model: Y
  - name: b
list: [10, 20, {k: v}]
"""


def test_marks_of_values_keys_and_missing_paths() -> None:
    loaded = load_yaml(DOC, "doc.yaml")
    assert loaded.mark(("top",)) == (1, 6)
    assert loaded.mark(("top",), at_key=True) == (1, 1)
    assert loaded.mark(("nodes", 0, "gpus", 0, "model")) == (5, 27)
    assert loaded.mark(("nodes", 0, "gpus", 1, "model")) == (7, 16)
    assert loaded.mark(("nodes", 0, "gpus", 1, "model"), at_key=True) == (7, 9)
    assert loaded.mark(("nodes", 1)) == (8, 5)
    assert loaded.mark(("nodes", 1, "gpus")) == (8, 5), "a missing field points at its mapping"
    assert loaded.mark(("nodes", 7, "name")) == (3, 3), "an index past the end points at the list"
    assert loaded.mark(("list", 2, "k")) == (9, 20)
    assert loaded.mark(()) == (1, 1)


def test_locate_fills_in_file_line_and_column() -> None:
    loaded = load_yaml(DOC, "doc.yaml")
    d = loaded.locate(Diagnostic("unknown GPU model 'Y'", ("nodes", 0, "gpus", 1, "model"), "reference"))
    assert str(d) == "doc.yaml:7:16: nodes[0].gpus[1].model: unknown GPU model 'Y'"
    assert loaded.locate(d.located(None, 2, 3)).line == 2, "an already-located diagnostic keeps its place"


def test_the_success_path_computes_no_paths() -> None:
    loaded = load_yaml(DOC, "doc.yaml")
    assert loaded._paths is None
    node, covered, _ = loaded.node_at(("nodes", 0, "gpus", 1, "model"))
    assert covered == 5 and loaded.path_of(node) == ("nodes", 0, "gpus", 1, "model")


def test_a_change_file_loads_like_any_mapping() -> None:
    loaded = load_yaml("changes:\n  - {op: cordon, node: gpu-01}\n  - op: set-mode\n    node: n\n", "c.yaml")
    assert loaded.data == {"changes": [{"op": "cordon", "node": "gpu-01"}, {"op": "set-mode", "node": "n"}]}


# --- schema_diagnostics is generic: discriminated unions (change files) -------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _Cordon(_Strict):
    op: Literal["cordon"]
    node: str


class _SetMode(_Strict):
    op: Literal["set-mode"]
    node: str
    mode: Literal["full", "mig"]


class _Changes(_Strict):
    changes: list[Annotated[_Cordon | _SetMode, Field(discriminator="op")]]


def test_schema_diagnostics_drop_union_tags_and_locate_them() -> None:
    text = """\
changes:
  - {op: cordon}
  - {op: set-mode, node: n, mode: MIG, extra: 1}
  - {op: cordn, node: n}
  - {node: n}
"""
    loaded = load_yaml(text, "c.yaml")
    with pytest.raises(ValidationError) as caught:
        _Changes.model_validate(loaded.data)
    diagnostics = schema_diagnostics(caught.value, loaded, _Changes, union_tags=("cordon", "set-mode"))
    assert [str(d) for d in diagnostics] == [
        "c.yaml:2:5: changes[0].node: missing required field 'node'",
        "c.yaml:3:35: changes[1].mode: expected one of full, mig, got 'MIG' "
        "(hint: values are case-sensitive: write mig)",
        "c.yaml:3:40: changes[1].extra: unknown field 'extra' (hint: allowed here: op, node, mode)",
        "c.yaml:4:10: changes[2]: unknown op 'cordn': expected one of cordon, set-mode "
        "(hint: did you mean cordon?)",
        "c.yaml:5:5: changes[3]: missing required field 'op'",
    ]
