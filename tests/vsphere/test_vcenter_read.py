"""`gpuadmin init --from-cluster vcenter` against VMware's vCenter simulator seeded with the vSphere sample's estate
(tests/vsphere/seed.yaml): what is read, hostile names, TLS, the password (issue 24, item 1)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuadmin.errors import ExitCode
from gpuadmin.service import init_from_vcenter
from gpuadmin.store import ClusterBinding, Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import AI_DEV_02_OFF, add_host, create_vgpu_vm, find, session, wait
from tests.vsphere.vcsim import Simulator

SAMPLE = Path(__file__).resolve().parents[2] / "sample-inventories" / "vsphere-hgx.yaml"


def _env(simulator: Simulator, **more: str) -> dict[str, str]:
    return {**os.environ, "GPUADMIN_VCENTER_PASSWORD": simulator.password, **more}


def _comparable(node: dict[str, Any]) -> dict[str, Any]:
    """What a vCenter reports of a host, as the sample writes it (device groups: test_vcenter_device_groups.py; not
    the host's hardware label, and only an HGX host's NVSwitches say what its NVLink is)."""
    gpus = [{k: v for k, v in gpu.items() if k in ("index", "model", "mode", "vgpus", "vm")} for gpu in node["gpus"]]
    vms = sorted(({"name": vm["name"], "hardware_version": vm["hardware_version"], "gpus": vm.get("gpus")}
                  for vm in node.get("vms", [])), key=lambda vm: vm["name"])
    return {"name": node["name"], "version": node["vsphere"]["version"], "cpus": node["cpus"],
            "memory_gib": node["memory_gib"], "cluster": node["labels"]["vsphere.cluster"], "gpus": gpus, "vms": vms,
            "nvswitch": node.get("nvlink") == "nvswitch"}


def test_the_seeded_estate_reads_as_the_sample_writes_it(vcsim: Simulator, tmp_path: Path) -> None:
    made = init_from_vcenter(tmp_path / "state", server=vcsim.server, user=vcsim.user, password=vcsim.password,
                             insecure=True)
    assert made.findings == [AI_DEV_02_OFF]
    assert made.counts == {"hosts": 7, "gpus": 40, "vms": 45, "other_vms": 0}
    with Store.open(tmp_path / "state") as store:
        read = {node.name: node.model_dump(mode="json", exclude_none=True) for node in store.load().nodes.values()}
        assert store.binding() == ClusterBinding(kind="vcenter", context=vcsim.user, server=vcsim.server,
                                                 insecure=True)
    sample = {node["name"]: node for node in yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))["nodes"]}
    # ai-dev-02 is powered off in the seed: a VM that is off holds no vGPU (ESXi names only running VMs on a GPU)
    sample["esx-vdi-02"]["gpus"][3]["vgpus"].pop()
    assert {name: _comparable(node) for name, node in read.items()} == \
        {name: _comparable(node) for name, node in sample.items()}
    powered = {vm["name"]: vm["power_state"] for node in read.values() for vm in node["vms"]}
    assert powered["ai-dev-02"] == "poweredOff" and powered["vdi-01"] == "poweredOn"


def test_hostile_names_and_unknown_types_become_findings_never_a_crash(vcsim: Simulator, tmp_path: Path) -> None:
    # XML 1.0 carries no C0 control character (the simulator refuses an ESC as vCenter does), but Unicode's own
    # controls pass: a right-to-left override that turns a name around on screen, a line separator
    with session(vcsim) as service:
        create_vgpu_vm(service, "vdi-\u202egnp.exe", "esx-vdi-01", "grid_a40-12c")
        create_vgpu_vm(service, "v" * 81, "esx-vdi-01", "grid_a40-12c")
        create_vgpu_vm(service, "odd-type", "esx-vdi-01", "grid_h100-80c")  # not one an A40 host offers
        add_host(service, "vdi", "esx-\u2028vdi-03")
    done = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server", vcsim.server,
                    "--user", vcsim.user, "--insecure", "-o", "json", env=_env(vcsim))
    assert done.code == ExitCode.OK, done.err
    assert "\u202e" not in done.err + done.out and "\u2028" not in done.err + done.out
    findings = {(f["kind"], f["message"]) for f in json.loads(done.out)["findings"]}
    assert ("vm", "skipped: a name with control characters") in findings
    assert ("vm", "skipped: a name of 81 characters (vCenter's limit is 80)") in findings
    assert ("host", "skipped: a name with control characters") in findings
    assert ("vm", "vGPU type 'grid_h100-80c' is not one host esx-vdi-01 offers") in findings
    hosts = json.loads(done.out)["counts"]["hosts"]
    assert hosts == 7, "the hostile host is skipped, the others read"


def test_tls_is_verified_unless_insecure_and_insecure_is_shown(vcsim: Simulator, tmp_path: Path) -> None:
    refused = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server", vcsim.server,
                       "--user", vcsim.user, env=_env(vcsim))
    assert refused.code == ExitCode.CONFLICT, refused.err
    assert "TLS certificate does not verify" in refused.err and "--insecure" in refused.err
    assert not (tmp_path / "state").exists()
    taken = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server", vcsim.server,
                     "--user", vcsim.user, "--insecure", env=_env(vcsim))
    assert taken.code == ExitCode.OK, taken.err
    assert "TLS NOT VERIFIED (--insecure)" in taken.err
    diff = gpuadmin("--state", tmp_path / "state", "diff", "-o", "json", env=_env(vcsim))
    assert diff.code == ExitCode.OK, diff.err
    assert json.loads(diff.out)["insecure"] is True and "TLS NOT VERIFIED" in diff.err


def test_a_wrong_password_is_refused_and_never_shown(vcsim: Simulator, tmp_path: Path) -> None:
    wrong = "wrong-" + vcsim.password
    done = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server", vcsim.server,
                    "--user", vcsim.user, "--insecure", env=_env(vcsim, GPUADMIN_VCENTER_PASSWORD=wrong))
    assert done.code == ExitCode.NOT_PERMITTED, done.err
    assert "refused the login" in done.err and wrong not in done.err + done.out
    assert not (tmp_path / "state").exists()


def test_the_password_is_in_no_file_of_the_state_and_no_output(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    secret = tmp_path / "password"
    secret.write_text(vcsim.password + "\n", encoding="utf-8")
    secret.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if k != "GPUADMIN_VCENTER_PASSWORD"}
    base = ("--state", state, "init", "--from-cluster", "vcenter", "--server", vcsim.server, "--user", vcsim.user,
            "--insecure", "--password-file", secret)
    loose = gpuadmin(*base, env=env)
    assert loose.code == ExitCode.BAD_INPUT and "chmod 600" in loose.err, loose.err
    secret.chmod(0o600)
    outputs = [gpuadmin(*base, env=env)]
    assert outputs[0].code == ExitCode.OK, outputs[0].err
    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", "vdi-01").PowerOffVM_Task())
    for args in (("diff",), ("sync",), ("get", "journal"), ("describe", "entry", "2")):
        outputs.append(gpuadmin("--state", state, *args, "--password-file", secret, env=env) if args[0] in
                       ("diff", "sync") else gpuadmin("--state", state, *args, env=env))
    assert [o.code for o in outputs] == [0, 1, 0, 0, 0], [o.err for o in outputs]
    for output in outputs:
        assert vcsim.password not in output.out + output.err
    for path in state.rglob("*"):
        if path.is_file():
            assert vcsim.password.encode() not in path.read_bytes(), path


def test_no_password_at_all_is_bad_input(vcsim: Simulator, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GPUADMIN_VCENTER_PASSWORD"}
    done = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server", vcsim.server,
                    "--insecure", env=env, stdin="")
    assert done.code == ExitCode.BAD_INPUT and "GPUADMIN_VCENTER_PASSWORD" in done.err, done.err


@pytest.mark.parametrize("server", ["http://vc.example.com", "https://root:pw@vc.example.com", "https://"])
def test_a_server_that_is_no_https_url_is_bad_input(server: str, tmp_path: Path) -> None:
    done = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server", server,
                    env={**os.environ, "GPUADMIN_VCENTER_PASSWORD": "unused"})
    assert done.code == ExitCode.BAD_INPUT, done.err
    assert "pw" not in done.err.replace("https://", "")
