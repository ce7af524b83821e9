"""The strict reader's fast path reads exactly what the composer path (the reference) reads.

`yamlsafe._read_plain` (libyaml events straight to data) either returns the same data as `_parse_composed`
(type for type: `1`, `1.0` and `true` differ) or returns None, after which `load_yaml` reads the file through
the composer path, which reports every diagnostic. These tests hold the fast path against the reference on
every bundled YAML file (the sample inventories, the tests' fixtures and the real NVIDIA files of
/work/shared/data), on generated inventories, on hand-picked YAML 1.1 surprises, on generated documents and on
mutated inventories.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench.generate import dump_inventory, generate_inventory
from gpuadmin.model.diagnostics import InputError
from gpuadmin.store import load_yaml, yamlsafe

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
    """The fast path returns the composer path's data, or None; always None where the composer path refuses."""
    fast = yamlsafe._read_plain(text)
    try:
        composed = yamlsafe._parse_composed(text, "t.yaml").data
    except InputError:
        assert fast is None, f"the fast path read a document the composer path refuses: {text!r}"
        return
    if fast is not None:
        assert same(fast, composed), (text, fast, composed)


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
    "a: plain text\n  continued\nb: 'single\n\n  quoted'\nc: \"double\n  quoted\"\n",
    "a: 1  # 10 GPUs at 2.5 each\n# 10: a comment\n",
    "nodes: [\n  {name: gpu-01, gpus: 8},\n  {name: gpu-02, gpus: 4}\n]\n",
    "anchored: &a 5\nplain: 6\n",
    # the edges of the integer range, and floats past the largest (infinite: the schemas refuse them by field)
    "a: [9223372036854775807, -9223372036854775808, 0x7fffffffffffffff, 0x000000000000000000001]\n",
    "a: [1e999, -1e999, .inf, " + "1" * 400 + ".5]\n",
    "a: 1\n...\n",
    "--- \na: 1\n",
]

# Integers past the signed 64-bit range are refused by both paths (a 5,000-digit one once crashed the reader)
HUGE_INTEGERS = [
    "a: 9223372036854775808\n", "a: -9223372036854775809\n", "a: 0x10000000000000000\n",
    "a: [1, " + "9" * 5000 + "]\n", "9223372036854775808: a\n", "a: !!float 0x" + "f" * 5000 + "\n",
    "a: !!int " + "1" * 30 + "\n",
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
    *HUGE_INTEGERS,
]


@pytest.mark.parametrize("text", READ_ON_THE_FAST_PATH)
def test_plain_documents_take_the_fast_path(text: str) -> None:
    assert yamlsafe._read_plain(text) is not None
    assert_paths_agree(text)


@pytest.mark.parametrize("text", REFUSED_OR_LEFT_TO_THE_COMPOSER)
def test_surprises_and_errors_are_left_to_the_composer_path(text: str) -> None:
    assert yamlsafe._read_plain(text) is None
    assert_paths_agree(text)


@pytest.mark.parametrize("text", HUGE_INTEGERS)
def test_a_huge_integer_is_refused_at_its_line_and_column(text: str) -> None:
    with pytest.raises(InputError) as refused:
        load_yaml(text, "t.yaml")
    [diagnostic] = refused.value.diagnostics
    assert "is out of range: integers are read between -2^63 and 2^63-1" in diagnostic.message
    assert (diagnostic.file, diagnostic.line) == ("t.yaml", 1)
    assert len(diagnostic.message) < 200, "a huge integer is shown shortened"


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
          "2024-01-01", "1_000", "8.0U1", "<<", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
          "0x10000000000000000", "1e999", "9" * 5000, "'quoted'", '"0755"', "'yes'", '""', "-x", "=", "1.2.3"]

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



# Generated documents in a plain dialect: block and flow collections, multi-line plain and quoted
# scalars, comments, empty values, odd indentation, nested sequences.
PLAIN_ATOMS = ["a", "b c", "x-y", "1", "0", "-1", "2.5", "1e3", "true", "null", "", "'q r'", "'it''s'", '"d e"',
               '"1"', "a#b", "x # c", "a:b", "é", "'multi\n   line'", '"x\n\n  y"', "plain\n   continued",
               "[1, 2]", "{a: 1}", "[a: 1]", "{a, b}", "[[1], [2]]", "[\n  1,\n  2\n]", "{\n a: 1,\n b: 2}", "[]",
               "{}", "@", "a,b", "[a, b,]", "1g.10gb", "2026-12-01T10:00:00Z"]
PLAIN_KEYS = ["a", "b", "name", "k y", "'q'", '"dq"', "1", "0", "-1", "true", "2.5", "x1", "null"]


def _plain_dialect_document(rnd: random.Random) -> str:
    lines: list[str] = ["top:"]

    def entries(depth: int, indent: int) -> None:
        pad = " " * indent
        for _ in range(rnd.randint(1, 3)):
            if rnd.random() < 0.5:
                key = rnd.choice(PLAIN_KEYS)
                if depth < 3 and rnd.random() < 0.35:
                    lines.append(f"{pad}{key}:" + rnd.choice(["", " # c", "  "]))
                    entries(depth + 1, indent + rnd.choice([0, 2, 3]))
                else:
                    lines.append(f"{pad}{key}:{rnd.choice([' ', '   '])}{rnd.choice(PLAIN_ATOMS)}")
            elif depth < 3 and rnd.random() < 0.3:
                lines.extend([f"{pad}- a: {rnd.choice(PLAIN_ATOMS)}", f"{pad}  b: {rnd.choice(PLAIN_ATOMS)}"])
            else:
                lines.append(f"{pad}- {'- ' * rnd.randint(0, 1)}{rnd.choice(PLAIN_ATOMS)}")

    entries(1, rnd.choice([0, 2]))
    return "\n".join(lines) + rnd.choice(["\n", "", "\n\n", "\n# end\n"])


def _mutated(rnd: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randrange(len(chars))
        roll = rnd.random()
        if roll < 0.4:
            chars[at] = rnd.choice(" :-,[]{}#'\"\n0_.x1")
        elif roll < 0.7:
            chars.insert(at, rnd.choice([" ", ":", "-", "0", "_", "\n", "'", "[", "]", "{", ",", "0755", "1_0",
                                         "\n- ", "\n  "]))
        else:
            del chars[at]
    return "".join(chars)


@pytest.mark.parametrize("seed", range(4))
def test_generated_plain_dialect_documents_read_the_same_on_both_paths(seed: int) -> None:
    rnd = random.Random(seed)
    read_by_the_fast_path = 0
    for _ in range(400):
        text = _plain_dialect_document(rnd)
        read_by_the_fast_path += yamlsafe._read_plain(text) is not None
        assert_paths_agree(text)
    assert read_by_the_fast_path > 100, "the generator must exercise the fast path"


SAMPLE_INVENTORIES = [p for p in YAML_FILES if "sample-inventories" in p.parts]


def _mutations_read_the_same_on_both_paths(path: Path, count: int) -> None:
    rnd = random.Random(path.name)
    text = path.read_text(encoding="utf-8")
    for _ in range(count):
        assert_paths_agree(_mutated(rnd, text))


@pytest.mark.parametrize("path", SAMPLE_INVENTORIES, ids=lambda p: p.name)
def test_mutated_sample_inventories_read_the_same_on_both_paths(path: Path) -> None:
    _mutations_read_the_same_on_both_paths(path, 50)


@pytest.mark.slow  # more mutations of the same kind (the first 50 are the CI slice's): a minute on CI's 2 cores
@pytest.mark.parametrize("path", SAMPLE_INVENTORIES, ids=lambda p: p.name)
def test_mutated_sample_inventories_read_the_same_on_both_paths_150(path: Path) -> None:
    _mutations_read_the_same_on_both_paths(path, 150)


def test_equal_plain_strings_read_by_the_fast_path_are_one_object() -> None:
    """The models keep these strings: a queue's name in 100,000 jobs is one string, not 100,000."""
    data = yamlsafe._read_plain("jobs:\n- {queue: research, model: H100}\n- {queue: research, model: H100}\n")
    assert data is not None
    first, second = data["jobs"]
    assert first["queue"] is second["queue"] and first["model"] is second["model"]
