"""How a use case fails, each with its exit code: not permitted, a conflict or a stale plan, refused, not confirmed."""

from __future__ import annotations

from gpuadmin.engine.planner import Plan
from gpuadmin.errors import ExitCode, GpuadminError
from gpuadmin.render.plan import violation_lines


class NotPermitted(GpuadminError):
    """The role may not do this (exit 4)."""

    exit_code = ExitCode.NOT_PERMITTED
    label = "not permitted"


class Conflict(GpuadminError):
    """Stale plan or held lock (exit 3); the message names the holder or the revisions."""

    exit_code = ExitCode.CONFLICT
    label = "conflict"


class Stale(Conflict):
    """The plan was made on a state that has since moved under it (exit 3): plan again. A front end can
    re-plan and show it again; a held lock (plain `Conflict`) is a different matter."""


class Refused(GpuadminError):
    """The plan has violations (exit 1)."""

    exit_code = ExitCode.REFUSED
    label = "refused"

    def __init__(self, plan: Plan) -> None:
        super().__init__(f"plan refused: {len(plan.violations)} violation(s)")
        self.plan = plan

    def lines(self) -> list[str]:
        return ["gpuadmin: refused by the rules:", *violation_lines(self.plan.to_json()["violations"])]


class NotConfirmed(GpuadminError):
    """The operator did not give the confirmation a plan asks for (exit 130: nothing was done)."""

    exit_code = ExitCode.INTERRUPTED
    label = "not applied"



class TelemetryUnset(GpuadminError):
    """No Prometheus is set for the state (exit 2: a setting is missing); the message says how to set one."""

    exit_code = ExitCode.BAD_INPUT


class NvmlUnavailable(GpuadminError):
    """`metrics.source` is nvml and NVML cannot be used on this host: no nvidia-ml-py, no driver library, or a
    driver `nvmlInit` refuses (exit 2, as `gpuadmin import local` without a driver); the one line says which."""

    exit_code = ExitCode.BAD_INPUT


class TelemetryUnavailable(GpuadminError):
    """Prometheus did not answer (down, a timeout, an error) and there are no readings to show (exit 3, as an
    unreachable cluster)."""

    exit_code = ExitCode.CONFLICT
