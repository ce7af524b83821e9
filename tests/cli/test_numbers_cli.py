"""Numbers are finite and bounded everywhere they enter (issue 18, points 4, 14 and 15), through the real CLI.

`.inf` once passed `validate`, was stored as `null` and left every later command on the state exiting 2; a
GPU index of 10^20 passed `validate`; a 5,000-digit integer crashed the reader with a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuadmin.store import load_yaml

from .clikit import SAMPLES, gpuadmin, state_from

OCI = (SAMPLES / "oci-h100.yaml").read_text(encoding="utf-8")
QUEUE = "  - {name: research, quota: {gpus: 32}, limit: {gpus: 48}, over_quota_weight: 2, priority: 100}"
GPU = "      - {index: 7, model: H100-SXM5-80GB, mode: full}"


def damaged(tmp_path: Path, old: str, new: str) -> Path:
    assert OCI.count(old) >= 1, old
    path = tmp_path / "damaged.yaml"
    path.write_text(OCI.replace(old, new, 1), encoding="utf-8")
    return path


INVENTORY_DAMAGE = [
    (QUEUE, QUEUE.replace("over_quota_weight: 2", "over_quota_weight: .inf"), "queues[0].over_quota_weight",
     "must be a finite number"),
    (QUEUE, QUEUE.replace("quota: {gpus: 32}", "quota: {gpus: 32, gpu_memory_gib: 1e999}"),
     "queues[0].quota.gpu_memory_gib", "must be a finite number"),
    (GPU, GPU.replace("index: 7", "index: 100000000000000000000"), ".gpus[7].index", "is out of range"),
    (GPU, GPU.replace("index: 7", "index: 64"), ".gpus[7].index", "must be at most 63"),
    (QUEUE, QUEUE.replace("priority: 100", "priority: " + "9" * 5000), "queues[0].priority", "is out of range"),
]


def test_the_damage_is_in_the_sample() -> None:
    assert QUEUE in OCI and GPU in OCI


@pytest.mark.parametrize(("old", "new", "path", "message"), INVENTORY_DAMAGE)
def test_validate_and_init_refuse_an_unbounded_number(tmp_path: Path, old: str, new: str, path: str,
                                                      message: str) -> None:
    inventory = damaged(tmp_path, old, new)
    for args in (("validate", inventory), ("--state", tmp_path / "state", "init", "--from", inventory),
                 ("--inventory", inventory, "get", "queues", "-o", "json")):
        result = gpuadmin(*args)
        assert result.code == 2, (args, result)
        assert f"{inventory}:" in result.err and path in result.err and message in result.err, result.err
        assert "Traceback" not in result.err and "Infinity" not in result.out
    assert not (tmp_path / "state").exists()


CHANGE_DAMAGE = [
    ("{op: set-quota, queue: research, over_quota_weight: .inf}", "changes[0].over_quota_weight",
     "must be a finite number"),
    ("{op: set-quota, queue: research, quota: {gpus: 1, gpu_memory_gib: 1e999}}", "changes[0].quota.gpu_memory_gib",
     "must be a finite number"),
    ("{op: set-quota, queue: research, limit: {gpus: 1, gpu_memory_gib: .nan}}", "changes[0].limit.gpu_memory_gib",
     "must be a finite number"),
    ("{op: set-sharing, node: gpu-h100-01, fractions: dynamic, reserved_gib: .inf}", "changes[0].reserved_gib",
     "must be a finite number"),
    ("{op: set-time-slicing, node: gpu-h100-01, gpu: 0, replicas: 100000}", "changes[0].replicas",
     "must be at most 1024"),
    ("{op: set-mode, node: gpu-h100-01, gpu: 100000000000000000000, mode: full}", "changes[0].gpu",
     "is out of range"),
    ("{op: submit-job, job: {name: j, queue: research, request: {gpus: 1, cpus: .inf}}}",
     "changes[0].job.request.cpus", "must be a finite number"),
    ("{op: add-node, node: {name: n, platform: baremetal, cpus: 1e999}}", "changes[0].node.cpus",
     "expected an integer"),
    ("{op: add-queue, queue: {name: q, over_quota_weight: 1e999}}", "changes[0].queue.over_quota_weight",
     "must be a finite number"),
    ("{op: restore, kind: queue, name: q, seq: 9223372036854775808}", "changes[0].seq", "is out of range"),
]


@pytest.fixture(scope="module")
def refusing_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One state for the tests that are refused or only read: an init per case was most of the module's time. A
    refused change reads the state before and after its own refusal, so one that changed it would fail there."""
    return state_from("oci-h100.yaml", tmp_path_factory.mktemp("refusing") / "state")


@pytest.mark.parametrize(("change", "path", "message"), CHANGE_DAMAGE)
def test_apply_refuses_an_unbounded_number_and_changes_nothing(refusing_state: Path, tmp_path: Path, change: str,
                                                               path: str, message: str) -> None:
    state = refusing_state
    before = gpuadmin("--state", state, "get", "queues", "-o", "json")
    changes = tmp_path / "changes.yaml"
    changes.write_text(f"changes:\n  - {change}\n", encoding="utf-8")
    for command in ("plan", "apply"):
        result = gpuadmin("--state", state, command, "-f", changes, *(("--yes",) if command == "apply" else ()))
        assert result.code == 2, result
        assert f"{changes}:2:" in result.err and path in result.err and message in result.err, result.err
    after = gpuadmin("--state", state, "get", "queues", "-o", "json")
    assert after.code == 0 and after.out == before.out


# --- numbers on the command line (point 15) and huge integers in names (point 14) ---------------------------

FIVE_THOUSAND_DIGITS = "9" * 5000


@pytest.mark.parametrize(("args", "refused"), [
    (("apply", "--wait", "nan", "-f", "changes.yaml"), "argument --wait: 'nan' is not a number of seconds"),
    (("apply", "--wait", "-5", "-f", "changes.yaml"), "argument --wait: '-5' is not a number of seconds"),
    (("apply", "--wait", "inf", "-f", "changes.yaml"), "argument --wait: 'inf' is not a number of seconds"),
    (("schedule", "--wait", "1e999"), "argument --wait: '1e999' is not a number of seconds"),
    (("undo", "--wait", "NaN"), "argument --wait: 'NaN' is not a number of seconds"),
    (("undo", "--to", "-5"), "argument --to: '-5' is not a revision"),
    (("undo", "--to", "99999999999999999999"), "argument --to: '99999999999999999999' is not a revision"),
    (("undo", "--to", FIVE_THOUSAND_DIGITS), "(5,000 characters) is not a revision"),
    (("tui", "--width", FIVE_THOUSAND_DIGITS, "--screenshot", "x.svg"), "argument --width:"),
    (("tui", "--height", "0", "--screenshot", "x.svg"), "argument --height: '0' is not a height"),
    (("import", "nvidia-smi", "x.xml", "--node", "n", "--rdma-gbps", "99999999999999999999"),
     "argument --rdma-gbps: '99999999999999999999' is not a NIC speed"),
])
def test_a_number_the_command_cannot_honour_is_a_usage_error(refusing_state: Path, tmp_path: Path,
                                                             args: tuple[str, ...], refused: str) -> None:
    result = gpuadmin("--state", refusing_state, *args, cwd=tmp_path)
    assert result.code == 2, result
    assert refused in result.err and "Traceback" not in result.err
    assert len(result.err) < 2000, "a huge number is shown shortened"
    assert not (tmp_path / "x.svg").exists()


def test_wait_zero_and_undo_to_zero_are_honoured(tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    changes = tmp_path / "changes.yaml"
    changes.write_text("changes:\n  - {op: cordon, node: gpu-h100-01}\n", encoding="utf-8")
    assert gpuadmin("--state", state, "apply", "--wait", "0", "-f", changes, "--yes").code == 0
    undone = gpuadmin("--state", state, "undo", "--to", "0", "--wait", "0.5", "--yes")
    assert undone.code == 0, undone.err


@pytest.mark.parametrize("name", ["entry " + FIVE_THOUSAND_DIGITS, "entry 99999999999999999999", "entry ²",
                                  "gpu gpu-h100-01/" + FIVE_THOUSAND_DIGITS, "gpu gpu-h100-01/²"])
def test_describe_a_huge_or_odd_number_is_not_found(refusing_state: Path, name: str) -> None:
    kind, _, what = name.partition(" ")
    result = gpuadmin("--state", refusing_state, "describe", kind, what)
    assert result.code == 2, result
    assert "not found" in result.err and "Traceback" not in result.err


def test_a_placement_with_a_huge_gpu_number_is_refused_at_its_field(tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    changes = tmp_path / "changes.yaml"
    changes.write_text(f"changes:\n  - {{op: bind-job, name: x, placement: ['gpu-h100-01/{FIVE_THOUSAND_DIGITS}']}}\n"
                       "  - {op: bind-job, name: y, placement: ['gpu-h100-01/99999999999']}\n", encoding="utf-8")
    result = gpuadmin("--state", state, "plan", "-f", changes)
    assert result.code == 2, result
    assert f"{changes}:2:" in result.err and "is not a place" in result.err
    assert f"{changes}:3:" in result.err and "changes[1].placement[0].gpu: must be at most 63" in result.err


def test_the_command_lines_nic_speed_bound_is_the_inventorys() -> None:
    from gpuadmin.cli import args
    from gpuadmin.model import inventory

    assert args.MAX_NIC_GBPS == inventory.MAX_NIC_GBPS
    assert args.MAX_REVISION == inventory.MAX_SEQ


@pytest.mark.parametrize("sample", ["oci-h100.yaml", "vsphere-hgx.yaml", "k8s-mixed.yaml"])
def test_export_inventory_as_json_is_the_inventory_in_json(tmp_path: Path, sample: str) -> None:
    state = state_from(sample, tmp_path / "state")
    as_json = gpuadmin("--state", state, "export", "inventory", "-o", "json")
    as_yaml = gpuadmin("--state", state, "export", "inventory")
    assert as_json.code == 0 and as_yaml.code == 0, (as_json.err, as_yaml.err)
    data = json.loads(as_json.out)  # once YAML, which json refuses
    assert data == load_yaml(as_yaml.out, "exported.yaml").data
    exported = tmp_path / "exported.json"
    exported.write_text(as_json.out, encoding="utf-8")
    validated = gpuadmin("validate", exported)
    assert validated.code == 0, validated.err
    again = gpuadmin("--state", tmp_path / "again", "init", "--from", exported)
    assert again.code == 0, again.err
    assert gpuadmin("--state", tmp_path / "again", "export", "inventory").out == as_yaml.out


# --- imports: numbers in a hostile kubectl or nvidia-smi file (point 14) ----------------------------------------

FIXTURES = SAMPLES.parent / "tests" / "adapters" / "fixtures"
GFD_LABELS: dict[str, str] = json.loads((FIXTURES / "h100-mig-mixed-all-balanced_node-labels.json").read_text())


def kube_nodes(tmp_path: Path, cpu: str = "112", memory: str = "2Ti", **labels: str) -> Path:
    node = {"kind": "Node", "metadata": {"name": "n1", "labels": {**GFD_LABELS, **labels}},
            "status": {"capacity": {"cpu": cpu, "memory": memory}}}
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("damage", "refused"), [
    ({"cpu": "9" * 30}, "items[0].status.capacity.cpu: '999999999999999999999999' is out of range (at most 65,536"),
    ({"memory": "9" * 400 + "Ki"}, "items[0].status.capacity.memory: "),
    ({"nvidia.com/gpu.count": "9" * 30}, "nvidia.com/gpu.count=99999999999999999999... (30 digits) is out of range"),
    ({"nvidia.com/gpu.count": "65"}, "nvidia.com/gpu.count=65 is out of range (0 to 64)"),
    ({"nvidia.com/gpu.replicas": "9" * 5000}, "nvidia.com/gpu.replicas=99999999999999999999... (5,000 digits)"),
    ({"nvidia.com/mig-1g.10gb.count": "9" * 30}, "nvidia.com/mig-1g.10gb.count=99999999999999999999..."),
])
def test_import_kube_nodes_refuses_a_number_past_its_bound(tmp_path: Path, damage: dict[str, str],
                                                            refused: str) -> None:
    capacity = {k: v for k, v in damage.items() if k in ("cpu", "memory")}
    labels = {k: v for k, v in damage.items() if k not in capacity}
    path = kube_nodes(tmp_path, **capacity, **labels)
    result = gpuadmin("import", "kube-nodes", path, "-o", "inventory")  # a gpu.count of 10^30 looped for ever
    assert result.code == 2, result
    assert f"{path}: " in result.err and refused in result.err and "out of range" in result.err, result.err
    assert "Traceback" not in result.err


def test_import_nvidia_smi_refuses_more_gpus_than_a_node_holds(tmp_path: Path) -> None:
    text = (FIXTURES / "k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml").read_text(encoding="utf-8")
    first, last = text.index("<gpu id="), text.rindex("</gpu>") + len("</gpu>")
    path = tmp_path / "smi.xml"
    path.write_text(text[:first] + text[first:last] * 9 + text[last:], encoding="utf-8")  # 72 GPUs
    result = gpuadmin("import", "nvidia-smi", path, "--node", "n", "-o", "inventory")
    assert result.code == 2, result
    assert f"{path}: " in result.err and "less than or equal to 63" in result.err and "Traceback" not in result.err
