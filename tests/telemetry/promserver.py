"""A real Prometheus for the tests, the demo (`make demo-metrics`) and the bench: Debian's /usr/bin/prometheus on
127.0.0.1 (a free port, a temporary data directory), its TSDB backfilled with `promtool tsdb
create-blocks-from openmetrics` from series written in the DCGM exporter's exact metric names and labels.

The labels are in the order and spelling of dcgm-exporter's own template (`internal/pkg/rendermetrics`, see
fixtures/README.md): gpu, UUID, pci_bus_id, device, modelName, GPU_I_PROFILE and GPU_I_ID on a MIG instance,
Hostname, then container, namespace and pod. Prometheus adds nothing: a backfilled block has no `job` or
`instance` label, as a scrape would add (the queries aggregate them away anyway).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
# Alerting rules about GPUs the tests' and the demo's Prometheus evaluate (written for gpuadmin: see the file)
GPU_RULES = Path(__file__).parent / "fixtures" / "gpu-alerts.rules.yml"


def available() -> str | None:
    """None where a real Prometheus can run here, else why not (the tests skip with it)."""
    missing = [p for p in (PROMETHEUS, PROMTOOL) if not Path(p).is_file()]
    if missing:
        return f"needs Debian's prometheus package ({', '.join(missing)} missing; `make system-deps` installs it)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Device:
    """One GPU (or MIG instance) as the exporter labels it; `values` gives each metric's value at a time
    (None: no sample then, e.g. after the exporter stopped)."""

    hostname: str
    gpu: int | str
    uuid: str
    model_name: str = "NVIDIA H100 80GB HBM3"
    gi_profile: str | None = None
    gi_id: str | None = None
    pod: str = ""
    namespace: str = ""
    container: str = ""
    values: dict[str, Callable[[float], float | str | None]] = field(default_factory=dict)

    def labels(self) -> str:
        bus = int(self.gpu) if str(self.gpu).isdigit() else 0
        parts = [("gpu", str(self.gpu)), ("UUID", self.uuid), ("pci_bus_id", f"00000000:{0x18 + bus:02X}:00.0"),
                 ("device", f"nvidia{self.gpu}"), ("modelName", self.model_name)]
        if self.gi_profile is not None:
            parts += [("GPU_I_PROFILE", self.gi_profile), ("GPU_I_ID", self.gi_id or "0")]
        parts += [("Hostname", self.hostname), ("container", self.container), ("namespace", self.namespace),
                  ("pod", self.pod)]
        return ",".join(f'{k}="{escape(v)}"' for k, v in parts)


def escape(value: str) -> str:
    """A label value as the OpenMetrics text format writes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def openmetrics(devices: list[Device], start: float, end: float, step: float) -> str:
    """The devices' series from `start` to `end` every `step` seconds, one metric family at a time (as
    promtool wants them), ending with `# EOF`."""
    families: dict[str, list[Device]] = {}
    for device in devices:
        for metric in device.values:
            families.setdefault(metric, []).append(device)
    lines: list[str] = []
    times = [start + i * step for i in range(int((end - start) // step) + 1)]
    for metric, holders in families.items():
        lines.append(f"# TYPE {metric} gauge")
        for device in holders:
            labels = device.labels()
            value_at = device.values[metric]
            for at in times:
                value = value_at(at)
                if value is not None:
                    lines.append(f"{metric}{{{labels}}} {value} {at:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


class Prometheus:
    """A running Prometheus: `url`, `stop()` (SIGTERM, waited for), `kill()` (SIGKILL: the server simply gone)."""

    def __init__(self, data_dir: Path, port: int | None = None, scrape: str | None = None,
                 rules: Path | None = None) -> None:
        """`scrape`: a `host:port` whose /metrics it scrapes every second (a recorded exporter's output);
        `rules`: a rule file it evaluates every second (its alerts become `ALERTS` series, as on a real one)."""
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = data_dir.parent / "prometheus.yml"
        # scrapes nothing unless told: the backfilled blocks are the data
        text = f"global:\n  scrape_interval: {'1s' if scrape is not None else '1h'}\n"
        if rules is not None:
            text += f"  evaluation_interval: 1s\nrule_files:\n  - {json.dumps(str(rules))}\n"
            # the backfilled blocks run past now, so the head refuses a sample at now as "out of bounds" (the
            # rules' ALERTS series) unless it takes samples out of order
            text += "storage:\n  tsdb:\n    out_of_order_time_window: 1d\n"
        if scrape is not None:
            text += ("scrape_configs:\n  - job_name: dcgm-exporter\n"
                     f"    static_configs:\n      - targets: ['{scrape}']\n")
        config.write_text(text, encoding="utf-8")
        self.log = data_dir.parent / "prometheus.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d",
                 "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()
        if rules is not None:
            self._wait_evaluated()

    def _wait_evaluated(self, timeout: float = 30.0) -> None:
        """Until every rule group has been evaluated and each active alert (pending or firing) is queryable as
        an `ALERTS` series (they show a second or two after the evaluation that raised them)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{self.url}/api/v1/rules", timeout=5) as answer:
                groups = json.loads(answer.read())["data"]["groups"]
            if groups and not any(g["lastEvaluation"].startswith("0001-") for g in groups):
                with urllib.request.urlopen(f"{self.url}/api/v1/alerts", timeout=5) as answer:
                    active = len(json.loads(answer.read())["data"]["alerts"])
                if len(self.query("ALERTS")) >= active:
                    return
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"prometheus did not evaluate its rules within {timeout:g}s")

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer:
                if answer.status == 200:
                    return
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"prometheus not ready within {timeout:g}s")

    def query(self, promql: str) -> list[dict[str, object]]:
        body = urllib.parse.urlencode({"query": promql}).encode()
        with urllib.request.urlopen(f"{self.url}/api/v1/query", data=body, timeout=10) as answer:
            result: list[dict[str, object]] = json.loads(answer.read())["data"]["result"]
            return result

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)


def backfill(text: str, data_dir: Path) -> None:
    """Write the OpenMetrics `text` into TSDB blocks under `data_dir` with promtool."""
    data_dir.mkdir(parents=True, exist_ok=True)
    source = data_dir.parent / "series.om"
    source.write_text(text, encoding="utf-8")
    result = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data_dir)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"promtool failed: {result.stderr[-2000:]}")
    source.unlink()


@contextlib.contextmanager
def running(text: str, workdir: Path | None = None, port: int | None = None,
            rules: Path | None = None) -> Iterator[Prometheus]:
    """A Prometheus holding the series of `text` (evaluating `rules`), stopped on exit (its temporary folder
    removed)."""
    with contextlib.ExitStack() as stack:
        base = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpuadmin-prom-")))
        backfill(text, base / "data")
        server = Prometheus(base / "data", port, rules=rules)
        stack.callback(server.stop)
        yield server

