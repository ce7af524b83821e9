"""The node-side commands a plan implies: what an operator (or mig-manager) would run to enforce it.

Pure functions of the before/after of each node. MIG lines use the catalog's nvidia-smi profile ids;
GIs are created largest first, the order in which the driver's greedy placement reproduces a valid
layout (mig-parted retries orderings for the same reason). Kubernetes nodes get the GPU Operator's
labels instead of hand-run MIG lines being the only route.

Operators pipe these lines into `sh`, so every value taken from an inventory is one shell word
(`shlex.quote`), passed after `--` where it is an operand (a name is never read as an option), and comments
never hold a line break. The model refuses Kubernetes node names that Kubernetes could not hold; the quoting
holds even for a state written before that check.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from gpuadmin.catalog import get_catalog, mig_device_resource_name
from gpuadmin.engine.mig import compute_slices_of
from gpuadmin.model import Gpu, Node
from gpuadmin.model.inventory import NODE_CONFIG_PREFIX

if TYPE_CHECKING:
    from gpuadmin.engine.planner import EntityDiff
    from gpuadmin.engine.state import View


def mig_config_name(node: str) -> str:
    """The mig-parted config gpuadmin exports for a node (`gpuadmin export mig-parted`)."""
    return f"{NODE_CONFIG_PREFIX}{node}"


#: nvidia-smi compute-instance profile ID by compute slices: NVML's CI profile constants (1_SLICE=0, 2=1, 3=2,
#: 4=3, 7=4, 8=5, 6=6; gpu-facts §1.3), as the MIG-UG's `-lcip` example prints them (1c.3g.20gb ID 0,
#: 2c.3g.20gb ID 1, 3g.20gb ID 2) [derived].
CI_PROFILE_IDS = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}


def _mig_create(gpu: Gpu) -> list[str]:
    """`-cgi … -C` for the layout; where a GI is split into compute instances, its default CI is replaced
    by the split: the GI is found by profile and placement in `nvidia-smi mig -lgi` (columns: GPU, name,
    profile ID, instance ID, placement), its CIs destroyed and created with `-cci`."""
    model = get_catalog().model(gpu.model)
    if model is None or not gpu.mig:
        return []
    profiles = [(model.mig_profile(i.profile), i) for i in gpu.mig]
    ordered = sorted(((p, i) for p, i in profiles if p is not None),
                     key=lambda pi: (-pi[0].memory_slices, -pi[0].compute_slices, pi[1].start or 0))
    ids = ",".join(str(p.profile_id) for p, _ in ordered)
    where = " ".join(f"{i.profile}@{i.start}" for _, i in ordered)
    out = [f"nvidia-smi mig -i {gpu.index} -cgi {ids} -C  {_comment(where)}"]
    for profile, instance in ordered:
        if not instance.split or instance.start is None:
            continue
        cis = instance.compute_instances or []
        slices = [compute_slices_of(profile, ci) for ci in cis]
        ci_ids = [CI_PROFILE_IDS.get(s) for s in slices if s is not None]
        if len(ci_ids) != len(cis) or None in ci_ids:
            continue  # mig.compute-instances refuses such a split; nothing runnable to print
        # the profile name is the catalog's (the inventory's spelling only selected it) and the start a number
        gi = (f"$(nvidia-smi mig -i {gpu.index} -lgi | awk '$4==\"{profile.name}\" && "
              f"$7==\"{instance.start}:{profile.memory_slices}\" {{print $6}}')")
        out.append(f"GI={gi}; nvidia-smi mig -i {gpu.index} -gi \"$GI\" -dci && nvidia-smi mig -i {gpu.index} "
                   f"-gi \"$GI\" -cci {','.join(str(i) for i in ci_ids)}  "
                   + _comment(f"{', '.join(cis)} in {profile.name}@{instance.start}"))
    return out


def _gpu_commands(before: Gpu | None, after: Gpu | None) -> list[str]:
    out: list[str] = []
    if after is None:
        return out
    was_mig = before is not None and before.mode == "mig"
    if after.mode == "mig":
        if not was_mig:
            out.append(f"nvidia-smi -i {after.index} -mig 1")
        if before is None or before.mig != after.mig:
            layout_changed = before is None or [(i.profile, i.start, i.compute_instances)
                                                 for i in before.mig or ()] != [
                (i.profile, i.start, i.compute_instances) for i in after.mig or ()]
            if was_mig and layout_changed:
                out.append(f"nvidia-smi mig -i {after.index} -dci")
                out.append(f"nvidia-smi mig -i {after.index} -dgi")
            if layout_changed:
                out += _mig_create(after)
    elif was_mig:
        out += [f"nvidia-smi mig -i {after.index} -dci", f"nvidia-smi mig -i {after.index} -dgi",
                f"nvidia-smi -i {after.index} -mig 0"]
    return out


def _comment(text: str) -> str:
    """A shell comment of one line: a line break in a name would end the comment and start a command."""
    return "# " + " ".join(text.splitlines())


def _kubectl(*words: str, operands: tuple[str, ...]) -> str:
    """A kubectl line: its own words, then `--` and the operands, each one shell word."""
    return " ".join(("kubectl", *words, "--", *map(shlex.quote, operands)))


def _label(node: str, key: str, value: str) -> str:
    return _kubectl("label", "--overwrite", "node", operands=(node, f"{key}={value}"))


def _replicas(node: Node) -> str:
    """What the node's device-plugin config shares, e.g. `nvidia.com/gpu x4 on GPU 2, mig-1g.10gb x2 on GPU 1`."""
    parts = [f"nvidia.com/gpu x{g.replicas} on GPU {g.index}" for g in node.gpus
             if g.mode == "time-sliced" and g.replicas]
    parts += [f"{mig_device_resource_name(i.profile)} x{i.replicas} on GPU {g.index}" for g in node.gpus
              for i in g.mig or () if i.replicas]
    return ", ".join(parts) or "no time-slicing"


def _sharing_note(node: Node) -> str:
    """Dynamic sharing changes nothing on the node: KAI/Run:ai fractions are a scheduler matter, so the plan says
    so as a comment rather than inventing a command."""
    state = f"on ({node.sharing.reserved_gib:g} GiB reserved per GPU)" if node.sharing is not None else "off"
    return _comment(f"dynamic sharing {state}: nothing to run on {node.name}; fractions on whole GPUs are a "
                    "scheduler setting (KAI: helm --set global.gpuSharing=true, cluster-wide), and gpuadmin binds "
                    "them to this node's full GPUs only while it shares (`gpuadmin export pods` writes their "
                    "gpu-fraction pods)")


def _node_commands(before: Node | None, after: Node) -> list[str]:
    out: list[str] = []
    old = {g.index: g for g in before.gpus} if before is not None else {}
    for gpu in after.gpus:
        out += _gpu_commands(old.get(gpu.index), gpu)
    if after.kubernetes:
        had_mig = before is not None and any(g.mode == "mig" for g in before.gpus)
        has_mig = any(g.mode == "mig" for g in after.gpus)
        mig_changed = before is None or [g.mig for g in before.gpus] != [g.mig for g in after.gpus] or [
            g.mode for g in before.gpus] != [g.mode for g in after.gpus]
        if mig_changed and (has_mig or had_mig):
            out = [c for c in out if not c.startswith("nvidia-smi")]  # mig-manager applies it instead
            out.append("gpuadmin export mig-parted | kubectl -n gpu-operator create configmap "
                       "gpuadmin-mig-parted-config --from-file=config.yaml=/dev/stdin --dry-run=client -o yaml "
                       "| kubectl apply -f -")
            out.append(_label(after.name, "nvidia.com/mig.config",
                              mig_config_name(after.name) if has_mig else "all-disabled"))
        sharing_changed = before is None or [(g.mode, g.replicas, [i.replicas for i in g.mig or ()])
                                             for g in before.gpus] != [
            (g.mode, g.replicas, [i.replicas for i in g.mig or ()]) for g in after.gpus]
        if sharing_changed or mig_changed:
            # every GPU node has its own device-plugin config (`gpuadmin export device-plugin`): MIG nodes
            # need their migStrategy even without sharing
            out.append(f"gpuadmin export device-plugin | kubectl apply -f -  {_comment(_replicas(after))}")
            out.append(_label(after.name, "nvidia.com/device-plugin.config", mig_config_name(after.name)))
        if (before.sharing if before is not None else None) != after.sharing:
            out.append(_sharing_note(after))
        if before is not None and before.state != after.state:
            if after.state == "cordoned":
                out.append(_kubectl("cordon", operands=(after.name,)))
            elif after.state == "draining":
                out.append(_kubectl("drain", "--ignore-daemonsets", "--delete-emptydir-data",
                                    operands=(after.name,)))
            elif after.state == "ready":
                out.append(_kubectl("uncordon", operands=(after.name,)))
    return out


def node_commands(view: View, diff: list[EntityDiff]) -> dict[str, list[str]]:
    """node name → the shell lines that bring it from its before to its after state."""
    out: dict[str, list[str]] = {}
    for d in diff:
        if d.kind != "node":
            continue
        after = view.node(d.name)
        if after is None:
            continue
        lines = _node_commands(view.base.nodes.get(d.name), after)
        if lines:
            out[d.name] = lines
    return out


