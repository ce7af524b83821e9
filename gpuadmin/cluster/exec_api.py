"""The API calls the executors make (gpuadmin/cluster/execute.py), each one recorded as "VERB resource/name".

A thin layer over the lightkube client: objects go in and come out as plain dicts (what the API server sends), a
404 on a read is `None` (the executors read before they write, and "absent" is an answer), and every other refusal
is the typed error of `cluster.errors.api_failure` (403 → ClusterForbidden, 409 → ClusterConflict, ...). The record
of calls is what the journal keeps of a step: it names objects, never a body or a credential.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gpuadmin.cluster.errors import api_failure

Obj = dict[str, Any]
KindName = Literal["node", "pod", "configmap", "queue", "pvc", "job"]
PatchKind = Literal["merge", "strategic"]
FIELD_MANAGER = "gpuadmin"  # the manager server-side apply records for gpuadmin's fields
# KAI's Queue (a custom resource, cluster-scoped): the resource gpuadmin's queues are written as
KAI_QUEUE = ("scheduling.run.ai", "v2", "Queue", "queues")
WRITES = ("POST", "PATCH", "PUT", "APPLY", "DELETE")


def _resource(kind: KindName) -> Any:
    from lightkube.generic_resource import create_global_resource
    from lightkube.resources.batch_v1 import Job
    from lightkube.resources.core_v1 import ConfigMap, Node, PersistentVolumeClaim, Pod

    if kind == "queue":
        return create_global_resource(*KAI_QUEUE)
    return {"node": Node, "pod": Pod, "configmap": ConfigMap, "pvc": PersistentVolumeClaim, "job": Job}[kind]


PLURALS: dict[KindName, str] = {"node": "nodes", "pod": "pods", "configmap": "configmaps", "queue": "queues",
                                "pvc": "persistentvolumeclaims", "job": "jobs"}


def _as_dict(obj: Any) -> Obj:
    """A lightkube object as the API server sent it (its models drop the fields that are unset)."""
    result: Obj = obj if isinstance(obj, dict) else obj.to_dict()
    return result


@dataclass
class Api:
    """One executor's calls: `calls` lists them in order, `wrote` says whether one of them changed the cluster."""

    client: Any  # lightkube.Client
    calls: list[str] = field(default_factory=list)
    wrote: bool = False

    def _record(self, verb: str, kind: KindName, name: str, namespace: str | None, sub: str = "") -> str:
        where = f"{namespace}/{name}" if namespace else name
        call = f"{verb} {PLURALS[kind]}/{where}" + (f"/{sub}" if sub else "")
        self._note(call)
        return call

    def _note(self, call: str) -> None:
        """Add a call to the record; a wait's repeated reads are one entry with their count (`GET nodes/a ×12`)."""
        last = self.calls[-1] if self.calls else ""
        if last == call or last.startswith(call + " ×"):
            count = int(last.rsplit("×", 1)[1]) if "×" in last[len(call):] else 1
            self.calls[-1] = f"{call} ×{count + 1}"
        else:
            self.calls.append(call)

    def _wrote(self, verb: str) -> None:
        self.wrote = self.wrote or verb in WRITES

    def get(self, kind: KindName, name: str, namespace: str | None = None) -> Obj | None:
        call = self._record("GET", kind, name, namespace)
        from lightkube import ApiError

        try:
            return _as_dict(self.client.get(_resource(kind), name, namespace=namespace))
        except ApiError as exc:
            if getattr(exc.status, "code", None) == 404:
                return None
            raise api_failure(exc, call) from None
        except Exception as exc:
            raise api_failure(exc, call) from None

    def list(self, kind: KindName, *, namespace: str | None = None, fields: dict[str, str] | None = None,
             labels: dict[str, str] | None = None) -> list[Obj]:
        selector = ",".join(f"{k}={v}" for k, v in {**(fields or {}), **(labels or {})}.items())
        call = f"LIST {PLURALS[kind]}" + (f" in {namespace}" if namespace else "") + (f" ({selector})" if selector
                                                                                     else "")
        self._note(call)
        from lightkube import ALL_NS

        everywhere = ALL_NS if kind not in ("node", "queue") else None
        try:
            found = self.client.list(_resource(kind), namespace=namespace or everywhere, fields=fields, labels=labels)
            return [_as_dict(o) for o in found]
        except Exception as exc:
            raise api_failure(exc, call) from None

    def patch(self, kind: KindName, name: str, patch: Obj, *, namespace: str | None = None,
              how: PatchKind = "merge") -> Obj:
        from lightkube.types import PatchType

        call = self._record("PATCH", kind, name, namespace)
        patch_type = PatchType.MERGE if how == "merge" else PatchType.STRATEGIC
        return self._send(call, "PATCH", lambda: self.client.patch(_resource(kind), name, patch, namespace=namespace,
                                                                   patch_type=patch_type))

    def replace(self, kind: KindName, obj: Obj) -> Obj:
        from lightkube import codecs

        meta = obj["metadata"]
        call = self._record("PUT", kind, meta["name"], meta.get("namespace"))
        return self._send(call, "PUT", lambda: self.client.replace(codecs.from_dict(obj)))

    def create(self, kind: KindName, obj: Obj) -> Obj:
        from lightkube import codecs

        meta = obj["metadata"]
        call = self._record("POST", kind, meta["name"], meta.get("namespace"))
        return self._send(call, "POST", lambda: self.client.create(codecs.from_dict(obj)))

    def apply(self, kind: KindName, obj: Obj) -> Obj:
        """Server-side apply (`application/apply-patch+yaml`) as field manager `gpuadmin`, forcing ownership of the
        fields it names: gpuadmin's plan was checked, so it is the value to hold."""
        from lightkube import codecs

        meta = obj["metadata"]
        call = self._record("APPLY", kind, meta["name"], meta.get("namespace"))
        _resource(kind)  # a custom resource is known to the codec once created
        return self._send(call, "APPLY", lambda: self.client.apply(codecs.from_dict(obj), field_manager=FIELD_MANAGER,
                                                                   force=True))

    def delete(self, kind: KindName, name: str, namespace: str | None = None) -> bool:
        """Delete; False where the object was already gone (a 404)."""
        from lightkube import ApiError
        from lightkube.types import CascadeType

        call = self._record("DELETE", kind, name, namespace)
        try:  # what the object owns goes too, in the background, as kubectl deletes (a Job's pods)
            self.client.delete(_resource(kind), name, namespace=namespace, cascade=CascadeType.BACKGROUND)
        except ApiError as exc:
            if getattr(exc.status, "code", None) == 404:
                return False
            raise api_failure(exc, call) from None
        except Exception as exc:
            raise api_failure(exc, call) from None
        self._wrote("DELETE")
        return True

    def evict(self, name: str, namespace: str) -> None:
        """The Eviction API (what `kubectl drain` uses): the API server honours PodDisruptionBudgets (429)."""
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import Pod

        call = self._record("POST", "pod", name, namespace, "eviction")
        eviction = Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace))
        self._send(call, "POST", lambda: self.client.create(eviction, name=name, namespace=namespace))

    def bind(self, name: str, namespace: str, node: str) -> None:
        """The Binding subresource: what a scheduler posts to place a pod on a node."""
        from lightkube.models.core_v1 import ObjectReference
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import Pod

        call = self._record("POST", "pod", name, namespace, "binding")
        binding = Pod.Binding(metadata=ObjectMeta(name=name, namespace=namespace),
                              target=ObjectReference(apiVersion="v1", kind="Node", name=node))
        self._send(call, "POST", lambda: _accepted(lambda: self.client.create(binding, name=name, namespace=namespace)))

    def _send(self, call: str, verb: str, send: Any) -> Obj:
        try:
            answer = send()
        except Exception as exc:
            raise api_failure(exc, call) from None
        self._wrote(verb)
        return _as_dict(answer) if answer is not None else {}


def _accepted(post: Any) -> None:
    """POST a subresource whose success the API server answers with a `Status` (`{"status": "Success", "code":
    201}`), not the object posted, as kube-apiserver's Binding does: lightkube decodes the answer as the posted
    kind and fails on it — only after checking the HTTP status, so a decoding error here is a 2xx answer."""
    import msgspec

    try:
        post()
    except msgspec.ValidationError:
        return


def status_code(error: Exception) -> int | None:
    """The HTTP status a typed cluster error came from (429 for a PodDisruptionBudget), where it has one."""
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else None
