"""The watch of a bound vCenter: the property collector's updates to the properties the read uses, in batches.

vSphere's way to follow an inventory is the property collector's update protocol (vSphere Web Services API,
`PropertyCollector.WaitForUpdatesEx`): a filter (`CreateFilter`) names the objects — here every HostSystem,
VirtualMachine and ClusterComputeResource, through a container view over the root folder, so objects created
later enter it and destroyed ones leave it — and the properties of each (`HOST_PATHS`, `VM_PATHS`: exactly what
`read_vcenter` reads). The first wait, with an empty version, returns every object as `enter`; each later wait,
given the version the previous one returned, returns only what changed since (`modify`, `enter`, `leave`), or
nothing once `maxWaitSeconds` passes. The collector is the watch's own (`CreatePropertyCollector`): its filter
and its waits touch no other client's, and `DestroyPropertyCollector` removes both at the end.

What a batch carries is only that something changed (the changed properties, by object); the console's sync then
reads the whole estate again through the watch's session (`ClusterLive.sync_watched`): a vCenter's GPU estate is
tens of hosts, so a full read per batch costs well under a second, and it keeps one translation of vCenter's data
(`vcenter_inventory.py`) rather than a second one built from property changes.

Like the Kubernetes watch (`gpuadmin.cluster.watch`, whose `Batch`, `WatchStatus`, `Backoff` and `Coalescer` it
shares) it runs on its own threads and calls back on them: changes are coalesced for `window_s` into one batch;
a failed wait (vCenter restarted, the network gone, the session expired) is retried after an exponential backoff
with a new login, a new collector and filter, and so a full read (the first wait's `enter` of everything);
`live`, `reconnecting`, `down` go to `on_status`. `stop()` asks vCenter to end the wait in progress
(`CancelWaitForUpdates`, from a thread of its own so that a vCenter that does not answer does not hold it up) and
returns once the watch's thread ended or `timeout_s` passed; a wait lasts `WAIT_S` at most in any case.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from gpuadmin.cluster.errors import ClusterError, ClusterForbidden
from gpuadmin.cluster.vcenter import HOST_PATHS, VM_PATHS, VcenterConnection, _pyvmomi
from gpuadmin.cluster.watch import (
    BATCH_WINDOW_S,
    DOWN_AFTER_FAILURES,
    Backoff,
    Batch,
    Change,
    Coalescer,
    WatchStatus,
)

# a wait returns after this long with nothing (then the next one starts): below pyVmomi's socket timeout for the
# session (`vcenter.CONNECT_TIMEOUT_S`, which is also its read timeout), so a quiet vCenter is not a failure
WAIT_S = 5
KINDS = {"HostSystem": "host", "VirtualMachine": "vm", "ClusterComputeResource": "cluster"}


class WaitFailed(Exception):
    """A login or a wait that failed and is tried again after the backoff; `refused`: retrying cannot help by
    itself (vCenter refused the login), so the watch says down at once."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.refused = refused


@dataclass
class VcenterWatch:
    """A bound vCenter's hosts, VMs and clusters followed through its property collector, on a thread; batches to
    `on_batch`, the watch's state to `on_status` (both called on the watch's threads). `connection` is the session
    it starts with (logged in by the caller, so a wrong password fails there); `login` makes a new one after a
    failure. `start()`, then `stop()`."""

    connection: VcenterConnection
    login: Callable[[], VcenterConnection]
    on_batch: Callable[[Batch], None]
    on_status: Callable[[WatchStatus], None] = lambda _status: None
    window_s: float = BATCH_WINDOW_S
    backoff: Backoff = field(default_factory=Backoff)
    wait_s: int = WAIT_S
    version: str = ""  # the last update set's: the next wait returns what changed since ("" : everything)
    waits: int = 0  # update sets received, the first one's included
    _threads: list[threading.Thread] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._stopping = threading.Event()
        self._coalescer = Coalescer(self.on_batch, self.window_s, self._stopping)
        self._status = WatchStatus("connecting")
        self._collector: Any = None  # the watch's own PropertyCollector while it has one

    @property
    def status(self) -> WatchStatus:
        return self._status

    def start(self) -> VcenterWatch:
        if self._threads:
            return self
        self._threads = [threading.Thread(target=self._coalescer.run, name="gpuadmin-vcenter-batches", daemon=True),
                         threading.Thread(target=self._run, name="gpuadmin-vcenter-watch", daemon=True)]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        """End the watch: the wait in progress is cancelled, a backoff's wait ends, a batch due is dropped; the
        session is logged out by the watch's thread as it ends."""
        self._stopping.set()
        self._coalescer.wake()
        collector = self._collector
        if collector is not None:
            threading.Thread(target=_cancel, args=(collector,), name="gpuadmin-vcenter-cancel", daemon=True).start()
        for thread in self._threads:
            thread.join(timeout_s)

    def _run(self) -> None:
        connection: VcenterConnection | None = self.connection
        try:
            while not self._stopping.is_set():
                try:
                    if connection is None:
                        connection = self.connection = self._login()
                    self._follow(connection)
                except WaitFailed as failure:
                    if connection is not None:
                        connection.close()
                    connection = None  # a new login, collector and filter: a full read again
                    self._retry_later(failure)
        finally:
            if connection is not None:
                connection.close()

    def _login(self) -> VcenterConnection:
        try:
            return self.login()
        except ClusterForbidden as refused:
            raise WaitFailed(str(refused), refused=True) from None
        except ClusterError as failed:
            raise WaitFailed(str(failed)) from None

    def _follow(self, connection: VcenterConnection) -> None:
        """One collector and filter on `connection`, waited on until the watch stops or a wait fails."""
        vim, vmodl = _pyvmomi()
        try:
            content = connection.service.RetrieveContent()
            collector = content.propertyCollector.CreatePropertyCollector()
            self._collector = collector
            view = content.viewManager.CreateContainerView(
                content.rootFolder, [vim.HostSystem, vim.VirtualMachine, vim.ClusterComputeResource], True)
            collector.CreateFilter(_filter_spec(view), partialUpdates=False)
            self.version = ""
            options = vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=self.wait_s)
            while not self._stopping.is_set():
                update = collector.WaitForUpdatesEx(self.version, options)
                if self._status.state != "live":
                    self._report(WatchStatus("live"))
                self.backoff.reset()  # vCenter answers: the next failure starts the backoff afresh
                if update is None:
                    continue  # maxWaitSeconds passed with nothing changed
                self.version = str(update.version)
                self.waits += 1
                changes = _changes(update)
                if changes:
                    self._coalescer.add(changes)
        except Exception as failed:  # not only OSError, HTTPException, MethodFault: pyVmomi raises
            # others on a reply it cannot read, and a watch thread ended by one would leave the badge LIVE for good
            if self._stopping.is_set():
                return  # the wait stop() cancelled (RequestCanceled); the logout ends the collector with the session
            raise WaitFailed(f"vCenter {connection.server}: {type(failed).__name__}: {_first_line(failed)}")\
                from None
        finally:
            self._collector = None
        with suppress(OSError, http.client.HTTPException, vmodl.MethodFault):
            collector.DestroyPropertyCollector()  # and its filter (DestroyPropertyFilter's work), before the logout

    def _retry_later(self, failure: WaitFailed) -> None:
        delay = self.backoff.next_delay()
        down = failure.refused or self.backoff.failures >= DOWN_AFTER_FAILURES
        self._report(WatchStatus("down" if down else "reconnecting", f"{failure.message}; retry in {delay:.1f} s"))
        self._stopping.wait(delay)

    def _report(self, status: WatchStatus) -> None:
        changed, self._status = status != self._status, status
        if changed and not self._stopping.is_set():
            self.on_status(status)


def _filter_spec(view: Any) -> Any:
    """Every host, VM and cluster in `view` (a container view: objects created later enter the filter), with the
    properties the read takes of each."""
    vim, vmodl = _pyvmomi()
    collector = vmodl.query.PropertyCollector
    return collector.FilterSpec(
        objectSet=[collector.ObjectSpec(obj=view, skip=True, selectSet=[
            collector.TraversalSpec(name="view", path="view", skip=False, type=vim.view.ContainerView)])],
        propSet=[collector.PropertySpec(type=vim.HostSystem, pathSet=HOST_PATHS),
                 collector.PropertySpec(type=vim.VirtualMachine, pathSet=VM_PATHS),
                 collector.PropertySpec(type=vim.ClusterComputeResource, pathSet=["name"])])


def _changes(update: Any) -> list[Change]:
    """An update set as changes, one per object: its kind and moId, and the properties that changed (None: the
    object left the filter, destroyed). vCenter's values are kept as they came: nothing here reads them, the
    sync that follows reads the estate afresh and checks what it takes."""
    changes: list[Change] = []
    for filter_update in update.filterSet or ():
        for object_update in filter_update.objectSet or ():
            obj = object_update.obj
            kind = KINDS.get(type(obj).__name__.rpartition(".")[2], "other")
            key = str(getattr(obj, "_moId", ""))
            if object_update.kind == "leave":
                changes.append(Change(kind, key, None))
            else:
                changes.append(Change(kind, key, {str(c.name): c.val for c in object_update.changeSet or ()}))
    return changes


def _cancel(collector: Any) -> None:
    """Ask vCenter to end the collector's wait now (it answers the wait with RequestCanceled)."""
    _, vmodl = _pyvmomi()
    with suppress(OSError, http.client.HTTPException, vmodl.MethodFault):
        collector.CancelWaitForUpdates()


def _first_line(failed: BaseException) -> str:
    text = getattr(failed, "msg", None) or str(failed) or "no answer"
    return str(text).strip().splitlines()[0][:200] if str(text).strip() else "no answer"


__all__ = ["KINDS", "WAIT_S", "VcenterWatch", "WaitFailed"]
