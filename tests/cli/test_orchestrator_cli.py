"""Issue 12, item 4, through the real CLI: listings show the orchestrator, saved states of the old spelling
load, bad values are refused at the field (exit 2, nothing written), and the OCI sample's Kubernetes exports
are real with no warnings."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from tests.cli.clikit import SAMPLES, gpuadmin

SMI_XML = Path(__file__).resolve().parents[1] / "adapters" / "fixtures" / "k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml"


def test_listings_show_platform_and_orchestrator(state: Path) -> None:
    table = gpuadmin("--state", state, "get", "nodes")
    assert table.code == 0, table.err
    header, first = table.out.splitlines()[:2]
    assert header.split()[:2] == ["NAME", "PLATFORM"] and header.split()[-1] == "ORCHESTRATOR"
    assert first.split()[1] == "baremetal" and first.split()[-1] == "kubernetes"
    listed = json.loads(gpuadmin("--state", state, "get", "nodes", "-o", "json").out)["items"]
    assert {(n["platform"], n["orchestrator"], n["spec"]["orchestrator"]) for n in listed} == {
        ("baremetal", "kubernetes", "kubernetes")}
    names = gpuadmin("--state", state, "get", "nodes", "-l", "orchestrator=kubernetes", "-o", "name").out.split()
    assert len(names) == len(listed) == 12
    esx = gpuadmin("--inventory", SAMPLES / "vsphere-hgx.yaml", "get", "nodes", "-l", "orchestrator=kubernetes",
                   "-o", "name")
    assert esx.code == 0 and esx.out.strip() == ""  # ESXi hosts run no pods


def test_a_saved_state_of_the_old_spelling_loads(state: Path) -> None:
    """A state written before `orchestrator` existed holds `"platform": "kubernetes"` rows."""
    with sqlite3.connect(state / "state.db") as conn:
        changed = conn.execute(
            "UPDATE nodes SET data = replace(data, '\"platform\":\"baremetal\",\"orchestrator\":\"kubernetes\"', "
            "'\"platform\":\"kubernetes\"')").rowcount
        assert changed == 12
        assert conn.execute("SELECT count(*) FROM nodes WHERE data LIKE '%orchestrator%'").fetchone()[0] == 0
    listed = json.loads(gpuadmin("--state", state, "get", "nodes", "-o", "json").out)["items"]
    assert {(n["platform"], n["orchestrator"]) for n in listed} == {("baremetal", "kubernetes")}
    exported = gpuadmin("--state", state, "export", "device-plugin")
    assert exported.code == 0 and exported.err == ""
    assert len(yaml.safe_load(exported.out)["data"]) == 12


def test_a_bad_orchestrator_is_refused_at_the_field_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ncluster: t\nnodes:\n"
                   "  - name: esx-1\n    platform: vsphere\n    vsphere: {version: '8.0U1'}\n"
                   "    orchestrator: kubernetes\n"
                   "  - {name: bm-1, platform: baremetal, orchestrator: slurm}\n", encoding="utf-8")
    checked = gpuadmin("validate", bad)
    assert checked.code == 2
    assert f"{bad}:7:19: nodes[0].orchestrator: orchestrator: kubernetes is not allowed with platform: vsphere" \
        in checked.err
    assert f"{bad}:8:53: nodes[1].orchestrator: expected one of kubernetes, none, got 'slurm'" in checked.err
    init = gpuadmin("--state", tmp_path / "state", "init", "--from", bad)
    assert init.code == 2 and not (tmp_path / "state" / "state.db").exists()


def test_import_takes_platform_and_orchestrator() -> None:
    def imported(*flags: str) -> tuple[int, dict[str, str] | str]:
        result = gpuadmin("import", "nvidia-smi", SMI_XML, "--node", "oke-9", "-o", "inventory", *flags)
        if result.code != 0:
            return result.code, result.err
        node = yaml.safe_load(result.out)["nodes"][0]
        return 0, {"platform": node["platform"], "orchestrator": node.get("orchestrator", "none")}

    assert imported() == (0, {"platform": "baremetal", "orchestrator": "none"})
    new = imported("--orchestrator", "kubernetes")
    assert new == (0, {"platform": "baremetal", "orchestrator": "kubernetes"})
    assert imported("--platform", "kubernetes") == new  # the deprecated spelling
    code, err = imported("--platform", "vsphere", "--orchestrator", "kubernetes")
    assert code == 2 and "--orchestrator kubernetes does not go with --platform vsphere" in str(err)


def test_oci_sample_exports_are_real_and_quiet() -> None:
    for kind in ("device-plugin", "labels", "pods"):
        result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "export", kind)
        assert result.code == 0
        assert result.err == "", f"export {kind} warned: {result.err}"
        documents = [d for d in yaml.safe_load_all(result.out) if d]
        assert documents, f"export {kind} is empty"
    pods = list(yaml.safe_load_all(gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "export", "pods").out))
    assert pods[0]["spec"]["storageClassName"] == "fss-dyn-storage"
    assert pods[0]["spec"]["accessModes"] == ["ReadWriteMany"]
