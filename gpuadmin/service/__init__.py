"""The one API both front ends call (`Service`), and what they may name of the layers below it.

The CLI and the console import only this package, `gpuadmin.render` and `gpuadmin.errors`
(tests/test_architecture.py holds them to it): what they need of the engine and the store — a change's type, a
plan, the registry of change ops, who the caller is, reading a document to validate it — is re-exported here.
"""

from __future__ import annotations

from gpuadmin.cluster.errors import LoginRefused
from gpuadmin.cluster.watch import Batch as ClusterBatch
from gpuadmin.cluster.watch import WatchStatus
from gpuadmin.engine.changes import Change
from gpuadmin.engine.ops import OPS, console_of
from gpuadmin.engine.planner import Plan
from gpuadmin.engine.scheduler import SchedulePlan
from gpuadmin.model import Inventory, Node
from gpuadmin.model.inventory import Orchestrator, Platform
from gpuadmin.model.telemetry import SourceStatus
from gpuadmin.service.caller import Caller, admin_reasons, check_action, resolve_caller, whoami
from gpuadmin.service.changes import planned_cluster_steps, read_saved_plan
from gpuadmin.service.cluster_live import ClusterFeed, ClusterLink, Feed, Unwatched, VcenterFeed
from gpuadmin.service.core import ServiceCore, check_state
from gpuadmin.service.documents import (
    HostFacts,
    ReadNodes,
    consumer_refused,
    default_state_dir,
    inventory_text,
    read_nodes,
    validate_document,
)
from gpuadmin.service.errors import Conflict, NotConfirmed, NotPermitted, Refused, Stale, TelemetryUnset
from gpuadmin.service.facade import Service
from gpuadmin.service.forms import named_mig_layouts
from gpuadmin.service.results import (
    ApplyResult,
    Confirmation,
    ExecutionOptions,
    Moved,
    ReadyPlan,
    Remedy,
    Reversal,
    SavedPlan,
    Table,
    confirmation,
)
from gpuadmin.store import load_model_file
from gpuadmin.store.roles import Role, RoleDecision
from gpuadmin.store.roles import lower as lower_role
from gpuadmin.store.shared import DB_NAME
from gpuadmin.telemetry.xid import Finding as HealthFinding

__all__ = [
    "DB_NAME", "OPS", "ApplyResult", "Caller", "Change",
    "ClusterBatch", "ClusterFeed", "ClusterLink",  # the live link of a state bound to a cluster (its watch)
    "Confirmation", "Conflict", "ExecutionOptions",
    "Feed",  # a running watch, of a Kubernetes cluster (ClusterFeed) or of a vCenter (VcenterFeed)
    "HealthFinding",  # a GPU the telemetry's XID/ECC readings flag, with its fence command (issue 23)
    "HostFacts", "Inventory",
    "LoginRefused",  # a vCenter that refused the login itself (a wrong password): the console asks again
    "Moved", "Node", "NotConfirmed", "NotPermitted", "Orchestrator", "Plan", "Platform", "ReadNodes", "ReadyPlan",
    "Refused",
    "Remedy",  # a pending job's checked remedy, planned (the console's `R`)
    "Reversal", "Role", "RoleDecision", "SavedPlan", "SchedulePlan", "Service", "ServiceCore",
    "SourceStatus",  # how the telemetry source answered (`top`, the listings' telemetry columns)
    "Stale", "Table",
    "TelemetryUnset",  # no Prometheus is set (the console's telemetry views say so, or show nothing)
    "Unwatched",  # why a bound cluster cannot be watched (no vCenter password)
    "VcenterFeed", "WatchStatus", "admin_reasons", "check_action", "check_state", "confirmation", "console_of",
    "consumer_refused", "default_state_dir", "inventory_text",
    "load_model_file",  # the located YAML reader, for the console's settings files
    "lower_role",
    "named_mig_layouts",
    "planned_cluster_steps",  # what apply executes on a bound state's cluster, change by change (a plan's review)
    "read_nodes", "read_saved_plan", "resolve_caller", "validate_document", "whoami",
]

# A state bound to a live cluster (issue 22): created from it, synced, compared (service/cluster_sync.py).
from gpuadmin.cluster.read import ReadSettings
from gpuadmin.service.cluster_sync import (
    ClusterDiff,
    InitFromCluster,
    PasswordNeeded,
    PasswordSource,
    SessionPasswords,
    SyncResult,
    init_from_cluster,
    init_from_vcenter,
    password_from,
)
from gpuadmin.store import ClusterBinding

__all__ += [
    "ClusterBinding",
    "ClusterDiff",
    "InitFromCluster",
    "PasswordNeeded",  # an apply on a vCenter without its password: the console asks for it
    "PasswordSource",
    "ReadSettings",
    "SessionPasswords",  # the console's typed vCenter passwords, in memory for its session
    "SyncResult",
    "init_from_cluster",
    "init_from_vcenter",
    "password_from",
]
