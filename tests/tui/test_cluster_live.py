"""The console on a state bound to a Kubernetes cluster (the API server double): the live badge and the context in
the header, an event on the cluster reaching the row within a second (synced as one journal entry, origin
`cluster`), and the badge following the watch when the server goes away and comes back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.service import Service
from gpuadmin.store import Store
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble
from tests.tui.tuikit import ROOT, cursor_row, errors, grid, header, make_app, notes, press, settle, static_text

SIZE = (120, 36)
WITHIN_S = 1.0  # issue 22: the console updates within 1 s of an event


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(bookmark_interval_s=0.2, mig_configs=objects.mig_parted_config_names()) as d:
        d.create(objects.node("gpu-a"))
        d.create(objects.node("gpu-b"))
        d.create(objects.kai_queue("research", gpu_quota=8))
        yield d


@pytest.fixture
def bound_state(double: ApiServerDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state made from the double by `gpuadmin init --from-cluster kubernetes`; the console finds the same
    kubeconfig through $KUBECONFIG, as an operator's would."""
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    state = tmp_path / "state"
    done = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "init", "--from-cluster",
                           "kubernetes", "--kubeconfig", str(kubeconfig)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return state


def cordon(double: ApiServerDouble, node: str) -> None:
    request = urllib.request.Request(f"{double.url}/api/v1/nodes/{node}", method="PATCH",
                                     data=json.dumps({"spec": {"unschedulable": True}}).encode(),
                                     headers={"Content-Type": "application/strategic-merge-patch+json"})
    with urllib.request.urlopen(request, timeout=5):
        pass


def state_of(app: GpuadminApp, name: str) -> str | None:
    table = grid(app)
    return next((str(table.rows[i]["STATE"]) for i in table.shown if table.rows[i]["NAME"] == name), None)


async def within(check: Callable[[], bool], limit: float) -> float:
    start = time.monotonic()
    while not check():
        elapsed = time.monotonic() - start
        assert elapsed < limit, f"not seen within {limit} s"
        await asyncio.sleep(0.02)
    return time.monotonic() - start


async def test_an_event_on_the_cluster_changes_the_row_within_a_second(double: ApiServerDouble,
                                                                       bound_state: Path) -> None:
    app = make_app(Service(state_dir=bound_state), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await within(lambda: " LIVE " in header(app), limit=5)
        assert "ctx double" in header(app)
        await settle(pilot)
        assert state_of(app, "gpu-a") == "ready"
        journal_before = len(Service(state_dir=bound_state).journal())

        cordon(double, "gpu-a")
        await within(lambda: state_of(app, "gpu-a") == "cordoned", limit=WITHIN_S)
        assert "gpu-a" in grid(app).changed  # marked, as after any apply
        assert not errors(app)
    entries = Service(state_dir=bound_state).journal()
    assert [e.origin for e in entries[journal_before:]] == ["cluster"]  # one sync, one entry


async def test_the_badge_follows_the_watch_down_and_back(double: ApiServerDouble, bound_state: Path) -> None:
    app = make_app(Service(state_dir=bound_state), view="nodes")
    port = int(double.url.rsplit(":", 1)[1])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await within(lambda: " LIVE " in header(app), limit=5)
        double.stop()
        await within(lambda: " RECONNECTING " in header(app) or " CLUSTER DOWN " in header(app), limit=5)
        double.start(port)
        await within(lambda: " LIVE " in header(app), limit=40)  # the backoff may have grown meanwhile
        cordon(double, "gpu-b")
        await within(lambda: state_of(app, "gpu-b") == "cordoned", limit=WITHIN_S + 1)
    assert not app.cluster_link._feed  # stopped with the console


async def test_a_state_of_files_has_no_badge(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert " LIVE " not in header(app) and "ctx " not in header(app) and "CONNECTING" not in header(app)


async def test_a_viewers_console_says_it_does_not_watch(double: ApiServerDouble, bound_state: Path) -> None:
    """A sync writes the state (an operator's work): a viewer's console does not watch, and says so."""
    app = make_app(Service(state_dir=bound_state, role="viewer"), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert " NOT WATCHED " in header(app) and "ctx double" in header(app)
        assert ("watch", "nodes") not in double.requests


async def test_a_hostile_context_name_is_shown_as_text(double: ApiServerDouble, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The context's name is the kubeconfig's (anyone's file): markup and escape bytes are drawn as text."""
    hostile = "[bold red]prod[/]\x1b[31m"
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig", context=hostile)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    state = tmp_path / "hostile-state"
    done = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "init", "--from-cluster",
                           "kubernetes", "--kubeconfig", str(kubeconfig)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    app = make_app(Service(state_dir=state), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await within(lambda: " LIVE " in header(app), limit=5)
        assert "ctx [bold red]prod[/]\\x1b[31m" in header(app)  # the markup as text, the escape byte spelt out


async def test_a_kubeconfig_that_does_not_read_says_down_naming_it(bound_state: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "moved-away"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    app = make_app(Service(state_dir=bound_state), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert " CLUSTER DOWN " in header(app) and state_of(app, "gpu-a") == "ready"  # the last state synced
        [error] = errors(app)
        assert str(missing) in error and "kubeconfig" in error


async def test_a_cordon_applied_in_the_console_is_executed_on_the_cluster(double: ApiServerDouble,
                                                                           bound_state: Path) -> None:
    """The console's plan review on a bound state goes through the same service: the cordon is carried out on the
    cluster (the Node is unschedulable), journaled `executed`, and the notification shows the step and its call."""
    app = make_app(Service(state_dir=bound_state), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = cursor_row(app)
        assert row is not None and row["NAME"] == "gpu-a"
        await press(pilot, "c")
        assert isinstance(app.screen, PlanReviewScreen)
        review = static_text(app, "#review")  # what apply will execute there, not commands for someone to run
        assert "On the cluster (apply executes these API calls" in review and "cordon node gpu-a:" in review
        assert "PATCH node spec.unschedulable" in review
        assert "Node commands" not in review and "kubectl" not in review
        await press(pilot, "y")
        await within(lambda: any("executed on the cluster" in text for _, _, text in notes(app)), limit=5)
        said = next(text for _, _, text in notes(app) if "executed on the cluster" in text)
        assert "cordon node gpu-a" in said and "PATCH nodes/gpu-a" in said
    node = double.get("nodes", "gpu-a")
    assert node is not None and node["spec"].get("unschedulable") is True
    with Store.open(bound_state) as store:
        assert any(e.outcome == "executed" for e in store.journal())


async def test_the_consoles_syncs_use_the_watchs_connection(double: ApiServerDouble, bound_state: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is synced through the connection the watch opened: connecting again per batch would re-read the
    kubeconfig and, on OKE, run its exec plugin every time."""
    import gpuadmin.service.cluster_sync as cluster_sync

    reconnects: list[str] = []
    connect_bound = cluster_sync.connect_bound

    def counted(*args: Any, **kwargs: Any) -> Any:
        reconnects.append("sync")
        return connect_bound(*args, **kwargs)

    monkeypatch.setattr(cluster_sync, "connect_bound", counted)
    app = make_app(Service(state_dir=bound_state), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await within(lambda: " LIVE " in header(app), limit=5)
        await settle(pilot)
        cordon(double, "gpu-a")
        await within(lambda: state_of(app, "gpu-a") == "cordoned", limit=WITHIN_S)
        cordon(double, "gpu-b")
        await within(lambda: state_of(app, "gpu-b") == "cordoned", limit=WITHIN_S)
        assert not errors(app)
    assert reconnects == []


async def test_the_console_brings_in_what_changed_and_syncs_in_full_after_a_relist(double: ApiServerDouble,
                                                                                   bound_state: Path) -> None:
    """Once the console has synced in full, a batch brings in only what changed (`sync_changes`, from the watch's
    cache: no list); when the watch lists again (a compaction: 410 Gone), the next sync is a full one again."""
    app = make_app(Service(state_dir=bound_state), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await within(lambda: " LIVE " in header(app), limit=5)
        await settle(pilot)
        cordon(double, "gpu-a")  # the full sync the feed starts with, or already an incremental one
        await within(lambda: state_of(app, "gpu-a") == "cordoned", limit=WITHIN_S)
        await settle(pilot)
        listed = len(double.requests)
        cordon(double, "gpu-b")
        await within(lambda: state_of(app, "gpu-b") == "cordoned", limit=WITHIN_S)
        await settle(pilot)
        assert [r for r in double.requests[listed:] if r[0] == "list"] == []  # the watch's cache, not a list
        with double.paused():  # the watch is sent nothing of this, then the history is compacted away: 410
            uncordon = urllib.request.Request(f"{double.url}/api/v1/nodes/gpu-a", method="PATCH",
                                              data=json.dumps({"spec": {"unschedulable": None}}).encode(),
                                              headers={"Content-Type": "application/merge-patch+json"})
            with urllib.request.urlopen(uncordon, timeout=5):
                pass
            double.compact()
        await within(lambda: state_of(app, "gpu-a") == "ready", limit=5)
        assert not errors(app)
    syncs = [e.message for e in Service(state_dir=bound_state).journal() if e.origin == "cluster"]
    assert syncs[-2].startswith("sync of the changes watched on cluster double")  # gpu-b: the changes alone
    assert syncs[-1].startswith("sync from cluster double")  # after the relist: in full
