"""How talking to a cluster fails, each with the exit code of the contract, and the one mapping from the client's
exceptions to them.

Whatever the API server says is hostile text like any other (the CLI and the console escape it when they show it); a
message never carries credentials: the client's request (with its Authorization header) is dropped, only the status
the server returned and the address we asked are kept.
"""

from __future__ import annotations

from gpuadmin.errors import ExitCode, GpuadminError

MESSAGE_LIMIT = 500  # characters of an API server's message kept: enough to read, not a page of hostile text


class ClusterError(GpuadminError):
    """Something the cluster (or the way to it) did, not gpuadmin's input."""

    exit_code = ExitCode.CONFLICT
    label = "cluster"
    # set by `execute` when the failure stopped a plan: each step of that plan as carried out (`Step.line()`), so
    # that the operator reads what the cluster now holds beside the error, on stderr and in the console alike
    steps: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        return [*super().lines(), *(f"gpuadmin:   {step}" for step in self.steps)]


class ClusterUnreachable(ClusterError):
    """No answer: refused connection, timeout, DNS, TLS verification failed (exit 3: try again, or check the
    kubeconfig's server)."""

    label = "cluster unreachable"


class ClusterForbidden(ClusterError):
    """The API server's RBAC refused the call (a 403, exit 4): docs/kubernetes.md lists the ClusterRole it needs."""

    exit_code = ExitCode.NOT_PERMITTED
    label = "not permitted by the cluster"


class LoginRefused(ClusterForbidden):
    """vCenter refused the login itself (its `InvalidLogin` fault: a wrong user or password, exit 4), not a call
    after it: the console asks for the password again on this one only."""


class ClusterConflict(ClusterError):
    """A 409: the object changed on the cluster since gpuadmin last read it (a stale plan, exit 3)."""

    label = "conflict"


class ClusterApiError(ClusterError):
    """Any other refusal of the API server (exit 3), with its status code and message."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def api_message(exc: Exception) -> tuple[int | None, str]:
    """The status code and the message a lightkube `ApiError` carries (the server's `metav1.Status`), shortened."""
    status = getattr(exc, "status", None)
    code = getattr(status, "code", None)
    message = str(getattr(status, "message", None) or exc)
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT] + "…"
    return (code if isinstance(code, int) else None), message


def api_failure(exc: Exception, doing: str) -> ClusterError:
    """The error to raise for `exc`, met while `doing` (\"patch node gpu-1\"). An exception that is neither an API
    refusal nor a transport failure is not ours to translate: the caller lets it through (it is a bug)."""
    from httpx2 import HTTPError, TransportError
    from lightkube import ApiError

    if isinstance(exc, ApiError):
        code, message = api_message(exc)
        if code == 403:
            return ClusterForbidden(f"{doing}: {message}")
        if code == 409:
            return ClusterConflict(f"{doing}: {message} (the object changed on the cluster since gpuadmin read it: "
                                   "`gpuadmin sync`, then plan again)")
        return ClusterApiError(f"{doing}: {code or 'error'} {message}", code)
    if isinstance(exc, TransportError | HTTPError):
        return ClusterUnreachable(f"{doing}: {type(exc).__name__}: {_without_request(exc)}")
    raise TypeError(f"not a cluster failure: {type(exc).__name__}") from exc


def _without_request(exc: Exception) -> str:
    """A transport error's text, which names the URL (never the headers); shortened like an API message."""
    text = str(exc) or "no answer"
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + "…"
