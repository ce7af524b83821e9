"""One passing and at least one failing case for every registered rule, against a real cluster state.

A passing case edits the cluster in a way the rule judges, and the plan is clean (no violation at all). A
failing case breaks exactly what the rule guards; the rule must fire on the expected target. The meta-test at
the bottom keeps the table complete: a new rule without both cases fails the suite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from _rulekit import Scenario, base_inventory, everything

from gpuadmin.catalog.catalog import StunEstimate
from gpuadmin.engine.evacuation import VmMove, evacuate
from gpuadmin.engine.rules import RULES, check
from gpuadmin.model import DeviceGroup, DynamicSharing, GpuHealth, Inventory, Job, MigInstance, NotInCatalog, VGpu, Vm


@dataclass(frozen=True)
class Case:
    rule: str
    name: str
    build: Callable[[], Scenario]
    target: str | None = None  # None: a passing case

    @property
    def passing(self) -> bool:
        return self.target is None


def mig(*items: tuple[str, int | None] | tuple[str, int | None, int]) -> list[MigInstance]:
    # model_copy, like a change applied to a view, does not re-validate: a bad replica count reaches the rules
    return [
        MigInstance(profile=i[0], start=i[1]).model_copy(update={"replicas": i[2] if len(i) > 2 else None})
        for i in items
    ]


def split(profile: str, start: int, *cis: str) -> MigInstance:
    """A GPU instance with its compute instances named (none named: the default full-width CI)."""
    return MigInstance(profile=profile, start=start, compute_instances=list(cis) or None)


FENCE = GpuHealth(state="unhealthy", reason="XID 79: GPU has fallen off the bus", by="ops")

REAL_H100_MODULE_IDS = (7, 5, 6, 8, 1, 3, 4, 2)


def with_module_ids(scenario: Scenario, node: str, ids: tuple[int, ...]) -> Scenario:
    for index, module in enumerate(ids):
        scenario = scenario.gpu(node, index, module_id=module)
    return scenario


def dynamic(reserved_gib: float = 0.5) -> Scenario:
    """The base cluster with bm2 (8 H100, GPUs 0-1 held by the gang) in a dynamic-sharing pool."""
    return S().node("bm2", sharing=DynamicSharing(fractions="dynamic", reserved_gib=reserved_gib))


def queue_of_one(name: str) -> Scenario:
    """The base cluster with queue `name` holding one pending job, `name-job`, in the committed state."""
    before = S().add_queue({"name": name}).submit(job(f"{name}-job", queue=name, gpus=1))
    before.state.commit(before.view)
    return S(before.state.to_inventory())


def already_shared(*fractions: dict[str, Any]) -> Scenario:
    """bm2 sharing dynamically in the committed state, these fractions running on it: the base a set-sharing
    plan starts from."""
    before = dynamic()
    for fraction in fractions:
        before.submit(fraction)
    before.state.commit(before.view)
    return S(before.state.to_inventory())


def sharing_changed(reserved_gib: float | None, *fractions: dict[str, Any]) -> Scenario:
    """What set-sharing does to bm2 on that base: sharing off (None) or a new reserve."""
    sharing = None if reserved_gib is None else DynamicSharing(fractions="dynamic", reserved_gib=reserved_gib)
    return already_shared(*fractions).node("bm2", sharing=sharing)


def vgpus(*items: tuple[str, str]) -> list[VGpu]:
    return [VGpu(vm=vm, profile=profile) for vm, profile in items]


def job(name: str, queue: str = "research", status: str = "pending", **request: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {k: request.pop(k) for k in ("isolation", "preemptible") if k in request}
    return {"name": name, "queue": queue, "request": request, "status": status, **extra}


def running(
    name: str, slots: list[tuple[Any, ...]], queue: str = "research", **request: Any
) -> dict[str, Any]:
    raw = job(name, queue, "running", **request)
    raw["placement"] = [
        {"node": s[0], "gpu": s[1], **({"mig_start": s[2]} if len(s) > 2 else {})} for s in slots
    ]
    return raw


def big_host(version: str, hardware: int, gpus: int) -> dict[str, Any]:
    return {
        "name": "esx-big",
        "platform": "vsphere",
        "vsphere": {"version": version},
        "nvlink": "none",
        "gpus": [{"index": i, "model": "L40S", "mode": "passthrough", "vm": "wide"} for i in range(gpus)],
        "vms": [{"name": "wide", "hardware_version": hardware, "gpus": list(range(gpus))}],
    }


def pairs_host(groups: list[list[int]]) -> dict[str, Any]:
    return {
        "name": "esx3",
        "platform": "vsphere",
        "vsphere": {"version": "8.0U1"},
        "nvlink": "pairs",
        "gpus": [{"index": i, "model": "A40", "mode": "vgpu"} for i in range(4)],
        "device_groups": [{"name": f"g{k}", "gpus": g} for k, g in enumerate(groups)],
    }


S = Scenario


def vgpu_host(version: str, model: str, *profiles: str) -> Scenario:
    """The base cluster and one more vSphere host, esx9, whose GPU 0 (of `model`) holds these vGPUs, one VM each."""
    vms = [f"vm-{i:02}" for i in range(len(profiles))]
    return S().add_node(
        {
            "name": "esx9",
            "platform": "vsphere",
            "vsphere": {"version": version},
            "gpus": [
                {
                    "index": 0,
                    "model": model,
                    "mode": "vgpu",
                    "vgpus": [{"vm": vm, "profile": p} for vm, p in zip(vms, profiles, strict=True)],
                }
            ],
            "vms": [{"name": vm, "hardware_version": 20} for vm in vms],
        }
    )


def evac_hosts(vm: dict[str, Any], gpu: dict[str, Any], dest_gpus: list[dict[str, Any]]) -> Scenario:
    """The base cluster and two more vSphere hosts on 25 Gbit/s vMotion links: esx-src, whose GPU 0 (`gpu`)
    serves `vm`, and esx-dst with `dest_gpus`; esx-src then evacuated by the engine (evacuate-host's planning)."""
    scenario = S().add_node({
        "name": "esx-src", "platform": "vsphere", "vsphere": {"version": "8.0U1", "vmotion_gbps": 25},
        "nvlink": "none", "gpus": [{"index": 0, **gpu}], "vms": [vm]})
    scenario.add_node({
        "name": "esx-dst", "platform": "vsphere", "vsphere": {"version": "8.0U1", "vmotion_gbps": 25},
        "nvlink": "none", "gpus": dest_gpus})
    evacuate(scenario.view, "esx-src", scenario.touched)
    return scenario


def stun_move(seconds: float, tolerated: float) -> Scenario:
    """The base cluster where a plan vMotions VM mover (8 GiB) from an evacuated host onto esx2's GPU 1 at this
    estimated stun, the VM tolerating `tolerated` seconds (the move as the evacuation records it)."""
    scenario = S()
    scenario.view.evacuations["esx-gone"] = [VmMove(
        "mover", "esx-gone", "esx2", "vmotion", ((0, 1),), None, 8.0, 25.0, StunEstimate(seconds, "derived"),
        tolerated)]
    scenario.touched.nodes.add("esx2")
    return scenario


def with_job(raw: dict[str, Any]) -> Inventory:
    """The base cluster with one more job committed (not an edit of the scenario)."""
    base = base_inventory()
    return base.model_copy(update={"jobs": [*base.jobs, Job.model_validate(raw)]})

def overridden(name: str) -> Scenario:
    """The base cluster where an admin's preempt-job carries `override: true` for this job (the planner's mark)."""
    scenario = S()
    scenario.view.overridden.add(name)
    return scenario


def vgpus_removed(node: str, index: int, *removed: tuple[str, str]) -> Scenario:
    """The base cluster where the plan removes these vGPUs (VM, profile) explicitly (remove-vgpu's mark)."""
    scenario = S()
    scenario.view.remove_vgpus((node, index), removed)
    return scenario


def vgpus_replaced(node: str, index: int, new: list[VGpu]) -> Scenario:
    """The GPU's vGPUs replaced by these, as a plan does it: remove-vgpu for each one it drops, assign-vgpu for
    each one it adds."""
    scenario = S()
    host = scenario.view.node(node)
    gpu = host.gpu(index) if host is not None else None
    old = Counter((v.vm, v.profile) for v in (gpu.vgpus or () if gpu is not None else ()))
    scenario.view.remove_vgpus((node, index), (old - Counter((v.vm, v.profile) for v in new)).elements())
    return scenario.gpu(node, index, vgpus=new)


def exclusive_mig_holder() -> Inventory:
    """The base cluster with its time-sliced 3g.40gb@0 on bm1/4 held by a MIG job that writes no isolation (so it
    is exclusive) instead of the fraction mig-nb: an inventory may hold that; no plan may add to it."""
    base = base_inventory()
    holder = Job.model_validate(running("m", [("bm1", 4, 0)], mig="3g.40gb"))
    return base.model_copy(update={"jobs": [*(j for j in base.jobs if j.name != "mig-nb"), holder]})


T_BM1 = "node/bm1"

CASES: list[Case] = [
    # ---------------------------------------- MIG
    Case(
        "mig.model-supports-mig",
        "7g on a free H100",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("7g.80gb", 0))),
    ),
    Case(
        "mig.model-supports-mig",
        "A10 is not MIG-capable",
        lambda: S().add_node(
            {
                "name": "k8s2",
                "platform": "baremetal", "orchestrator": "kubernetes",
                "gpus": [{"index": 0, "model": "A10", "mode": "mig", "mig": [{"profile": "1g.6gb"}]}],
            }
        ),
        "k8s2/0",
    ),
    Case(
        "mig.model-supports-mig",
        "MIG on a GPU marked not_in_catalog",
        lambda: S().gpu("bm5", 1, mode="mig", mig=mig(("1g.10gb", 0))),
        "bm5/1",
    ),
    Case(
        "mig.compute-instances",
        "2c + 1c in one H200 3g GI, 1c + 1c in the other",
        lambda: S().gpu(
            "bm5",
            0,
            mig=[split("3g.71gb", 0, "2c.3g.71gb", "1c.3g.71gb"), split("3g.71gb", 4, "1c.3g.71gb", "1c.3g.71gb")],
        ),
    ),
    Case(
        "mig.compute-instances",
        "2c + 2c in a 3g GI",
        lambda: S().gpu("bm5", 0, mig=[split("3g.71gb", 0), split("3g.71gb", 4, "2c.3g.71gb", "2c.3g.71gb")]),
        "bm5/0",
    ),
    Case(
        "mig.compute-instances",
        "a CI of another GI profile",
        lambda: S().gpu("bm5", 0, mig=[split("3g.71gb", 0, "3g.71gb"), split("3g.71gb", 4, "1c.4g.71gb")]),
        "bm5/0",
    ),
    # issue 19 point 3: the device plugin and the GPU Operator cannot run a split GPU instance
    Case(
        "mig.compute-instances-kubernetes",
        "a split GPU instance on a node outside Kubernetes, whole ones on a Kubernetes node",
        lambda: S()
        .gpu("bm5", 0, mig=[split("3g.71gb", 0, "2c.3g.71gb", "1c.3g.71gb"),
                            split("3g.71gb", 4, "1c.3g.71gb", "1c.3g.71gb")])
        .node("bm1", orchestrator="kubernetes"),
    ),
    Case(
        "mig.compute-instances-kubernetes",
        "bm5, its 3g.71gb@4 split 1c + 1c, made a Kubernetes node",
        lambda: S().node("bm5", orchestrator="kubernetes"),
        "bm5/0",
    ),
    Case(
        "mig.compute-instances-kept",
        "merged on purpose (the full-width CI named)",
        lambda: S().gpu("bm5", 0, mig=[split("3g.71gb", 0, "3g.71gb"), split("3g.71gb", 4, "3g.71gb")]),
    ),
    Case(
        "mig.compute-instances-kept",
        "the split GI repartitioned away",
        lambda: S().gpu("bm5", 0, mig=mig(("3g.71gb", 0), ("2g.35gb", 4), ("1g.18gb", 6))),
    ),
    Case(
        "mig.compute-instances-kept",
        "a layout that keeps the GI but drops its CIs",
        lambda: S().gpu("bm5", 0, mig=mig(("3g.71gb", 0), ("3g.71gb", 4))),
        "bm5/0",
    ),
    Case(
        "mig.model-supports-mig",
        "model not in the catalog",
        lambda: S().gpu("bm1", 7, model="Z100", mode="mig", mig=mig(("1g.10gb", 0))),
        "bm1/7",
    ),
    Case(
        "mig.profile-exists", "H100 profile", lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("1g.10gb", 0)))
    ),
    Case(
        "mig.profile-exists",
        "A100-40GB profile on an H100",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("1g.5gb", 0))),
        "bm1/7",
    ),
    Case(
        "mig.placement-start",
        "3g at 0 and 4",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("3g.40gb", 0), ("3g.40gb", 4))),
    ),
    Case(
        "mig.placement-start",
        "3g at 2",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("3g.40gb", 2))),
        "bm1/7",
    ),
    Case(
        "mig.placement-start",
        "4g at 4 (its only placement is 0)",
        lambda: S().gpu("k8s1", 1, mode="mig", replicas=None, mig=mig(("2g.12gb", 4))),
        "k8s1/1",
    ),
    Case(
        "mig.no-overlap",
        "-cgi 19,19,14,9 without starts is searched, not replayed",
        lambda: S().gpu(
            "bm1",
            7,
            mode="mig",
            mig=mig(("1g.10gb", None), ("1g.10gb", None), ("2g.20gb", None), ("3g.40gb", None)),
        ),
    ),
    Case(
        "mig.no-overlap",
        "3g@0 and 2g@2 share slices 2-3",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("3g.40gb", 0), ("2g.20gb", 2))),
        "bm1/7",
    ),
    Case(
        "mig.no-overlap",
        "3g+3g+1g has no placement",
        lambda: S().gpu(
            "bm1", 7, mode="mig", mig=mig(("3g.40gb", None), ("3g.40gb", None), ("1g.10gb", None))
        ),
        "bm1/7",
    ),
    Case(
        "mig.compute-slices",
        "4g + 3g = 7 compute slices",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("4g.40gb", None), ("3g.40gb", None))),
    ),
    Case(
        "mig.compute-slices",
        "7g + 1g = 8 compute slices",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("7g.80gb", 0), ("1g.10gb", 0))),
        "bm1/7",
    ),
    Case(
        "mig.compute-slices",
        "A30: 4g + 1g = 5 of 4",
        lambda: S().gpu("k8s1", 1, mode="mig", replicas=None, mig=mig(("4g.24gb", 0), ("1g.6gb", 3))),
        "k8s1/1",
    ),
    Case(
        "mig.instance-cap",
        "7 × 1g.10gb",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(*[("1g.10gb", None)] * 7)),
    ),
    Case(
        "mig.instance-cap",
        "two 1g.10gb+me (cap 1)",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("1g.10gb+me", 0), ("1g.10gb+me", 1))),
        "bm1/7",
    ),
    Case(
        "mig.single-media-extension",
        "A30 one +me",
        lambda: S().gpu(
            "k8s1", 1, mode="mig", replicas=None, mig=mig(("2g.12gb+me", 0), ("1g.6gb", 2), ("1g.6gb", 3))
        ),
    ),
    Case(
        "mig.single-media-extension",
        "A30 2g+me and 1g+me",
        lambda: S().gpu("k8s1", 1, mode="mig", replicas=None, mig=mig(("2g.12gb+me", 0), ("1g.6gb+me", 3))),
        "k8s1/1",
    ),
    # issue 19 point 9: RTX PRO 6000 engine counts of MIG-UG Table 11 / a real -lgip (+me.all 4/4/4/1, -me 0)
    Case(
        "mig.media-engines",
        "RTX PRO 6000: 1g+me.all with three 1g-me",
        lambda: S().gpu(
            "bm4", 0, model="RTX-PRO-6000-BSE", mode="mig", replicas=None,
            mig=mig(("1g.24gb+me.all", 0), ("1g.24gb-me", 3), ("1g.24gb-me", 6), ("1g.24gb-me", 9)),
        ),
    ),
    Case(
        "mig.media-engines",
        "RTX PRO 6000: 1g+me.all beside a plain 1g",
        lambda: S().gpu(
            "bm4", 0, model="RTX-PRO-6000-BSE", mode="mig", replicas=None,
            mig=mig(("1g.24gb+me.all", 0), ("1g.24gb", 3)),
        ),
        "bm4/0",
    ),
    Case(
        "mig.repartition-evicts",
        "keep the held 2g@0",
        lambda: S().gpu("bm1", 2, mig=mig(("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4))),
    ),
    Case(
        "mig.repartition-evicts",
        "held instance evicted in the same plan",
        lambda: overridden("infer").gpu("bm1", 2, mig=mig(("3g.40gb", 0), ("3g.40gb", 4))).preempt("infer"),
    ),
    Case(
        "mig.repartition-evicts",
        "repartition destroys infer's 2g@0",
        lambda: S().gpu("bm1", 2, mig=mig(("3g.40gb", 0), ("3g.40gb", 4))),
        "bm1/2",
    ),
    Case(
        "mig.repartition-evicts",
        "leaving MIG under a running job",
        lambda: S().gpu("bm1", 4, mode="full", mig=None),
        "bm1/4",
    ),
    # ---------------------------------------- modes
    Case(
        "mode.fields-match",
        "time-sliced with replicas",
        lambda: S().gpu("bm1", 7, mode="time-sliced", replicas=4),
    ),
    Case("mode.fields-match", "full with replicas", lambda: S().gpu("bm1", 7, replicas=4), "bm1/7"),
    Case(
        "mode.vsphere-only",
        "time-slicing on bare metal",
        lambda: S().gpu("bm4", 0, mode="time-sliced", replicas=2),
    ),
    Case(
        "mode.vsphere-only",
        "passthrough on bare metal",
        lambda: S().gpu("bm4", 0, mode="passthrough"),
        "bm4/0",
    ),
    Case("mode.mig-not-whole", "whole job on a full GPU", lambda: S().bind("wait", ("bm1", 7))),
    Case(
        "mode.mig-not-whole", "whole job on a MIG GPU", lambda: S().bind("wait", ("bm1", 2)), "bm1/2"
    ),
    Case("mode.time-slice-replicas", "2 replicas", lambda: S().gpu("bm4", 1, mode="time-sliced", replicas=2)),
    Case(
        "mode.time-slice-replicas",
        "1 replica",
        lambda: S().gpu("bm4", 1, mode="time-sliced", replicas=1),
        "bm4/1",
    ),
    Case(
        "mode.time-slice-replicas",
        "MIG instance with 1 replica",
        lambda: S().gpu("bm1", 7, mode="mig", mig=mig(("7g.80gb", 0, 1))),
        "bm1/7",
    ),
    Case(
        "mode.one-sharing-strategy-per-node",
        "MPS on every shared GPU of a node",
        lambda: (
            S()
            .gpu("bm4", 0, mode="time-sliced", replicas=2, sharing="mps")
            .gpu("bm4", 1, mode="time-sliced", replicas=4, sharing="mps")
        ),
    ),
    Case(
        "mode.one-sharing-strategy-per-node",
        "MPS next to time-slicing",
        lambda: S().gpu("bm1", 7, mode="time-sliced", replicas=2, sharing="mps"),
        T_BM1,
    ),
    Case(
        "mode.one-sharing-strategy-per-node",
        "MPS on a MIG GPU",
        lambda: S().gpu("k8s1", 0, sharing="mps"),
        "node/k8s1",
    ),
    Case(
        "mode.change-evicts",
        "free GPU to time-slicing",
        lambda: S().gpu("bm1", 7, mode="time-sliced", replicas=4),
    ),
    Case(
        "mode.change-evicts",
        "held GPU to time-slicing",
        lambda: S().gpu("bm1", 0, mode="time-sliced", replicas=4),
        "bm1/0",
    ),
    # ---------------------------------------- vGPU
    Case(
        "vgpu.profile-exists",
        "A40-12C on an A40",
        lambda: vgpus_replaced("esx2", 0, vgpus(("vdi-01", "A40-12C"))),
    ),
    # Issue 19 point 13: B- and A-series types, and menus for the L4, L40, A10 and T4 (vgpu.yaml).
    Case("vgpu.profile-exists", "A40-2B on an A40", lambda: vgpu_host("8.0U3", "A40", "A40-2B", "A40-2B")),
    Case("vgpu.profile-exists", "A40-6A on an A40", lambda: vgpu_host("8.0U3", "A40", "A40-6A")),
    Case("vgpu.profile-exists", "L4-24Q on an L4", lambda: vgpu_host("8.0U3", "L4", "L4-24Q")),
    Case("vgpu.profile-exists", "L40-12Q on an L40", lambda: vgpu_host("8.0U3", "L40", "L40-12Q", "L40-12Q")),
    Case("vgpu.profile-exists", "A10-4C on an A10", lambda: vgpu_host("8.0U3", "A10", "A10-4C")),
    Case("vgpu.profile-exists", "T4-16C on a T4", lambda: vgpu_host("8.0U3", "T4", "T4-16C")),
    Case(
        "vgpu.profile-exists",
        "A40-4B: B types are 1 and 2 GB",
        lambda: vgpu_host("8.0U3", "A40", "A40-4B"),
        "esx9/0",
    ),
    Case(
        "vgpu.profile-exists",
        "vGPU on a GPU marked not_in_catalog",
        lambda: S().gpu(
            "esx2",
            3,
            model="NVIDIA RTX 6000 Ada Generation",
            not_in_catalog=NotInCatalog(memory_mib=49140),
            mode="vgpu",
            vm=None,
            vgpus=vgpus(("vdi-01", "A40-8C")),
        ),
        "esx2/3",
    ),
    Case(
        "vgpu.profile-exists",
        "an A100 type on an A40",
        lambda: vgpus_replaced("esx2", 0, vgpus(("vdi-01", "A100-8C"))),
        "esx2/0",
    ),
    Case(
        "vgpu.framebuffer",
        "24 + 16 + 8 = 48 GB on an A40 (mixed size, 8.0U3)",
        lambda: vgpus_replaced("esx2", 1, vgpus(("vdi-01", "A40-24C"), ("vdi-02", "A40-16C"), ("vdi-02", "A40-8C"))
        ),
    ),
    Case(
        "vgpu.framebuffer",
        "48 + 8 GB on an A40",
        lambda: vgpus_replaced("esx2", 1, vgpus(("vdi-01", "A40-48C"), ("vdi-02", "A40-8C"))),
        "esx2/1",
    ),
    Case(
        "vgpu.equal-size",
        "mixed sizes on 8.0U3",
        lambda: vgpus_replaced("esx2", 1, vgpus(("vdi-01", "A40-24C"), ("vdi-02", "A40-8C"))),
    ),
    Case(
        "vgpu.equal-size",
        "mixed sizes on 8.0U1",
        lambda: vgpus_replaced("esx1", 5, vgpus(("dev-01", "A100DX-40C"), ("dev-02", "A100DX-20C"))),
        "esx1/5",
    ),
    Case(
        "vgpu.equal-size",
        "9 × A40-6C, equal-size maximum 8",
        lambda: vgpus_replaced("esx2", 0, vgpus(*[("vdi-02", "A40-6C")] * 8, ("vdi-01", "A40-6C"))),
        "esx2/0",
    ),
    Case(
        "vgpu.equal-size",
        "5 × A40-8C in mixed-size mode, maximum 4",
        lambda: vgpus_replaced("esx2", 1, vgpus(*[("vdi-02", "A40-8C")] * 5, ("vdi-01", "A40-4C"))),
        "esx2/1",
    ),
    Case(
        "vgpu.equal-size",
        "8C and 8Q on one GPU before 8.0U1",
        lambda: vgpu_host("8.0", "A40", "A40-8C", "A40-8Q"),
        "esx9/0",
    ),
    # Issue 19 point 14: the vSphere 8 U1 article (shared/seeds/003_d3a2a3cdf68c732d.txt) — "The GPU accepts
    # different GPU types as long as they have identical frame buffer size configurations" (C, Q and A of one size).
    Case(
        "vgpu.equal-size",
        "12C, 12Q and 12A on one A40 on 8.0U1",
        lambda: vgpu_host("8.0U1", "A40", "A40-12C", "A40-12Q", "A40-12A"),
    ),
    Case(
        "vgpu.equal-size",
        "8C and 4Q on one GPU on 8.0U1 (one size only)",
        lambda: vgpu_host("8.0U1", "A40", "A40-8C", "A40-4Q"),
        "esx9/0",
    ),
    # Issue 19 point 13: mixed Q sizes need mixed-size mode (8.0U3); its maxima from NVIDIA's driver (vgpu.yaml).
    Case(
        "vgpu.equal-size",
        "24Q + 8Q + 4Q + 2Q on an A40 on 8.0U3",
        lambda: vgpu_host("8.0U3", "A40", "A40-24Q", "A40-8Q", "A40-4Q", "A40-2Q"),
    ),
    Case(
        "vgpu.equal-size",
        "8Q and 4Q on an L40S on 8.0U2",
        lambda: vgpu_host("8.0U2", "L40S", "L40S-8Q", "L40S-4Q"),
        "esx9/0",
    ),
    Case(
        "vgpu.equal-size",
        "5 × A40-8Q with an A40-4Q, mixed-size maximum 4",
        lambda: vgpu_host("8.0U3", "A40", *["A40-8Q"] * 5, "A40-4Q"),
        "esx9/0",
    ),
    Case(
        "vgpu.equal-size",
        "T4-8C and T4-4C on 8.0U3: the T4 has no mixed-size mode",
        lambda: vgpu_host("8.0U3", "T4", "T4-8C", "T4-4C"),
        "esx9/0",
    ),
    # Issue 19 point 10: 32 vGPUs per GPU at most (NVIDIA driver), 5 × 16 GB on an 80 GB H100.
    Case(
        "vgpu.equal-size",
        "32 × A40-1Q",
        lambda: vgpu_host("8.0U3", "A40", *["A40-1Q"] * 32),
    ),
    Case(
        "vgpu.equal-size",
        "33 × L40S-1Q, at most 32",
        lambda: vgpu_host("8.0U3", "L40S", *["L40S-1Q"] * 33),
        "esx9/0",
    ),
    Case(
        "vgpu.equal-size",
        "6 × H100-16C, at most 5",
        lambda: vgpu_host("8.0U3", "H100-PCIE-80GB", *["H100-16C"] * 6),
        "esx9/0",
    ),
    # Issue 19 point 13: the H20 menu, transcribed from NVIDIA AI Enterprise release 6, appendix/vgpu.html, Table 104
    # (Time-Sliced NVIDIA vGPU (C-Series) for NVIDIA H20 SXM5 96GB): H20-4C 24 in equal-size mode, 8 in mixed-size.
    Case("vgpu.profile-exists", "H20-48C on an H20", lambda: vgpu_host("8.0U3", "H20", "H20-48C")),
    Case(
        "vgpu.equal-size",
        "24 × H20-4C",
        lambda: vgpu_host("8.0U3", "H20", *["H20-4C"] * 24),
    ),
    Case(
        "vgpu.equal-size",
        "25 × H20-4C, at most 24",
        lambda: vgpu_host("8.0U3", "H20", *["H20-4C"] * 25),
        "esx9/0",
    ),
    Case(
        "vgpu.equal-size",
        "9 × H20-4C with an H20-6C, mixed-size maximum 8",
        lambda: vgpu_host("8.0U3", "H20", *["H20-4C"] * 9, "H20-6C"),
        "esx9/0",
    ),
    Case(
        "vgpu.max-per-vm",
        "8 vGPUs for one VM",
        lambda: vgpus_replaced("esx2", 0, vgpus(*[("vdi-01", "A40-4C")] * 7)),
    ),
    Case(
        "vgpu.max-per-vm",
        "10 vGPUs for one VM on vSphere 8",
        lambda: vgpus_replaced("esx2", 0, vgpus(*[("vdi-01", "A40-4C")] * 9)),
        "node/esx2",
    ),
    Case(
        "vgpu.one-board-and-series-per-vm",
        "two vGPUs of one board and series",
        lambda: vgpus_replaced("esx2", 0, vgpus(("vdi-01", "A40-8C"), ("vdi-01", "A40-8C"))),
    ),
    Case(
        "vgpu.one-board-and-series-per-vm",
        "an A100 and an A40 vGPU in one VM",
        lambda: vgpus_replaced("esx2", 0, vgpus(("vdi-01", "A40-8C"), ("ml-01", "A40-8C"))),
        "node/esx2",
    ),
    Case(
        "vgpu.one-board-and-series-per-vm",
        "C and Q series in one VM",
        lambda: vgpus_replaced("esx2", 0, vgpus(("vdi-02", "A40-8C"), ("vdi-01", "A40-8Q"))),
        "node/esx2",
    ),
    Case(
        "vgpu.multi-vgpu-full-framebuffer",
        "two full-frame-buffer vGPUs on 7.0U3",
        lambda: vgpus_replaced("esx7", 1, vgpus(("old-01", "A40-48C"))),
    ),
    Case(
        "vgpu.multi-vgpu-full-framebuffer",
        "a fractional vGPU in a multi-vGPU VM on 7.0U3",
        lambda: vgpus_replaced("esx7", 1, vgpus(("old-01", "A40-24C"))),
        "node/esx7",
    ),
    Case(
        "vgpu.mig-backed-needs-mig",
        "4-20C + 3-20C is the 4g + 3g layout",
        lambda: vgpus_replaced("esx2", 2, vgpus(("ml-01", "A100-4-20C"), ("ml-01", "A100-3-20C"))),
    ),
    Case(
        "vgpu.mig-backed-needs-mig",
        "MIG-backed next to time-sliced",
        lambda: vgpus_replaced("esx2", 2, vgpus(("ml-01", "A100-3-20C"), ("ml-01", "A100-20C"))),
        "esx2/2",
    ),
    Case(
        "vgpu.mig-backed-needs-mig",
        "instances that fit no layout",
        lambda: vgpus_replaced(
            "esx2", 2, vgpus(("ml-01", "A100-3-20C"), ("ml-01", "A100-3-20C"), ("ml-01", "A100-2-10C"))
        ),
        "esx2/2",
    ),
    # ---------------------------------------- vSphere
    Case(
        "vsphere.hardware-version",
        "HW 20 on 8.0U1",
        lambda: S().node(
            "esx1",
            vms=[
                Vm(name="train-01", hardware_version=20, device_group="dg-a"),
                Vm(name="dev-01", hardware_version=20),
                Vm(name="dev-02", hardware_version=20),
            ],
        ),
    ),
    Case(
        "vsphere.hardware-version",
        "HW 21 on 8.0U1",
        lambda: S().node(
            "esx1",
            vms=[
                Vm(name="train-01", hardware_version=20, device_group="dg-a"),
                Vm(name="dev-01", hardware_version=21),
                Vm(name="dev-02", hardware_version=19),
            ],
        ),
        "node/esx1",
    ),
    Case(
        "vsphere.passthrough-limit",
        "33 devices on 8.0U2 with HW 21 (128)",
        lambda: S().add_node(big_host("8.0U2", 21, 33)),
    ),
    Case("vsphere.passthrough-limit", "16 devices on 7.0U3", lambda: S().add_node(big_host("7.0U3", 19, 16))),
    Case(
        "vsphere.passthrough-limit",
        "17 devices on 7.0U3 (16)",
        lambda: S().add_node(big_host("7.0U3", 19, 17)),
        "node/esx-big",
    ),
    Case(
        "vsphere.passthrough-limit",
        "33 devices on 8.0 (32)",
        lambda: S().add_node(big_host("8.0", 20, 33)),
        "node/esx-big",
    ),
    Case(
        "vsphere.vm-references",
        "detach the passthrough GPU on both sides",
        lambda: (
            S()
            .gpu("esx2", 3, mode="full", vm=None)
            .node(
                "esx2",
                vms=[
                    v if v.name != "pt-01" else v.model_copy(update={"gpus": None})
                    for v in S().view.node("esx2").vms  # type: ignore[union-attr]
                ],
            )
        ),
    ),
    Case(
        "vsphere.vm-references",
        "passthrough to an undefined VM",
        lambda: S().gpu("esx2", 3, vm="ghost"),
        "node/esx2",
    ),
    Case(
        "vsphere.evacuation-room",
        "an A40-8C VM vMotioned onto an empty A40",
        lambda: evac_hosts({"name": "m-01", "hardware_version": 20},
                           {"model": "A40", "mode": "vgpu", "vgpus": [{"vm": "m-01", "profile": "A40-8C"}]},
                           [{"index": 0, "model": "A40", "mode": "vgpu"}]),
    ),
    Case(
        "vsphere.evacuation-room",
        "a passthrough L40S VM and no free passthrough L40S anywhere",
        lambda: evac_hosts({"name": "pt-9", "hardware_version": 20, "gpus": [0]},
                           {"model": "L40S", "mode": "passthrough", "vm": "pt-9"},
                           [{"index": 0, "model": "L40S", "mode": "full"}]),
        "node/esx-src",
    ),
    Case("vsphere.stun-time", "10 s of stun, 30 tolerated", lambda: stun_move(10.0, 30.0)),
    Case("vsphere.stun-time", "40 s of stun, 30 tolerated", lambda: stun_move(40.0, 30.0), "node/esx2"),
    # ---------------------------------------- groups
    Case(
        "group.size",
        "a group of 2",
        lambda: S().node(
            "esx1",
            device_groups=[
                DeviceGroup(name="dg-a", gpus=[0, 1, 2, 3]),
                DeviceGroup(name="dg-b", gpus=[7, 6]),  # a Fabric Manager pair of HGX A100 (group.fm-partition)
            ],
        ),
    ),
    Case(
        "group.size",
        "a group of 3",
        lambda: S().node(
            "esx1",
            device_groups=[
                DeviceGroup(name="dg-a", gpus=[0, 1, 2, 3]),
                DeviceGroup(name="dg-b", gpus=[5, 6, 7]),
            ],
        ),
        "node/esx1",
    ),
    Case("group.esxi-version", "NVSwitch groups on 8.0U1", lambda: S().node("esx1")),
    Case(
        "group.esxi-version",
        "NVSwitch groups on 8.0",
        lambda: S().node(
            "esx1",
            vsphere=S()
            .view.node("esx1")
            .vsphere.model_copy(  # type: ignore[union-attr]
                update={"version": "8.0"}
            ),
        ),
        "node/esx1",
    ),
    Case(
        "group.esxi-version",
        "bridged-pair group on 7.0U3",
        lambda: S().node(
            "esx7",
            nvlink="pairs",
            device_groups=[DeviceGroup(name="dg", gpus=[0, 1])],
            vms=[Vm(name="old-01", hardware_version=19, device_group="dg")],
        ),
        "node/esx7",
    ),
    Case(
        "group.one-nvlink-domain",
        "groups on bridged pairs",
        lambda: S().add_node(pairs_host([[0, 1], [2, 3]])),
    ),
    Case(
        "group.one-nvlink-domain",
        "a group across two pairs",
        lambda: S().add_node(pairs_host([[1, 2]])),
        "node/esx3",
    ),
    # issue 19 point 15: Fabric Manager's default partitions of HGX A100 by physical id 1-8 (catalog, cited from
    # NVIDIA's Fabric Manager user guide, "GPU Partitions"): 2-GPU sets are {1,2} {3,4} {5,6} {7,8}, i.e. GPU
    # indexes {0,1} {2,3} {4,5} {6,7}; esx1 is an HGX A100 8-GPU board with groups {0,1,2,3} and {6,7}
    Case(
        "group.fm-partition",
        "groups that are Fabric Manager partitions of HGX A100",
        lambda: S().node(
            "esx1",
            device_groups=[DeviceGroup(name="dg-a", gpus=[3, 2, 1, 0]), DeviceGroup(name="dg-b", gpus=[7, 6])],
        ),
    ),
    Case(
        "group.fm-partition",
        "a pair {0,5} of an NVSwitch board",
        lambda: S().node(
            "esx1",
            device_groups=[DeviceGroup(name="dg-a", gpus=[2, 3]), DeviceGroup(name="dg-b", gpus=[0, 5])],
        ),
        "node/esx1",
    ),
    # Module ids as the real HGX H100 of tests/adapters/fixtures/k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml
    # reports them (GPU 0 in module 7, GPU 1 in module 5, …): Fabric Manager's sets are by module, so on
    # esx1's HGX A100 board {0,1,2,3} (modules 7,5,6,8) stays a partition, {6,5} (modules 4,3) is one and the
    # base's {6,7} (modules 4,2) is none — the opposite of what the indexes alone say for the pairs
    Case(
        "group.fm-partition",
        "a partition by the GPUs' module ids",
        lambda: with_module_ids(S(), "esx1", REAL_H100_MODULE_IDS).node(
            "esx1",
            device_groups=[DeviceGroup(name="dg-a", gpus=[0, 1, 2, 3]), DeviceGroup(name="dg-b", gpus=[6, 5])],
        ),
    ),
    Case(
        "group.fm-partition",
        "a pair {6,7} whose module ids (4,2) are no partition",
        lambda: with_module_ids(S(), "esx1", REAL_H100_MODULE_IDS),
        "node/esx1",
    ),
    # issue 19 point 8: a direct NVLink mesh (HGX A100 4-GPU) is no NVSwitch system: plain passthrough stays allowed
    Case(
        "group.nvswitch-vgpu",
        "plain passthrough on an NVLink mesh host",
        lambda: (
            S()
            .gpu("esx1", 5, mode="passthrough", vgpus=None, vm="dev-01")
            .node(
                "esx1",
                nvlink="mesh",
                vms=[
                    Vm(name="train-01", hardware_version=20, device_group="dg-a"),
                    Vm(name="dev-01", hardware_version=20, gpus=[5]),
                    Vm(name="dev-02", hardware_version=19),
                ],
            )
        ),
    ),
    Case(
        "group.one-nvlink-domain",
        "a group where the NVLink layout is unknown",
        lambda: S().node("esx1", nvlink="unknown"),
        "node/esx1",
    ),
    Case(
        "group.no-overlap",
        "disjoint groups",
        lambda: S().node(
            "esx1",
            device_groups=[
                DeviceGroup(name="dg-a", gpus=[0, 1, 2, 3]),
                DeviceGroup(name="dg-b", gpus=[6, 7]),
            ],
        ),
    ),
    Case(
        "group.no-overlap",
        "GPU 6 in two groups",
        lambda: S().node(
            "esx1",
            device_groups=[
                DeviceGroup(name="dg-a", gpus=[0, 1, 2, 3]),
                DeviceGroup(name="dg-b", gpus=[5, 6]),
                DeviceGroup(name="dg-c", gpus=[6, 7]),
            ],
        ),
        "node/esx1",
    ),
    Case(
        "group.vm-holds-whole-group",
        "a VM with a vGPU on each GPU of its group",
        lambda: (
            S()
            .gpu("esx1", 6, vgpus=vgpus(("dev-02", "A100DX-80C")))
            .gpu("esx1", 7, vgpus=vgpus(("dev-02", "A100DX-80C")))
            .node(
                "esx1",
                vms=[
                    Vm(name="train-01", hardware_version=20, device_group="dg-a"),
                    Vm(name="dev-01", hardware_version=20),
                    Vm(name="dev-02", hardware_version=19, device_group="dg-b"),
                ],
            )
        ),
    ),
    Case(
        "group.vm-holds-whole-group",
        "a VM attached to a group without its GPUs",
        lambda: S().node(
            "esx1",
            vms=[
                Vm(name="train-01", hardware_version=20, device_group="dg-a"),
                Vm(name="dev-01", hardware_version=20),
                Vm(name="dev-02", hardware_version=19, device_group="dg-b"),
            ],
        ),
        "node/esx1",
    ),
    Case(
        "group.vm-holds-whole-group",
        "a stranger's vGPU inside a group",
        lambda: vgpus_replaced("esx1", 3, vgpus(("dev-01", "A100DX-80C"))),
        "node/esx1",
    ),
    Case(
        "group.nvswitch-vgpu",
        "time-sliced vGPU on an NVSwitch host",
        lambda: vgpus_replaced("esx1", 5, vgpus(("dev-01", "A100DX-20C"))),
    ),
    Case(
        "group.nvswitch-vgpu",
        "MIG-backed vGPU on an NVSwitch host",
        lambda: vgpus_replaced("esx1", 5, vgpus(("dev-01", "A100DX-3-40C"))),
        "node/esx1",
    ),
    Case(
        "group.nvswitch-vgpu",
        "plain passthrough on an NVSwitch host",
        lambda: (
            S()
            .gpu("esx1", 5, mode="passthrough", vgpus=None, vm="dev-01")
            .node(
                "esx1",
                vms=[
                    Vm(name="train-01", hardware_version=20, device_group="dg-a"),
                    Vm(name="dev-01", hardware_version=20, gpus=[5]),
                    Vm(name="dev-02", hardware_version=19),
                ],
            )
        ),
        "node/esx1",
    ),
    # ---------------------------------------- placement
    Case("placement.slot-exists", "bind to a free GPU", lambda: S().bind("wait", ("bm2", 2))),
    Case(
        "placement.slot-exists",
        "bind to GPU 9 of an 8-GPU node",
        lambda: S().bind("wait", ("bm1", 9)),
        "job/wait",
    ),
    Case("placement.slot-exists", "bind to a missing node", lambda: S().bind("wait", ("bm9", 0)), "job/wait"),
    Case(
        "placement.slot-exists",
        "bind to a MIG start with no instance",
        lambda: S().submit(running("m", [("bm1", 2, 6)], mig="1g.10gb")),
        "job/m",
    ),
    Case(
        "placement.slot-free",
        "a third sharer on a 4-replica GPU",
        lambda: S().submit(running("nb3", [("bm1", 3)], fraction=0.2)),
    ),
    Case("placement.slot-free", "bind onto a held GPU", lambda: S().bind("wait", ("bm1", 0)), "job/wait"),
    Case(
        "placement.slot-free",
        "bind onto a held MIG instance",
        lambda: S().submit(running("m", [("bm1", 2, 0)], mig="2g.20gb")),
        "job/m",
    ),
    Case(
        "placement.matches-request",
        "a 1g job on the 1g instance",
        lambda: S().submit(running("m", [("bm1", 2, 2)], mig="1g.10gb")),
    ),
    Case(
        "placement.matches-request",
        "two slots for one GPU",
        lambda: S().bind("wait", ("bm2", 2), ("bm2", 3)),
        "job/wait",
    ),
    Case(
        "placement.matches-request",
        "a 3g job on a 3g GI split into compute instances",
        lambda: S().submit(running("m", [("bm5", 0, 4)], mig="3g.71gb")),
        "job/m",
    ),
    Case(
        "placement.matches-request",
        "a 3g job on the 1g instance",
        lambda: S().submit(running("m", [("bm1", 2, 2)], mig="3g.40gb")),
        "job/m",
    ),
    Case(
        "placement.matches-request",
        "model constraint",
        lambda: S().submit(running("m", [("bm2", 2)], gpus=1, model="A100-PCIE-40GB")),
        "job/m",
    ),
    Case(
        "placement.matches-request",
        "a fraction on a whole GPU",
        lambda: S().submit(running("f", [("bm2", 3)], fraction=0.5)),
        "job/f",
    ),
    Case(
        "placement.matches-request",
        "a whole-GPU job on a time-sliced replica",
        lambda: S().bind("wait", ("bm1", 3)),
        "job/wait",
    ),
    Case(
        "placement.matches-request",
        "a shared GPU job on a time-sliced replica",
        lambda: S().submit(running("sh", [("bm1", 3)], gpus=1, isolation="shared")),
    ),
    Case(
        "placement.matches-request",
        "a job on a vGPU-mode GPU",
        lambda: S().bind("wait", ("esx1", 5)),
        "job/wait",
    ),
    Case(
        "placement.exclusive-not-shared",
        "exclusive on a whole GPU",
        lambda: S().submit(job("x", gpus=1, isolation="exclusive")).bind("x", ("bm2", 4)),
    ),
    Case(
        "placement.exclusive-not-shared",
        "bind-job: exclusive on a time-sliced replica",
        lambda: S().submit(job("x", gpus=1, isolation="exclusive")).bind("x", ("bm1", 3)),
        "job/x",
    ),
    Case(
        "placement.exclusive-not-shared",
        "exclusive on a time-sliced MIG instance",
        lambda: S().submit(job("x", mig="3g.40gb", isolation="exclusive")).bind("x", ("bm1", 4, 0)),
        "job/x",
    ),
    Case(
        "placement.exclusive-not-shared",
        "a MIG job with isolation: shared on a time-sliced MIG instance",
        lambda: S().submit(job("x", mig="3g.40gb", isolation="shared")).bind("x", ("bm1", 4, 0)),
    ),
    Case(
        "placement.exclusive-not-shared",
        "bind-job: a MIG job without isolation (exclusive by default) on a time-sliced MIG instance",
        lambda: S().submit(job("x", mig="3g.40gb")).bind("x", ("bm1", 4, 0)),
        "job/x",
    ),
    Case(
        "placement.exclusive-not-shared",
        "set-time-slicing of a MIG instance a MIG job without isolation holds",
        lambda: S(with_job(running("m", [("bm1", 4, 4)], mig="3g.40gb"))).gpu(
            "bm1", 4, mig=mig(("3g.40gb", 0, 2), ("3g.40gb", 4, 2))
        ),
        "job/m",
    ),
    Case(
        "placement.slot-free",
        "a fraction joins a time-sliced MIG instance a MIG job without isolation holds",
        lambda: S(exclusive_mig_holder()).submit(running("f", [("bm1", 4, 0)], fraction=0.5)),
        "job/f",
    ),
    Case(
        "vgpu.not-dropped",
        "remove-vgpu of vdi-02's vGPU, vdi-01's kept",
        lambda: vgpus_removed("esx2", 0, ("vdi-02", "A40-8C")).gpu("esx2", 0, vgpus=vgpus(("vdi-01", "A40-8C"))),
    ),
    Case(
        "vgpu.not-dropped",
        "set-mode full with both vGPUs removed explicitly",
        lambda: vgpus_removed("esx2", 0, ("vdi-01", "A40-8C"), ("vdi-02", "A40-8C")).gpu(
            "esx2", 0, mode="full", vgpus=None
        ),
    ),
    Case(
        "vgpu.not-dropped",
        "set-mode full under two VMs' vGPUs",
        lambda: S().gpu("esx2", 0, mode="full", vgpus=None),
        "esx2/0",
    ),
    Case(
        "vgpu.not-dropped",
        "one vGPU removed explicitly, the other dropped by set-mode",
        lambda: vgpus_removed("esx2", 0, ("vdi-01", "A40-8C")).gpu("esx2", 0, mode="full", vgpus=None),
        "esx2/0",
    ),
    Case(
        "placement.non-preemptible-kept",
        "an admin's preempt-job with override stops a non-preemptible job",
        lambda: overridden("infer").preempt("infer"),
    ),
    Case(
        "placement.non-preemptible-kept",
        "a non-preemptible job keeps running while it is changed",
        lambda: S().job("infer", priority=10),
    ),
    Case(
        "placement.non-preemptible-kept",
        "preempt-job of a non-preemptible job",
        lambda: S().preempt("infer"),
        "job/infer",
    ),
    Case(
        "placement.non-preemptible-kept",
        "a restore that moves a non-preemptible job to another MIG instance",
        lambda: S().bind("infer", ("bm1", 2, 2)),
        "job/infer",
    ),
    Case(
        "placement.nvlink-domain",
        "one bridged pair",
        lambda: S().submit(running("n", [("bm3", 2), ("bm3", 3)], gpus=2, nvlink=True)),
    ),
    Case(
        "placement.nvlink-domain",
        "across two bridged pairs",
        lambda: S().submit(running("n", [("bm3", 1), ("bm3", 2)], gpus=2, nvlink=True)),
        "job/n",
    ),
    Case(
        "placement.nvlink-domain",
        "across device groups",
        lambda: (
            S()
            .gpu("esx1", 5, mode="full")
            .gpu("esx1", 6, mode="full")
            .gpu("esx1", 7, mode="full")
            .submit(running("n", [("esx1", 5), ("esx1", 6)], gpus=2, nvlink=True))
        ),
        "job/n",
    ),
    Case(
        "placement.rdma",
        "one RDMA network",
        lambda: S().submit(running("r", [("bm2", 2), ("bm1", 7)], gpus=1, nodes=2, rdma=True)),
    ),
    Case(
        "placement.rdma",
        "two RDMA networks",
        lambda: S().submit(running("r", [("bm2", 2), ("bm3", 0)], gpus=1, nodes=2, rdma=True)),
        "job/r",
    ),
    Case(
        "placement.rdma",
        "a node without RDMA",
        lambda: S().submit(running("r", [("bm4", 0)], gpus=1, rdma=True)),
        "job/r",
    ),
    Case(
        "placement.gang-whole",
        "2 × 2 over two nodes",
        lambda: S().submit(running("g", [("bm2", 2), ("bm2", 3), ("bm3", 0), ("bm3", 1)], gpus=2, nodes=2)),
    ),
    Case(
        "placement.gang-whole",
        "a 2-node gang on one node",
        lambda: S().submit(running("g", [("bm2", 2), ("bm2", 3), ("bm2", 4), ("bm2", 5)], gpus=2, nodes=2)),
        "job/g",
    ),
    Case(
        "placement.gang-whole",
        "a gang placed in part",
        lambda: S().submit(running("g", [("bm2", 2), ("bm2", 3), ("bm3", 0)], gpus=2, nodes=2)),
        "job/g",
    ),
    Case(
        "placement.no-oversubscription",
        "fractions and memory within the GPU: 0.5 + 20 GiB of 79.6 + 0.2",
        lambda: S().submit(running("nb3", [("bm1", 3)], fraction=0.2)),
    ),
    Case(
        "placement.no-oversubscription",
        "0.75 and 60 GiB on a time-sliced 80 GB GPU: each sum fits, together 1.5 of it",
        lambda: S()
        .gpu("bm2", 4, mode="time-sliced", replicas=4)
        .submit(running("f", [("bm2", 4)], fraction=0.75))
        .submit(running("g", [("bm2", 4)], gpu_memory_gib=60)),
        "bm2/4",
    ),
    Case(
        "placement.no-oversubscription",
        "0.5 and 25 GiB on a time-sliced 3g.40gb instance: together 1.13 of it",
        lambda: S().submit(running("g", [("bm1", 4, 0)], gpu_memory_gib=25)),
        "bm1/4",
    ),
    Case(
        "placement.no-oversubscription",
        "fractions add up to 1.25",
        lambda: S().submit(running("nb3", [("bm1", 3)], fraction=0.75)),
        "bm1/3",
    ),
    Case(
        "placement.no-oversubscription",
        "5 sharers on 4 replicas",
        lambda: (
            S()
            .submit(running("a", [("bm1", 3)], fraction=0.1))
            .submit(running("b", [("bm1", 3)], fraction=0.1))
            .submit(running("c", [("bm1", 3)], fraction=0.1))
        ),
        "bm1/3",
    ),
    Case(
        "placement.no-oversubscription",
        "90 GiB on an 80 GB GPU",
        lambda: S().submit(running("m", [("bm1", 3)], gpu_memory_gib=70)),
        "bm1/3",
    ),
    Case(
        "placement.no-oversubscription",
        "3 sharers on a 2-replica MIG instance",
        lambda: (
            S()
            .submit(running("a", [("bm1", 4, 0)], fraction=0.1))
            .submit(running("b", [("bm1", 4, 0)], fraction=0.1))
        ),
        "bm1/4",
    ),
    # ---------------------------------------- dynamic sharing (fractions on full GPUs)
    Case(
        "placement.matches-request",
        "a fraction on a full GPU of a dynamic-sharing node",
        lambda: dynamic().submit(running("f", [("bm2", 3)], fraction=0.5)),
    ),
    Case(
        "placement.dynamic-share",
        "two fractions share a full GPU",
        lambda: dynamic()
        .submit(running("f", [("bm2", 3)], fraction=0.5))
        .submit(running("g", [("bm2", 3)], gpu_memory_gib=20)),
    ),
    Case(
        "placement.dynamic-share",
        "a whole-GPU job onto a GPU a fraction holds",
        lambda: dynamic().submit(running("f", [("bm2", 3)], fraction=0.25)).bind("wait", ("bm2", 3)),
        "job/wait",
    ),
    Case(
        "placement.dynamic-share",
        "a fraction onto a GPU a whole-GPU job holds",
        lambda: dynamic().submit(running("f", [("bm2", 0)], fraction=0.25)),
        "job/f",
    ),
    Case("mode.sharing-reserve", "a dynamic-sharing node reserving 0.5 GiB per GPU", lambda: dynamic()),
    Case(
        "mode.sharing-reserve",
        "reserving 80 GiB of an 80 GB H100",
        lambda: dynamic(reserved_gib=80),
        "node/bm2",
    ),
    Case(
        "mode.sharing-change-evicts",
        "sharing off with the fraction preempted in the same plan",
        lambda: sharing_changed(None, running("f", [("bm2", 3)], fraction=0.5)).preempt("f"),
    ),
    Case(
        "mode.sharing-change-evicts",
        "the reserve raised to 2 GiB: half a GPU and 38 GiB still fit the 77.6 GiB left",
        lambda: sharing_changed(
            2, running("f", [("bm2", 3)], fraction=0.5), running("g", [("bm2", 3)], gpu_memory_gib=38)
        ),
    ),
    Case(
        "mode.sharing-change-evicts",
        "sharing off under a running fraction",
        lambda: sharing_changed(None, running("f", [("bm2", 3)], fraction=0.5)),
        "bm2/3",
    ),
    Case(
        "mode.sharing-change-evicts",
        "the reserve raised to 2 GiB: half a GPU and 39.5 GiB no longer fit",
        lambda: sharing_changed(
            2, running("f", [("bm2", 3)], fraction=0.5), running("g", [("bm2", 3)], gpu_memory_gib=39.5)
        ),
        "bm2/3",
    ),
    Case(
        "placement.no-oversubscription",
        "fractions fill a dynamically shared GPU exactly",
        lambda: dynamic()
        .submit(running("f", [("bm2", 3)], fraction=0.5))
        .submit(running("g", [("bm2", 3)], gpu_memory_gib=39.5)),
    ),
    Case(
        "placement.no-oversubscription",
        "half a GPU plus 39.7 GiB: fits 79.6 GiB, not the 79.1 GiB left after the reserved 0.5 GiB",
        lambda: dynamic()
        .submit(running("f", [("bm2", 3)], fraction=0.5))
        .submit(running("g", [("bm2", 3)], gpu_memory_gib=39.7)),
        "bm2/3",
    ),
    # ---------------------------------------- placement: what the job asks of its node
    Case(
        "placement.cpu-memory-fit",
        "32 CPUs and 256 GiB on a node of 64 and 512",
        lambda: S()
        .node("bm2", cpus=64, memory_gib=512)
        .submit(running("c", [("bm2", 2)], gpus=1, cpus=32, memory_gib=256)),
    ),
    Case(
        "placement.cpu-memory-fit",
        "a node without cpus or memory_gib is not checked",
        lambda: S().submit(running("c", [("bm2", 2)], gpus=1, cpus=4096, memory_gib=1e6)),
    ),
    Case(
        "placement.cpu-memory-fit",
        "96 CPUs on a node of 64",
        lambda: S().node("bm2", cpus=64, memory_gib=512).submit(running("c", [("bm2", 2)], gpus=1, cpus=96)),
        "node/bm2",
    ),
    Case(
        "placement.cpu-memory-fit",
        "two jobs whose memory adds up past the node's",
        lambda: S()
        .node("bm2", cpus=64, memory_gib=512)
        .submit(running("c", [("bm2", 2)], gpus=1, memory_gib=300))
        .submit(running("d", [("bm2", 3)], gpus=1, memory_gib=300)),
        "node/bm2",
    ),
    Case(
        "placement.node-affinity",
        "selector and affinity match the node's labels",
        lambda: S()
        .node("bm2", labels={"pool": "training", "gpu": "h100"})
        .submit(
            {
                **running("a", [("bm2", 2)], gpus=1),
                "node_selector": {"pool": "training"},
                "node_affinity": [
                    {"key": "gpu", "operator": "In", "values": ["h100", "h200"]},
                    {"key": "spot", "operator": "DoesNotExist"},
                ],
            }
        ),
    ),
    Case(
        "placement.node-affinity",
        "a label changed after placement does not evict",
        lambda: S(with_job({**running("a", [("bm2", 2)], gpus=1), "node_selector": {"pool": "training"}}))
        .node("bm2", labels={"pool": "serving"})
        .job("a", priority=1),
    ),
    Case(
        "placement.node-affinity",
        "node selector pool=training on an unlabelled node",
        lambda: S().submit({**running("a", [("bm2", 2)], gpus=1), "node_selector": {"pool": "training"}}),
        "job/a",
    ),
    Case(
        "placement.node-affinity",
        "affinity NotIn the node's pool",
        lambda: S()
        .node("bm2", labels={"pool": "serving"})
        .submit(
            {
                **running("a", [("bm2", 2)], gpus=1),
                "node_affinity": [{"key": "pool", "operator": "NotIn", "values": ["serving"]}],
            }
        ),
        "job/a",
    ),
    Case(
        "placement.vm-gpus",
        "a job in VM train-01 on two GPUs of its device group",
        lambda: S().submit({**running("v", [("esx1", 0), ("esx1", 1)], gpus=2), "vm": "train-01"}),
    ),
    Case(
        "placement.vm-gpus",
        "a job in VM pt-01 on its passthrough GPU",
        lambda: S().submit({**running("v", [("esx2", 3)], gpus=1), "vm": "pt-01"}),
    ),
    Case(
        "placement.vm-gpus",
        "a job in VM train-01 on a GPU of dev-01",
        lambda: S().submit({**running("v", [("esx1", 4)], gpus=1), "vm": "train-01"}),
        "job/v",
    ),
    Case(
        "placement.vm-gpus",
        "a job in VM train-01 on another host",
        lambda: S().submit({**running("v", [("esx2", 0)], gpus=1), "vm": "train-01"}),
        "job/v",
    ),
    Case(
        "placement.vm-gpus",
        "a job outside any VM on a GPU of VM train-01",
        lambda: S().submit(running("v", [("esx1", 0)], gpus=1)),
        "job/v",
    ),
    Case("placement.gpu-healthy", "a fence keeps the jobs already on the GPU; a bind goes to a healthy one",
         lambda: S().gpu("bm2", 0, health=FENCE).gpu("bm2", 3, health=FENCE).bind("wait", ("bm2", 2))),
    Case("placement.gpu-healthy", "bind onto a GPU fenced as unhealthy",
         lambda: S().gpu("bm2", 2, health=FENCE).bind("wait", ("bm2", 2)), "job/wait"),
    # ---------------------------------------- nodes
    Case("node.no-new-placements", "cordon keeps running jobs", lambda: S().node("bm2", state="cordoned")),
    Case(
        "node.no-new-placements",
        "bind onto a cordoned node",
        lambda: S().node("bm2", state="cordoned").bind("wait", ("bm2", 2)),
        "job/wait",
    ),
    Case(
        "node.no-new-placements",
        "bind onto a down node",
        lambda: S().node("bm2", state="down").bind("wait", ("bm2", 2)),
        "job/wait",
    ),
    Case(
        "node.drain-blocked",
        "drain with the preemptible gang preempted",
        lambda: S().node("bm2", state="draining").preempt("gang"),
    ),
    Case(
        "node.drain-blocked",
        "drain under a non-preemptible job",
        lambda: S().node("bm1", state="draining"),
        T_BM1,
    ),
    Case(
        "node.drain-evicts",
        "drain with the preemptible gang preempted",
        lambda: S().node("bm2", state="draining").preempt("gang"),
    ),
    Case(
        "node.drain-evicts",
        "drain leaving a preemptible job running",
        lambda: S().node("bm2", state="draining"),
        "node/bm2",
    ),
    Case(
        "node.gpu-model-known",
        "time-slicing a GPU kept with not_in_catalog",
        lambda: S().gpu("bm5", 1, mode="time-sliced", replicas=2),
    ),
    Case(
        "node.gpu-model-known",
        "a model name the catalog does not know",
        lambda: S().gpu("bm2", 7, model="H100-SXM5-80G"),
        "bm2/7",
    ),
    Case(
        "node.gpu-model-known",
        "a catalog model marked not_in_catalog",
        lambda: S().gpu("bm2", 7, not_in_catalog=NotInCatalog(memory_mib=81559)),
        "bm2/7",
    ),
    # ---------------------------------------- quota
    Case(
        "quota.limit",
        "2 GPUs under a limit of 2",
        lambda: S().submit(running("s", [("bm2", 2), ("bm2", 3)], queue="scratch", gpus=2)),
    ),
    Case(
        "quota.limit",
        "3 GPUs over a limit of 2",
        lambda: S().submit(running("s", [("bm2", 2), ("bm2", 3), ("bm2", 4)], queue="scratch", gpus=3)),
        "queue/scratch",
    ),
    Case(
        "quota.limit",
        "GPU memory over the limit",
        lambda: S().queue(
            "research",
            limit=S()
            .view.queue("research")
            .limit.model_copy(  # type: ignore[union-attr]
                update={"gpu_memory_gib": 100.0}
            ),
        ),
        "queue/research",
    ),
    Case(
        "quota.nonpreemptible-in-quota",
        "non-preemptible within quota",
        lambda: S().submit(running("s", [("bm2", 2)], queue="scratch", gpus=1, preemptible=False)),
    ),
    Case(
        "quota.nonpreemptible-in-quota",
        "non-preemptible on borrowed quota",
        lambda: S().submit(
            running("s", [("bm2", 2), ("bm2", 3)], queue="scratch", gpus=2, preemptible=False)
        ),
        "queue/scratch",
    ),
    Case(
        "quota.limit-not-below-quota",
        "limit equal to quota",
        lambda: S().queue(
            "research",
            limit=S()
            .view.queue("research")
            .limit.model_copy(  # type: ignore[union-attr]
                update={"gpus": 16}
            ),
        ),
    ),
    Case(
        "quota.limit-not-below-quota",
        "limit below quota",
        lambda: S().queue(
            "research",
            limit=S()
            .view.queue("research")
            .limit.model_copy(  # type: ignore[union-attr]
                update={"gpus": 8}
            ),
        ),
        "queue/research",
    ),
    Case(
        "quota.queue-exists",
        "a job in a new queue",
        lambda: S().add_queue({"name": "new"}).submit(job("j", queue="new", gpus=1)),
    ),
    Case(
        "quota.queue-exists",
        "a job in a missing queue",
        lambda: S().submit(job("j", queue="nope", gpus=1)),
        "job/j",
    ),
    Case(
        "quota.queue-exists",
        "removing a queue that still has jobs",
        lambda: S().remove_queue("scratch").submit(job("j", queue="scratch", gpus=1)),
        "job/j",
    ),
    Case(
        "quota.queue-exists",
        "removing a queue its job still names",
        lambda: queue_of_one("solo").remove_queue("solo"),
        "job/solo-job",
    ),
]


def _id(case: Case) -> str:
    return f"{case.rule}:{'pass' if case.passing else 'fail'}:{case.name}"


def test_base_cluster_is_clean() -> None:
    scenario = Scenario()
    assert check(scenario.view, everything(scenario.view)) == []


@pytest.mark.parametrize("case", [c for c in CASES if c.passing], ids=_id)
def test_passing_case(case: Case) -> None:
    found = case.build().violations()
    assert found == [], "\n".join(f"{v.rule} {v.target}: {v.message}" for v in found)


@pytest.mark.parametrize("case", [c for c in CASES if not c.passing], ids=_id)
def test_failing_case(case: Case) -> None:
    found = case.build().violations()
    mine = [v for v in found if v.rule == case.rule]
    assert mine, f"{case.rule} did not fire; got: " + "; ".join(f"{v.rule} {v.target}" for v in found)
    assert {v.target for v in mine} == {case.target}, [(v.target, v.message) for v in mine]
    for violation in mine:
        assert violation.message and violation.message[0] != " "


def test_every_rule_has_a_passing_and_a_failing_case() -> None:
    passing = {c.rule for c in CASES if c.passing}
    failing = {c.rule for c in CASES if not c.passing}
    assert passing == set(RULES), f"no passing case: {sorted(set(RULES) - passing)}"
    assert failing == set(RULES), f"no failing case: {sorted(set(RULES) - failing)}"
