"""The malformed-inventory corpus: every file is refused with the diagnostics its manifest entry names.

Each case runs twice: through `load_inventory` (line, column, path, message and kind of each expected
diagnostic), and through the real CLI, `python -m gpuadmin.cli.main validate FILE...`, which must exit 2
and print `file:line:column: path: message` on stderr for each expected diagnostic.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.model.diagnostics import Diagnostic, InputError, dotted
from gpuadmin.store import load_inventory, load_yaml_file, yamlsafe

HERE = Path(__file__).parent
CORPUS = HERE / "malformed"
REPO = HERE.parent.parent
MANIFEST: dict[str, Any] = load_yaml_file(CORPUS / "expected.yaml").data
CASES = sorted(MANIFEST)


def _diagnostics(path: Path, monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any]) -> list[Diagnostic]:
    if "max_bytes" in entry:
        monkeypatch.setattr(yamlsafe, "MAX_BYTES", entry["max_bytes"])
    with pytest.raises(InputError) as caught:
        load_inventory(path)
    return caught.value.diagnostics


def _matches(d: Diagnostic, want: dict[str, Any]) -> bool:
    if want.get("line") is not None and d.line != want["line"]:
        return False
    if want.get("column") is not None and d.column != want["column"]:
        return False
    if want.get("kind") is not None and d.kind != want["kind"]:
        return False
    return want["path"] in dotted(d.path) and want["message"] in d.message


def test_corpus_is_complete() -> None:
    files = {p.name for p in CORPUS.glob("*.yaml")} - {"expected.yaml"}
    assert files == set(MANIFEST), "every corpus file has a manifest entry and the other way round"
    assert len(files) >= 100


@pytest.mark.parametrize("name", CASES)
def test_load_inventory_reports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = MANIFEST[name]
    path = CORPUS / name
    diagnostics = _diagnostics(path, monkeypatch, entry)
    shown = "\n".join(str(d) for d in diagnostics)
    for want in entry["errors"]:
        assert any(_matches(d, want) for d in diagnostics), f"expected {want} among:\n{shown}"
    if "count" in entry:
        assert len(diagnostics) == entry["count"], shown
    for d in diagnostics:
        assert d.file == str(path)
        if d.line is not None:
            assert d.line >= 1 and (d.column is None or d.column >= 1)
    lines = [(d.line or 0, d.column or 0) for d in diagnostics]
    assert lines == sorted(lines), "diagnostics are sorted by line"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=60, check=False)


CLI_CASES = [n for n in CASES if MANIFEST[n].get("cli", True)]
# one real `validate FILE` process per case for a sample of every kind; the rest share one `validate FILE...`
# run (same code path, per-file output; ~0.4 s of interpreter start-up saved per case)
SOLO = sorted({"type-string-for-int-cpus.yaml", "missing-gpu-model.yaml", "extra-key-gpu.yaml",
               "duplicate-key-node.yaml", "bool-yaml11-yes-nvlink.yaml", "number-octal-0755.yaml",
               "alias-billion-laughs.yaml", "tab-indent-node-key.yaml", "truncated-mid-flow-sequence.yaml",
               "unknown-gpu-model.yaml", "dangling-job-queue.yaml", "empty-file.yaml", "non-utf8-latin1.yaml",
               "multi-schema-errors.yaml"})


@pytest.fixture(scope="module")
def batch_run() -> subprocess.CompletedProcess[str]:
    return _cli("validate", *(str(CORPUS / n) for n in CLI_CASES))


def _assert_reported(name: str, run: subprocess.CompletedProcess[str]) -> None:
    path = CORPUS / name
    assert f"{path}: ok" not in run.stdout
    for want in MANIFEST[name]["errors"]:
        where = str(path)
        if want.get("line") is not None:
            where += f":{want['line']}"
            if want.get("column") is not None:
                where += f":{want['column']}"
        matching = [line for line in run.stderr.splitlines() if line.startswith(where + ":")]
        assert matching, f"no stderr line starts with {where}:"
        assert any(want["path"] in line and want["message"] in line for line in matching), matching


@pytest.mark.parametrize("name", SOLO)
def test_cli_validate_one_file_exits_2(name: str) -> None:
    assert name in CLI_CASES
    run = _cli("validate", str(CORPUS / name))
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    _assert_reported(name, run)


def test_cli_validate_all_files_exits_2(batch_run: subprocess.CompletedProcess[str]) -> None:
    assert batch_run.returncode == 2
    assert batch_run.stdout == "", "no malformed file is reported as ok"


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_validate_reports(name: str, batch_run: subprocess.CompletedProcess[str]) -> None:
    _assert_reported(name, batch_run)


def test_cli_refuses_a_file_over_the_real_size_cap(tmp_path: Path) -> None:
    """The corpus lowers the cap in-process; here a file over the real 64 MiB cap goes through the CLI."""
    big = tmp_path / "huge.yaml"
    with big.open("wb") as handle:
        handle.write(b"version: 1\ncluster: huge\n")
        handle.truncate(yamlsafe.MAX_BYTES + 1)  # sparse: no 64 MiB written to disk
    run = _cli("validate", str(big))
    assert run.returncode == 2
    assert f"{big}: the file is {yamlsafe.MAX_BYTES + 1:,} bytes" in run.stderr
