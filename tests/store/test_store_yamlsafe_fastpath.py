"""The strict reader's fast path (libyaml events straight to data) reads exactly what the composer path reads.

`yamlsafe._read_plain` either returns the same data as `_parse_composed` (type for type: `1`, `1.0` and
`true` differ) or returns None, after which `load_yaml` reads the file with the composer path, which reports
every diagnostic. These tests hold the two paths against each other on every bundled YAML file, on
generated inventories, on hand-picked YAML 1.1 surprises and on generated documents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuadmin.model.diagnostics import InputError
from gpuadmin.store import load_yaml, yamlsafe
from gpuadmin.store.generate import dump_inventory, generate_inventory

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = Path("/work/shared/data")


def _yaml_files() -> list[Path]:
    roots = [REPO / "sample-inventories", REPO / "gpuadmin" / "samples", REPO / "tests", SHARED_DATA]
    found = {p for root in roots if root.is_dir() for ext in ("*.yaml", "*.yml") for p in root.rglob(ext)}
    return sorted(found)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (`==` alone says `1 == 1.0 == True`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(k, k2) and same(a[k], b[k2]) for k, k2 in zip(a, b, strict=True))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b or (a != a and b != b)  # nan


def assert_paths_agree(text: str) -> None:
    """The fast path returns the composer path's data, or None where the composer path refuses the text."""
    fast = yamlsafe._read_plain(text)
    try:
        composed = yamlsafe._parse_composed(text, "t.yaml").data
    except InputError:
        assert fast is None, f"the fast path read a document the composer path refuses: {text!r}"
        return
    if fast is not None:
        assert same(fast, composed), (fast, composed)


YAML_FILES = _yaml_files()


def test_there_are_files_to_compare() -> None:
    assert len([p for p in YAML_FILES if "sample-inventories" in p.parts]) >= 3


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_bundled_yaml_file_reads_the_same_on_both_paths(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace").removeprefix("\ufeff")
    assert_paths_agree(text)


@pytest.mark.parametrize("path", [p for p in YAML_FILES if "sample-inventories" in p.parts],
                         ids=lambda p: p.name)
def test_sample_inventories_take_the_fast_path(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    loaded = load_yaml(text, str(path))
    if "*" not in text:  # aliases are read by the composer path
        assert loaded._root is None, "the fast path composes no node tree"
    assert same(loaded.data, yamlsafe._parse_composed(text, str(path)).data)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_inventories_read_the_same_on_both_paths(seed: int, tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    with path.open("w", encoding="utf-8") as out:
        dump_inventory(generate_inventory(24, 200, seed), out)
    text = path.read_text(encoding="utf-8")
    fast = yamlsafe._read_plain(text)
    assert fast is not None
    assert same(fast, yamlsafe._parse_composed(text, "inv.yaml").data)


READ_ON_THE_FAST_PATH = [
    "a: 1\n",
    "a: [1, 2.5, -3, +4, 0x1f, 1e3, .5, 1., .inf, -.Inf, .nan]\n",
    "a: {b: true, c: False, d: TRUE, e: yes, f: no, g: on, h: off, i: y, j: n}\n",
    "a: ~\nb: null\nc:\nd: Null\ne: ''\nf: \"\"\n",
    "~: x\nnull2: y\n",
    "1: a\n2: b\nfalse: c\n1.5: d\n",
    "a: '0755'\nb: \"1:30\"\nc: 'yes'\nd: '<<'\n",
    "a: 2024-01-01\nb: 1_000\nc: 8.0U1\nd: 3g.40gb\ne: 1.2.3\nf: '-'\n",
    "a: |\n  text\n  more\nb: >\n  folded\n  text\n",
    "a:\n  - b: 1\n    c: [x, {d: e}]\n  - []\n  - {}\n",
    "anchored: &a 5\nplain: 6\n",
    "a: 1\n...\n",
    "--- \na: 1\n",
]

REFUSED_OR_LEFT_TO_THE_COMPOSER = [
    "a: 0755\n", "a: 012\n", "a: 0o17\n", "a: 0b101\n", "a: 1:30\n", "a: -1:30\n",
    "base: &b {x: 1}\nm:\n  <<: *b\n",
    "a: 1\na: 2\n", "m: {x: 1, y: 2, x: 3}\n", "m: {1: a, 1: b}\n", "m: {true: a, True: b}\n",
    "? [a, b]\n: 1\n", "? {a: 1}\n: 1\n",
    "q: &q {gpus: 8}\nr: *q\n", "a: &x\n  b: *x\n",
    "a: !!str 0755\n", "a: !!int 12\n", "a: !!python/object:os.system x\n", "a: !local x\n", "a: ! 12\n",
    "a: !!map {b: 1}\n", "a: !!seq [1]\n", "a: !!binary aGk=\n",
    "", "# comment\n", "---\n...\n", "- a\n- b\n", "hello\n",
    "a: 1\n---\nb: 2\n", "a: [1, 2\n", "a: b: c\n", "a:\n\tb: 1\n", "a: 'x\x01y'\n",
    "a: " + "[" * 100 + "]" * 100 + "\n",
]


@pytest.mark.parametrize("text", READ_ON_THE_FAST_PATH)
def test_plain_documents_take_the_fast_path(text: str) -> None:
    assert yamlsafe._read_plain(text) is not None
    assert_paths_agree(text)


@pytest.mark.parametrize("text", REFUSED_OR_LEFT_TO_THE_COMPOSER)
def test_surprises_and_errors_are_left_to_the_composer_path(text: str) -> None:
    assert yamlsafe._read_plain(text) is None
    assert_paths_agree(text)


def test_marks_after_the_fast_path_are_the_composer_paths() -> None:
    text = "top: 1\nnodes:\n  - name: a\n    gpus:\n      - {index: 0, model: X}\n      - index: 1\n        model: Y\n"
    fast = load_yaml(text, "doc.yaml")
    assert fast._root is None
    composed = yamlsafe._parse_composed(text, "doc.yaml")
    for path in [("top",), ("nodes", 0, "gpus", 0, "model"), ("nodes", 0, "gpus", 1, "model"), ("nodes", 3)]:
        assert fast.mark(path) == composed.mark(path)
        assert fast.mark(path, at_key=True) == composed.mark(path, at_key=True)
    assert fast._root is not None


# --- generated documents: plain tokens chosen to hit every resolver branch, in block and flow style ----------

TOKENS = ["a", "name", "gpu-01", "H100-SXM5-80GB", "0", "7", "-5", "+3", "0x1f", "0x", "1.5", ".5", "1.", "1e3",
          "2.5E-3", ".inf", "-.Inf", ".nan", "true", "False", "TRUE", "tRUE", "yes", "no", "on", "off", "y",
          "n", "~", "null", "Null", "NULL", "0755", "00", "012", "0o17", "0b101", "1:30", "190:20:30",
          "2024-01-01", "1_000", "8.0U1", "<<", "'quoted'", '"0755"', "'yes'", '""', "-x", "=", "1.2.3"]

scalars = st.sampled_from(TOKENS)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(scalars, inner, max_size=4),
    max_leaves=20,
)


def flow(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    return str(value)


def block(value: Any, indent: str = "") -> str:
    if isinstance(value, dict) and value:
        return "".join(f"{indent}{k}:" + (f"\n{block(v, indent + '  ')}" if isinstance(v, (dict, list)) and v
                                          else f" {flow(v)}\n") for k, v in value.items())
    if isinstance(value, list) and value:
        return "".join(f"{indent}-" + (f"\n{block(v, indent + '  ')}" if isinstance(v, (dict, list)) and v
                                       else f" {flow(v)}\n") for v in value)
    return f"{indent}{flow(value)}\n"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(scalars, documents, min_size=1, max_size=5), st.booleans())
@example({"true": "a", "1.": "a"}, False)  # keys read as True and 1.0: once crashed the error's dotted path
def test_generated_documents_read_the_same_on_both_paths(doc: dict[str, Any], in_flow: bool) -> None:
    assert_paths_agree(flow(doc) + "\n" if in_flow else block(doc))
