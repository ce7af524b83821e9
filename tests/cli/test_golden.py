"""Golden files for every output format of the read commands and of `plan`.

Run in-process through `gpuadmin.cli.main.run` (the same code path as the console script) so the whole matrix
stays fast; `test_cli_process.py` checks the real process separately. Regenerate after an intended change with
`GPUADMIN_UPDATE_GOLDEN=1 pytest tests/cli/test_golden.py` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuadmin.cli.main import run
from tests.cli.clikit import ROOT, SAMPLES

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1"
KINDS = ("nodes", "gpus", "slices", "groups", "jobs", "queues")
FORMATS = ("table", "wide", "json", "yaml", "name")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with GPUADMIN_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    os.chdir(ROOT)
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", KINDS)
def test_get_formats(capsys: pytest.CaptureFixture[str], kind: str, fmt: str) -> None:
    sample = "vsphere-hgx.yaml" if kind == "groups" else "oci-h100.yaml"
    code, out, err = invoke(capsys, "--inventory", str(SAMPLES / sample), "get", kind, "-o", fmt)
    assert code == 0, err
    assert err == "", "diagnostics only on stderr, and none here"
    check_golden(f"get-{kind}.{fmt}", out)


@pytest.mark.parametrize("kind,name", [("node", "gpu-h100-07"), ("gpu", "gpu-h100-07/1"),
                                       ("job", "llm-pretrain-70b"), ("queue", "research")])
@pytest.mark.parametrize("fmt", ("text", "json"))
def test_describe(capsys: pytest.CaptureFixture[str], kind: str, name: str, fmt: str) -> None:
    code, out, err = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "describe", kind, name,
                            "-o", fmt)
    assert code == 0, err
    check_golden(f"describe-{kind}.{fmt}", out)


@pytest.mark.parametrize("fmt", ("text", "json", "yaml"))
def test_plan_formats(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "plan", "-f",
                          str(ROOT / "docs/examples/repartition.yaml"), "-o", fmt)
    assert code == 0
    check_golden(f"plan-allowed.{fmt}", out)


def test_plan_refused_golden(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "plan", "-f",
                          str(Path(__file__).parent / "fixtures/refused.yaml"), "-o", "json")
    assert code == 1
    check_golden("plan-refused.json", out)


def test_selector_and_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "get", "gpus", "-l",
                          "pool=mig,mode=mig", "-o", "name")
    assert code == 0
    lines = out.splitlines()
    assert lines and all(line.startswith("gpu/gpu-h100-0") for line in lines)
    code, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "get", "jobs", "-l",
                          "status=pending", "-o", "name")
    assert code == 0 and len(out.splitlines()) == 17
    code, _, err = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "get", "nodes", "nope")
    assert code == 2 and "node 'nope' not found" in err


def test_describe_shows_derived_and_uncertain_marks(capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-facts marks H200 placements derived: describe must say so; H100 placements are verified."""
    _, h200, _ = invoke(capsys, "--inventory", str(SAMPLES / "k8s-mixed.yaml"), "describe", "gpu", "hgx-h200-01/0")
    assert "3g.71gb (id 9, 3c/4m, max 2, starts 0,4 [derived])" in h200
    _, h100, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "describe", "gpu", "gpu-h100-07/0")
    assert "3g.40gb (id 9, 3c/4m, max 2, starts 0,4)" in h100
