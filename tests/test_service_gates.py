"""One permission gate per use case: every public method of the service declares the use case it is
(`@use_case`), so none can be added that skips the gate; `apply` and `submit` judge their plan inside."""

from __future__ import annotations

import inspect

import pytest

from gpuadmin.service import Service

# Judged by what their plan does (its ops' roles and its diff), inside, before the lock.
JUDGE_THEIR_PLAN = {"apply", "submit"}
# Judged inside too: a sync writes the cluster's truth, with the role an apply needs (service/cluster_sync.py;
# sync_watched is the console's sync after its watch saw changes, service/cluster_live.py, and sync_changes its
# incremental one, service/cluster_changes.py).
JUDGED_INSIDE = {"sync", "sync_watched", "sync_changes"}
# Not use cases: creating a state (it resolves its own caller and gates `init`), parsing change items (pure),
# the revision number a live view polls, and closing the state this service opened.
NOT_USE_CASES = {"init", "build_changes", "revision", "refresh", "close"}


def _public_methods() -> list[str]:
    return [name for name, value in vars_of(Service).items()
            if not name.startswith("_") and inspect.isfunction(value)]


def vars_of(cls: type) -> dict[str, object]:
    out: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        out.update({k: (v.__func__ if isinstance(v, staticmethod) else v) for k, v in vars(klass).items()})
    return out


@pytest.mark.parametrize("name", _public_methods())
def test_every_public_method_is_a_gated_use_case(name: str) -> None:
    method = getattr(Service, name)
    if name in JUDGE_THEIR_PLAN | JUDGED_INSIDE | NOT_USE_CASES:
        assert not hasattr(method, "use_case"), f"{name} is listed as judged inside: drop it from the list"
        return
    assert getattr(method, "use_case", None) in ("read", "plan", "undo", "schedule", "configure"), \
        f"Service.{name} is not declared as a use case (@use_case in gpuadmin/service/caller.py)"


class _Refusing:
    def require(self, use_case: str) -> None:
        raise PermissionError(use_case)


def test_the_gate_runs_before_the_use_case() -> None:
    """A declared use case asks the caller first; refused, its body never runs."""
    from gpuadmin.service.caller import use_case

    ran: list[str] = []

    class Probe:
        caller = _Refusing()

        @use_case("read")
        def read(self) -> None:
            ran.append("read")

    with pytest.raises(PermissionError, match="read"):
        Probe().read()
    assert ran == []
