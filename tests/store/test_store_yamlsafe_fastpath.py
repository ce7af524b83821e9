"""The strict reader's fast paths read exactly what the composer path (the reference) reads.

`yamlsafe._read_yaml_rs` (yaml-rs, where its reading is checked to be ours) and `yamlsafe._read_plain` (libyaml
events straight to data) each either return the same data as `_parse_composed` (type for type: `1`, `1.0` and
`true` differ) or return None, after which `load_yaml` tries the next path and finally the composer path,
which reports every diagnostic. These tests hold each fast path against the reference on every bundled YAML
file, on generated inventories, on hand-picked YAML 1.1 surprises and parser differences, on generated
documents and on mutated inventories.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
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


FAST_READERS = (yamlsafe._read_yaml_rs, yamlsafe._read_plain)


def assert_paths_agree(text: str) -> None:
    """Each fast path returns the composer path's data, or None; always None where the composer path refuses."""
    fast = [read(text) for read in FAST_READERS]
    try:
        composed = yamlsafe._parse_composed(text, "t.yaml").data
    except InputError:
        assert fast == [None, None], f"a fast path read a document the composer path refuses: {text!r}"
        return
    for read, data in zip(FAST_READERS, fast, strict=True):
        if data is not None:
            assert same(data, composed), (read.__name__, text, data, composed)


YAML_FILES = _yaml_files()


def test_there_are_files_to_compare() -> None:
    assert len([p for p in YAML_FILES if "sample-inventories" in p.parts]) >= 3


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_bundled_yaml_file_reads_the_same_on_every_path(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace").removeprefix("\ufeff")
    assert_paths_agree(text)


@pytest.mark.parametrize("path", [p for p in YAML_FILES if "sample-inventories" in p.parts],
                         ids=lambda p: p.name)
def test_sample_inventories_take_the_fast_path(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    loaded = load_yaml(text, str(path))
    assert loaded._root is None, "the fast paths compose no node tree"
    assert yamlsafe._read_yaml_rs(text) is not None, "the samples are read by yaml-rs"
    assert same(loaded.data, yamlsafe._parse_composed(text, str(path)).data)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_inventories_read_the_same_on_every_path(seed: int, tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    with path.open("w", encoding="utf-8") as out:
        dump_inventory(generate_inventory(24, 200, seed), out)
    text = path.read_text(encoding="utf-8")
    composed = yamlsafe._parse_composed(text, "inv.yaml").data
    for read in FAST_READERS:
        fast = read(text)
        assert fast is not None, read.__name__
        assert same(fast, composed)


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
    # the edges of the integer range, and floats past the largest (infinite: the schemas refuse them by field)
    "a: [9223372036854775807, -9223372036854775808, 0x7fffffffffffffff, 0x000000000000000000001]\n",
    "a: [1e999, -1e999, .inf, " + "1" * 400 + ".5]\n",
    "a: 1\n...\n",
    "--- \na: 1\n",
]

# Integers past the signed 64-bit range are refused by every path (a 5,000-digit one once crashed the reader)
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
def test_generated_documents_read_the_same_on_every_path(doc: dict[str, Any], in_flow: bool) -> None:
    assert_paths_agree(flow(doc) + "\n" if in_flow else block(doc))



# --- yaml-rs: where it reads differently from the core schema or from libyaml, the file goes down the next path

READ_BY_YAML_RS = [
    "a: 1\n",
    "a: [1, 2.5, -3, +4, 1e3, 0.5, -0, 10]\n",
    "a: {b: true, c: False, d: TRUE, e: yes, f: no, g: on, h: off, i: y, j: n}\n",
    "a: ~\nb: null\nc:\nd: Null\ne: ''\nf: \"\"\n",
    "a: '0755'\nb: \"1:30\"\nc: 'yes'\nd: \"1_000\"\n",  # quoted: strings on both
    "a: 2024-01-01\nb: 2026-12-01T10:00:00Z\nc: 8.0U1\nd: 3g.40gb\ne: 1.2.3\nf: '-'\n",
    "a:\n  - b: 1\n    c: [x, {d: e}]\n  - []\n  - {}\n  - - nested\n",
    "a: plain text\n  continued\nb: 'single\n\n  quoted'\nc: \"double\n  quoted\"\n",
    "a: 1  # 10 GPUs at 2.5 each\n# 10: a comment\n",  # tokens in comments are checked too, and alike here
    "a: 0x1f\n",  # 31 on both
    "1: a\n2.5: b\nfalse: c\n",  # number and boolean keys resolve alike
    "nodes: [\n  {name: gpu-01, gpus: 8},\n  {name: gpu-02, gpus: 4}\n]\n",
]

LEFT_BY_YAML_RS = [
    # numbers yaml-rs reads more widely than the core schema (strings there), or YAML 1.1 forms we refuse
    "a: _1\n", "a: 1_000\n", "a: 0X1F\n", "a: +_1\n", "a: .0_\n", "a: 0_8.\n",
    "a: 0755\n", "a: 00\n", "a: 0o17\n", "a: 0b101\n", "a: 1:30\n", "0755: a\n", "a: [1, 012]\n",
    "a: 1  # 0755 in a comment\n",  # checked like any token: harmless, the next path reads the file
    # syntax only yaml-rs accepts, keys that collapse into one Python key, duplicates
    "a: [+6:]\n", "a: [x:]\n", "true: a\nTrue: b\n", "a: 1\na: 2\n", "m: {x: 1, x: 2}\n",
    "a: [b, {c: d}: e]\n",  # a mapping as a key, in a list: yaml-rs makes it a frozenset; only the count tells
    # constructs left to the other paths: tags, anchors and aliases, complex keys, block scalars, escapes,
    # merge keys, several documents, tabs, a byte order mark, control characters, deep nesting
    "a: !!str 1\n", "a: &x 1\nb: *x\n", "? [a]\n: 1\n", "[a]: 1\n", "{a: 1}: b\n", "a: |\n  x\n",
    "a: >\n  x\n", "a: \"\\x41\"\n", "base: {x: 1}\nm:\n  <<: {y: 2}\n", "a: 1\n---\nb: 2\n",
    "--- \na: 1\n", "a:\tb\n", "\ufeffa: 1\n", "a: 'x\x07y'\n", "a: 1\r\nb: 2\r\n",
    "a: " + "[" * 100 + "]" * 100 + "\n",
    *HUGE_INTEGERS,
    # not a mapping at the top, or empty
    "- a\n", "hello\n", "", "# only a comment\n",
]


@pytest.mark.parametrize("text", READ_BY_YAML_RS)
def test_plain_documents_are_read_by_yaml_rs(text: str) -> None:
    assert yamlsafe._read_yaml_rs(text) is not None
    assert_paths_agree(text)


@pytest.mark.parametrize("text", LEFT_BY_YAML_RS)
def test_where_yaml_rs_may_differ_the_file_goes_down_the_next_path(text: str) -> None:
    assert yamlsafe._read_yaml_rs(text) is None
    assert_paths_agree(text)


@pytest.mark.parametrize(("token", "alike"), [
    ("8", True), ("-3", True), ("2.5", True), ("1e3", True), ("true", True), ("1g.10gb", True),
    ("2026-12-01T10:00:00Z", True), ("H100-SXM5-80GB", True),
    ("0755", False), ("1_000", False), ("_1", False), ("0X1F", False), ("1:30", False), (".nan", False),
])
def test_number_like_tokens_are_compared_under_both_schemas(token: str, alike: bool) -> None:
    assert yamlsafe._resolves_alike(token) is alike


def test_the_large_generated_inventory_is_read_by_yaml_rs(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    with path.open("w", encoding="utf-8") as out:
        dump_inventory(generate_inventory(64, 2000, 7), out)
    text = path.read_text(encoding="utf-8")
    fast = yamlsafe._read_yaml_rs(text)
    assert fast is not None
    assert same(fast, yamlsafe._parse_composed(text, "inv.yaml").data)


# Generated documents in the dialect yaml-rs takes: block and flow collections, multi-line plain and quoted
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
def test_generated_plain_dialect_documents_read_the_same_on_every_path(seed: int) -> None:
    rnd = random.Random(seed)
    read_by_yaml_rs = 0
    for _ in range(400):
        text = _plain_dialect_document(rnd)
        read_by_yaml_rs += yamlsafe._read_yaml_rs(text) is not None
        assert_paths_agree(text)
    assert read_by_yaml_rs > 100, "the generator must exercise the yaml-rs path"


@pytest.mark.parametrize("path", [p for p in YAML_FILES if "sample-inventories" in p.parts], ids=lambda p: p.name)
def test_mutated_sample_inventories_read_the_same_on_every_path(path: Path) -> None:
    rnd = random.Random(path.name)
    text = path.read_text(encoding="utf-8")
    for _ in range(150):
        assert_paths_agree(_mutated(rnd, text))


def test_equal_strings_read_by_yaml_rs_are_one_object() -> None:
    data = yamlsafe._read_yaml_rs("jobs:\n- {queue: research, model: H100}\n- {queue: research, model: H100}\n")
    assert data is not None
    first, second = data["jobs"]
    assert first["queue"] is second["queue"] and first["model"] is second["model"]


_GIVES_MEMORY_BACK = """
import gc, os
from gpuadmin.store import yamlsafe
def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20
text = "jobs:\\n" + "".join(f"- {{name: job-{i}, queue: q{i % 50}, request: {{gpus: {i % 8 + 1}}}}}\\n"
                            for i in range(100_000))
before = rss_mib()
data = yamlsafe._read_yaml_rs(text)
assert data is not None and len(data["jobs"]) == 100_000
del data
gc.collect()
print(rss_mib() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
def test_yaml_rs_gives_its_parse_memory_back() -> None:
    """yaml-rs allocates with mimalloc, which keeps freed memory unless told to purge (about 50 MB here)."""
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    out = subprocess.run([sys.executable, "-c", _GIVES_MEMORY_BACK], env=env, capture_output=True, text=True,
                         check=True)
    assert int(out.stdout) < 20, f"{out.stdout.strip()} MiB still resident after the data was freed"
