"""Executors of the node ops: cordon, uncordon, repair-node, drain (gpuadmin/cluster/execute.py).

Cordoning is a patch of the Node's `spec.unschedulable` carrying the resourceVersion gpuadmin read at sync: a node
changed on the cluster since is a 409 (ClusterConflict, exit 3: sync and plan again), never overwritten. Draining is
what `kubectl drain --ignore-daemonsets` does: cordon, then the Eviction API for each pod on the node but those of a
DaemonSet (its controller would put them back at once) and mirror pods (the kubelet's static pods, which the API
cannot delete); a PodDisruptionBudget's 429 is retried with an exponential, capped backoff until the timeout. A pod
is never deleted directly: the Eviction API is what lets a budget protect it.
"""

from __future__ import annotations

from gpuadmin.cluster.errors import ClusterApiError
from gpuadmin.cluster.exec_api import Obj, status_code
from gpuadmin.cluster.exec_base import Context, Done, StepFailed
from gpuadmin.engine import changes as ch

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TOO_MANY_REQUESTS = 429
ENDED = ("Succeeded", "Failed")


def _read_node(context: Context, name: str) -> Obj:
    node = context.api.get("node", name)
    if node is None:
        raise StepFailed(f"node {name} is not on the cluster (`gpuadmin sync` to see it as it is)")
    return node


def set_unschedulable(context: Context, name: str, wanted: bool) -> Done:
    """Patch `spec.unschedulable`, carrying the resourceVersion known for the node (a 409 when it is stale)."""
    node = _read_node(context, name)
    if bool(node.get("spec", {}).get("unschedulable")) == wanted:
        context.saw("node", name, node)
        return Done("already", f"node {name} is already {'cordoned' if wanted else 'schedulable'}")
    version = context.versions.get(("node", name)) or node["metadata"].get("resourceVersion")
    patch: Obj = {"metadata": {"resourceVersion": version}, "spec": {"unschedulable": True if wanted else None}}
    context.saw("node", name, context.api.patch("node", name, patch, how="strategic"))
    return Done("executed", f"node {name} {'cordoned' if wanted else 'uncordoned'}")


def cordon(context: Context, change: ch.Cordon) -> Done:
    return set_unschedulable(context, change.node, True)


def uncordon(context: Context, change: ch.Uncordon) -> Done:
    return set_unschedulable(context, change.node, False)


def repair_node(context: Context, change: ch.RepairNode) -> Done:
    """The repaired node is made schedulable (or left cordoned); whether it is Ready is its kubelet's to say."""
    done = set_unschedulable(context, change.node, change.state == "cordoned")
    node = context.api.get("node", change.node) or {}
    ready: Obj = next((c for c in node.get("status", {}).get("conditions", []) if c.get("type") == "Ready"),
                                 {})
    if ready.get("status") != "True":
        return Done(done.status, f"{done.message}; the node still reports Ready={ready.get('status', 'Unknown')} "
                                 f"({ready.get('reason', 'no reason given')}): its kubelet must recover")
    return done


def evictable(pod: Obj) -> bool:
    """What `kubectl drain --ignore-daemonsets` evicts: not a DaemonSet's pod, not a mirror pod, not one being
    deleted already."""
    meta = pod.get("metadata", {})
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}) or meta.get("deletionTimestamp"):
        return False
    return not any(o.get("kind") == "DaemonSet" and o.get("controller") for o in meta.get("ownerReferences") or [])


def pods_on(context: Context, node: str) -> list[Obj]:
    return [p for p in context.api.list("pod", fields={"spec.nodeName": node}) if evictable(p)]


def _pod_key(pod: Obj) -> tuple[str, str]:
    meta = pod["metadata"]
    return meta.get("namespace", "default"), meta["name"]


def evict_all(context: Context, pods: list[Obj], what: str) -> None:
    """Evict every pod, retrying a PodDisruptionBudget's 429 with an exponential backoff (capped) until the
    deadline; then StepFailed naming the pods left."""
    left = [_pod_key(p) for p in pods]
    delay = context.settings.backoff_initial_s
    while True:
        left = [key for key in left if not _evicted(context, key)]
        if not left:
            return
        if context.remaining() <= 0:
            names = ", ".join(f"{ns}/{name}" for ns, name in left)
            raise StepFailed(f"{what}: a PodDisruptionBudget still refuses evicting {names} at the timeout "
                             "(the pods left run on; raise --timeout, or scale the workload so its budget allows "
                             "one disruption)")
        context.sleep(min(delay, max(context.remaining(), 0.0)))
        delay = min(delay * 2, context.settings.backoff_cap_s)


def _evicted(context: Context, key: tuple[str, str]) -> bool:
    """True once the pod's eviction is accepted (or it is gone); False on a budget's 429."""
    namespace, name = key
    try:
        context.api.evict(name, namespace)
    except ClusterApiError as error:
        if status_code(error) == TOO_MANY_REQUESTS:
            return False
        if status_code(error) == 404:
            return True
        raise
    return True


def drain(context: Context, change: ch.Drain) -> Done:
    cordoned = set_unschedulable(context, change.node, True)
    context.held.append(ch.Cordon(op="cordon", node=change.node))  # an eviction refused below leaves it cordoned
    pods = pods_on(context, change.node)
    if not pods and cordoned.status == "already":
        return Done("already", f"node {change.node} is cordoned and runs no pod to evict")
    evict_all(context, pods, f"drain {change.node}")
    _wait_gone(context, change.node, pods)
    return Done("executed", f"node {change.node} cordoned; evicted {len(pods)} pod(s)")


def _wait_gone(context: Context, node: str, evicted: list[Obj]) -> None:
    """Wait for the evicted pods to end, as kubectl drain does: an eviction only starts a pod's graceful end."""
    wanted = {_pod_key(p) for p in evicted}
    while True:
        running = [p for p in context.api.list("pod", fields={"spec.nodeName": node})
                        if _pod_key(p) in wanted and p.get("status", {}).get("phase") not in ENDED]
        if not running:
            return
        if context.remaining() <= 0:
            names = ", ".join("/".join(_pod_key(p)) for p in running)
            raise StepFailed(f"drain {node}: evicted, but {names} had not ended at the timeout")
        context.sleep(min(context.settings.poll_interval_s, max(context.remaining(), 0.0)))
