"""The JSON and YAML output of every listing holds to its pydantic output model (gpuadmin.render.output_models),
and the schemas published in docs/schemas/ are the models' own.

Regenerate the schemas after an intended change of the models with `python -m tests.cli.test_output_schemas` (or
`GPUADMIN_UPDATE_GOLDEN=1 pytest tests/cli/test_output_schemas.py`), review the diff, and raise
`FORMAT_VERSION` when a field was removed, renamed or changed type (docs/cli.md, "Output formats").
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpuadmin.cli.main import run
from gpuadmin.render.output_models import FORMAT_VERSION, json_schema, list_model, listing_names
from tests.cli.clikit import ROOT, SAMPLES

SCHEMAS = ROOT / "docs" / "schemas"
UPDATE = os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1"


def schema_text(listing: str) -> str:
    return json.dumps(json_schema(listing), indent=2, ensure_ascii=False) + "\n"


def write_schemas() -> None:
    SCHEMAS.mkdir(parents=True, exist_ok=True)
    for listing in listing_names():
        (SCHEMAS / f"{listing}.json").write_text(schema_text(listing), encoding="utf-8")


@pytest.mark.parametrize("listing", listing_names())
def test_the_published_schema_is_the_models(listing: str) -> None:
    if UPDATE:
        write_schemas()
    path = SCHEMAS / f"{listing}.json"
    assert path.exists(), f"missing {path}: run `python -m tests.cli.test_output_schemas`"
    assert path.read_text(encoding="utf-8") == schema_text(listing), (
        f"{path} differs from gpuadmin.render.output_models: regenerate it "
        "(`python -m tests.cli.test_output_schemas`) and review the diff")


def test_no_schema_is_left_of_a_listing_that_is_gone() -> None:
    assert sorted(p.stem for p in SCHEMAS.glob("*.json")) == sorted(listing_names())


def _output(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    os.chdir(ROOT)
    assert run(list(args)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("listing", [name for name in listing_names() if name != "journal"])
@pytest.mark.parametrize("sample", ["oci-h100.yaml", "vsphere-hgx.yaml"])
def test_the_output_holds_to_its_model_and_schema(capsys: pytest.CaptureFixture[str], sample: str, listing: str,
                                                 fmt: str) -> None:
    if listing == "groups" and sample != "vsphere-hgx.yaml":
        pytest.skip("only the vSphere sample has NVSwitch device groups")
    text = _output(capsys, "--inventory", str(SAMPLES / sample), "get", listing, "-o", fmt)
    document = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert document["format_version"] == FORMAT_VERSION
    assert document["items"], "a sample with nothing to list checks nothing"
    list_model(listing).model_validate(document)
    jsonschema.validate(document, json.loads((SCHEMAS / f"{listing}.json").read_text(encoding="utf-8")))


def test_the_journal_holds_to_its_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    _output(capsys, "--state", state, "init", "--from", str(SAMPLES / "oci-h100.yaml"))
    change = tmp_path / "cordon.yaml"
    change.write_text("changes: [{op: cordon, node: gpu-h100-03}]\n", encoding="utf-8")
    _output(capsys, "--state", state, "apply", "-f", str(change), "--yes")
    document = json.loads(_output(capsys, "--state", state, "get", "journal", "-o", "json"))
    assert len(document["items"]) == 2  # the init and the cordon
    list_model("journal").model_validate(document)
    jsonschema.validate(document, json.loads((SCHEMAS / "journal.json").read_text(encoding="utf-8")))


if __name__ == "__main__":
    write_schemas()
