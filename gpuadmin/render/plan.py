"""A plan as text: verdict, violations with their rule ids, diff, effects, and the node commands it implies (or, on a
state bound to a cluster, the API calls apply will make there)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Any

from gpuadmin.render.text import safe

CALLS_WIDTH = 110  # a planned step's API calls are wrapped to this width


def _flat_dict(value: Any) -> bool:
    return isinstance(value, dict) and not any(isinstance(v, dict | list) for v in value.values())


def _item(item: dict[str, Any]) -> str:
    if "profile" in item and "start" in item:  # a MIG instance: PROFILE@START
        rest = [str(v) for k, v in item.items() if k not in ("profile", "start") and v is not None]
        return f"{item['profile']}@{item['start'] if item['start'] is not None else '?'}" + (
            f"({','.join(rest)})" if rest else "")
    if "node" in item and "gpu" in item:  # a slot: NODE/GPU or NODE/GPU/@START (gpuadmin.model.places)
        return f"{item['node']}/{item['gpu']}" + (f"/@{item['mig_start']}" if item.get("mig_start") is not None
                                                  else "")
    return "/".join(str(v) for v in item.values() if v is not None)


def _compact(items: list[dict[str, Any]]) -> str:
    """A list of flat mappings on one line: slots as places (`node/gpu`, `node/gpu/@start`), MIG instances as
    `profile@start`, vGPUs as `vm/profile`."""
    return " ".join(_item(item) for item in items)


_COMPACT = {"placement", "mig", "vgpus"}  # short lists shown on one line in a diff


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and prefix.rsplit(".", 1)[-1] in _COMPACT and all(
            _flat_dict(v) for v in value):
        return {prefix: _compact(value)}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{i}]"))
        return out
    if value == []:  # an empty list is no field of its own: the other side's items show as added or removed
        return {}
    return {prefix: value}


def _path_order(path: str) -> list[str | int]:
    """`vms[2].name` before `vms[10].name`: list indices compare as numbers (the split puts them at odd places)."""
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"\[(\d+)\]", path))]


def field_changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[tuple[str, Any, Any]]:
    """(field path, before, after) for every leaf that differs, in the order of the lists' items."""
    old, new = _flatten(before or {}), _flatten(after or {})
    return [(k, old.get(k), new.get(k)) for k in sorted(old.keys() | new.keys(), key=_path_order)
            if old.get(k) != new.get(k)]


def _show(value: Any) -> str:
    return "-" if value is None else safe(value)


def violation_lines(violations: list[dict[str, Any]]) -> list[str]:
    """Each violation with its rule id; one that follows from another (`caused_by`) is listed under it."""
    under: dict[int, list[int]] = {}
    for i, v in enumerate(violations):
        if v.get("caused_by") is not None:
            under.setdefault(int(v["caused_by"]), []).append(i)

    def one(v: dict[str, Any], indent: str, mark: str) -> str:
        line = f"{indent}{mark} [{v['rule']}] {safe(v['target'])}: {safe(v['message'])}"
        if v.get("hint"):
            line += f"\n{indent}    hint: {safe(v['hint'])}"
        return line

    out = []
    for i, v in enumerate(violations):
        if v.get("caused_by") is not None:
            continue
        out.append(one(v, "  ", "✗"))
        follow = under.get(i, [])
        if follow:
            out.append(f"      which also breaks ({len(follow)}):")
            out += [one(violations[j], "        ", "-") for j in follow]
    return out


# what an added or removed job or queue shows under its line: the whole spec (a node is too large: its own
# `describe` has it); `submitted` is the moment of planning, not a choice the operator reviews
_SPEC_KINDS = {"job", "queue"}
_NOT_SPEC = {"name", "submitted"}


def _spec_value(value: Any) -> str:
    if isinstance(value, bool):  # as the change file and `-o yaml` write it
        return "true" if value else "false"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_spec_value(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, list) and all(_flat_dict(v) for v in value):
        return _compact(value)
    return _show(value)


def spec_lines(entity: dict[str, Any]) -> list[str]:
    """An added (or removed) job or queue, one field a line: what a submit or a removal acts on."""
    return [f"      {safe(key)}: {safe(_spec_value(value))}" for key, value in entity.items()
            if key not in _NOT_SPEC and value not in (None, [], {})]


def _freed(diff: list[dict[str, Any]]) -> dict[str, str]:
    """Job → the places it held before this plan and holds no more (a cancel, a preemption, an eviction)."""
    out = {}
    for d in diff:
        if d["kind"] != "job" or not d["before"] or not d["before"].get("placement"):
            continue
        held = d["before"]["placement"]
        kept = (d["after"] or {}).get("placement") or []
        gone = [slot for slot in held if slot not in kept]
        if gone:
            out[d["name"]] = _compact(gone)
    return out


def _vgpus_taken(diff: list[dict[str, Any]], moved: set[str]) -> list[str]:
    """`NODE/GPU: VM PROFILE` for every vGPU a node keeps but a VM loses (taking one is destructive); a VM
    `moved` off an evacuated host takes its vGPUs along and loses none."""
    out = []
    for d in diff:
        if d["kind"] != "node" or d["action"] != "modify":
            continue
        after = {g["index"]: list(g.get("vgpus") or ()) for g in d["after"].get("gpus") or ()}
        for gpu in d["before"].get("gpus") or ():
            left = after.get(gpu["index"], [])
            for vgpu in gpu.get("vgpus") or ():
                if vgpu in left:
                    left.remove(vgpu)
                elif vgpu["vm"] not in moved:
                    out.append(f"{d['name']}/{gpu['index']}: {vgpu['vm']} {vgpu['profile']}")
    return out


def effect_lines(data: dict[str, Any]) -> list[str]:
    """The plan's effects, each stopped job with the GPUs or slices it frees (a running job cancelled is evicted
    too: said once), and the vGPUs VMs lose."""
    freed = _freed(data["diff"])
    lines = []
    for key, names in data["effects"].items():
        if names:
            lines.append(f"  {key}: " + ", ".join(
                safe(n) + (f" (frees {safe(freed[n])})" if key == "evicted" and n in freed else "")
                for n in names))
    moved = {m["vm"] for moves in (data.get("evacuations") or {}).values() for m in moves if m["to"] is not None}
    taken = _vgpus_taken(data["diff"], moved)
    if taken:
        lines.append(f"  vGPUs taken from VMs: {', '.join(safe(t) for t in taken)}")
    return lines


def _move_line(move: dict[str, Any]) -> str:
    """One VM's planned move off an evacuated host: how, where to, which GPUs (or group), the stun estimate."""
    if move["to"] is None:
        return f"  ✗ {safe(move['vm'])}: nowhere to go (see the violations)"
    how = "vMotion" if move["how"] == "vmotion" else "power off, relocate, power on"
    held = (f"group {safe(move['device_group']['from'])} -> {safe(move['device_group']['to'])}"
            if move["device_group"] else
            ", ".join(f"GPU {g['from']} -> {g['to']}" for g in move["gpus"]) or "no GPU")
    if move["how"] != "vmotion":
        stun = "stun: none, the VM is powered off"
    elif move["stun_s"] is None:
        stun = "stun: unknown (no vMotion link speed)"
    else:
        stun = (f"stun ~{move['stun_s']:g} s ({move['framebuffer_gib']:g} GiB at {move['link_gbps']:g} Gbit/s, "
                f"{move['stun_confidence']})")
        if move["tolerated_stun_s"] is not None:
            stun += f", tolerates {move['tolerated_stun_s']:g} s"
    return f"  {safe(move['vm'])}: {how} to {safe(move['to'])} ({held}); {stun}"


def evacuation_lines(data: dict[str, Any]) -> list[str]:
    """Every evacuated host's VM moves, then the maintenance mode they lead to."""
    lines: list[str] = []
    for host, moves in (data.get("evacuations") or {}).items():
        lines.append(f"Evacuation of {safe(host)} ({len(moves)} VM(s)), then maintenance mode:")
        lines += [_move_line(m) for m in moves]
    return lines


def plan_heading(data: dict[str, Any]) -> list[str]:
    """The verdict, the hash and the violations: what a summarised review shows above its summary."""
    verdict = "ALLOWED" if data["allowed"] else "REFUSED"
    lines = [f"Plan against revision {data['base_revision']}: {verdict} "
             f"({len(data['changes'])} change(s), {len(data['violations'])} violation(s))",
             f"hash {data['hash'][:16]}"]
    if data["violations"]:
        lines.append("Violations:")
        lines += violation_lines(data["violations"])
    if data.get("warnings"):  # a plan saved before warnings existed has none
        lines.append("Warnings (allowed, but look twice):")
        lines += [f"  ! [{w['rule']}] {safe(w['target'])}: {safe(w['message'])}"
                  + (f"\n      hint: {safe(w['hint'])}" if w.get("hint") else "") for w in data["warnings"]]
    return lines


def cluster_step_lines(steps: Sequence[dict[str, Any]]) -> list[str]:
    """What `apply` will do on the bound cluster, change by change (`PlannedStep.to_json()`): the API calls of its
    executor, or why the change is gpuadmin's state only."""
    lines = ["On the cluster (apply executes these API calls, change by change; nothing for anyone to run):"]
    for step in steps:
        lines.append(f"  {safe(step['op'])} {safe(step['target'])}:")
        lines += textwrap.wrap(safe(step["calls"]), CALLS_WIDTH, initial_indent="      ",
                               subsequent_indent="      ", break_on_hyphens=False)
    return lines


def plan_text(data: dict[str, Any], on_cluster: Sequence[dict[str, Any]] | None = None) -> str:
    """The text form of `Plan.to_json()`; status is in words, never colour alone. `on_cluster`: on a state bound
    to a cluster, what apply will execute there (`cluster_step_lines`), shown instead of the node commands: nobody
    runs those by hand there."""
    lines = plan_heading(data) + evacuation_lines(data)  # the moves first: what the review is about
    if data["diff"]:
        lines.append("Diff:" if data["allowed"] else "Diff (refused: nothing is applied):")
        for d in data["diff"]:
            sign = {"add": "+", "remove": "-", "modify": "~"}[d["action"]]
            lines.append(f"  {sign} {d['kind']}/{safe(d['name'])}")
            if d["action"] != "modify" and d["kind"] in _SPEC_KINDS:
                lines += spec_lines(d["after"] or d["before"])
            if d["action"] == "modify":
                changed = field_changes(d["before"], d["after"])
                for path, old, new in changed:
                    lines.append(f"      {safe(path)}: {_show(old)} -> {_show(new)}")
                if not changed:  # a restore with `seq` that only moves it (FIFO order for jobs)
                    lines.append(f"      position: {d['seq']} -> {d.get('moved_to')} (same fields)")
    elif data["allowed"]:
        lines.append("No changes: the state already matches.")
    effects = effect_lines(data)
    if effects:
        lines.append("Effects:")
        lines += effects
    if on_cluster is not None:
        if on_cluster and data["allowed"]:
            lines += cluster_step_lines(on_cluster)
    elif data["commands"] and data["allowed"]:
        lines.append("Node commands:")
        for node, cmds in data["commands"].items():
            lines.append(f"  {safe(node)}:")
            lines += [f"    {safe(c)}" for c in cmds]
    return "\n".join(lines) + "\n"


def step_lines(steps: Sequence[Any]) -> list[str]:
    """Each step of a plan as carried out on a bound cluster (gpuadmin.cluster.execute.Step, duck-typed), one line
    each, as the CLI and the console show them: `executed   cordon node gpu-1  PATCH nodes/gpu-1  (node cordoned)`.
    The text holds the API server's words: the front end escapes it (`safe`) before it reaches a terminal."""
    return [step.line() for step in steps]
