"""`Service`: the one API both front ends call, made of the use cases (changes, queries, forms, import/export).

A `Service` works either on a state directory (SQLite, journaled, locked) or on an inventory file in memory
(`--inventory`: what-if runs; nothing is persisted). Its caller is resolved once (`service.caller`); each
public method is a use case gated there before any lock is taken or anything is written.
"""

from __future__ import annotations

from gpuadmin.service.changes import ChangeUseCases
from gpuadmin.service.cluster_live import ClusterLive
from gpuadmin.service.cluster_sync import ClusterUseCases
from gpuadmin.service.forms import FormQueries
from gpuadmin.service.queries import Queries
from gpuadmin.service.telemetry_console import ConsoleTelemetry
from gpuadmin.service.transfer import Transfer


class Service(ChangeUseCases, Queries, FormQueries, Transfer, ClusterLive, ClusterUseCases, ConsoleTelemetry):
    """load, get, describe, plan, apply, undo, schedule, explain, watch, import, export, sync and diff with a live
    cluster and its watch, config and top (telemetry), and the console's telemetry reads: see each use case."""
