"""The NVML telemetry source (`metrics.source nvml`).

Its no-driver paths for real, as real processes: this machine has no NVIDIA driver, so the real nvidia-ml-py
finds no libnvidia-ml.so.1; a library of that name that is not NVML (a copy of the system's libz) loads and
lacks NVML's functions; and the package absent. Each is one line and exit 2, never a traceback. The reading
logic through an injected stand-in `nvml` module (the one seam, as tests/adapters/test_local.py's; the real
pynvml is the default), run against a real state: readings, MIG instances placed by start, processes, XID
events, hostile values and names, NVML errors per reading and per refresh. bench/device/nvml_probe.py runs the
real source on a real GPU.
"""

from __future__ import annotations

import ctypes.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpuadmin.engine.state import View
from gpuadmin.service import Service
from gpuadmin.telemetry.nvml import NvmlSource
from gpuadmin.telemetry.snapshot import Targets
from tests.cli.clikit import ROOT, gpuadmin, state_from

NODE = "gpu-h100-07"  # the OCI sample's MIG node: GPU 0 holds 2g.20gb@0, 1g.10gb@2, 1g.10gb@3, 3g.40gb@4
MIB = 1024 * 1024


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = state_from("oci-h100.yaml", tmp_path / "state")
    for key, value in (("metrics.source", "nvml"), ("metrics.local-node", NODE)):
        assert gpuadmin("--state", path, "config", "set", key, value).code == 0
    return path


# --------------------------------------------------------------------------- the no-driver paths, for real


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


def _one_line_exit_2(result: Any, *fragments: str) -> None:
    assert result.code == 2, result.err
    assert "Traceback" not in result.err and result.out == ""
    assert len(result.err.strip().splitlines()) == 1, result.err
    for fragment in fragments:
        assert fragment in result.err, result.err


def test_no_driver_with_the_real_bindings(state: Path) -> None:
    pytest.importorskip("pynvml")
    result = gpuadmin("--state", state, "top", env=_env())
    _one_line_exit_2(result, "gpuadmin: no NVIDIA driver found (NVML: NVML Shared Library Not Found)")


def test_a_library_that_is_not_nvml(state: Path, tmp_path: Path) -> None:
    """A libnvidia-ml.so.1 that loads (a real shared library, libz) but has no nvmlInit: pynvml's own error."""
    pytest.importorskip("pynvml")
    libz = ctypes.util.find_library("z")
    found = next((p for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib",
                              "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
                  if libz and (p := Path(d) / libz).exists()), None)
    if found is None:
        pytest.skip("no libz shared library to stand in for a broken libnvidia-ml.so.1")
    libs = tmp_path / "lib"
    libs.mkdir()
    shutil.copy(found, libs / "libnvidia-ml.so.1")
    result = gpuadmin("--state", state, "top", env=_env(LD_LIBRARY_PATH=str(libs)))
    _one_line_exit_2(result, "gpuadmin: no NVIDIA driver found (NVML: Function Not Found)")


def test_a_library_file_that_does_not_load(state: Path, tmp_path: Path) -> None:
    pytest.importorskip("pynvml")
    libs = tmp_path / "lib"
    libs.mkdir()
    (libs / "libnvidia-ml.so.1").write_bytes(b"\x7fELF not a library")
    result = gpuadmin("--state", state, "top", env=_env(LD_LIBRARY_PATH=str(libs)))
    _one_line_exit_2(result, "gpuadmin: no NVIDIA driver found (NVML: NVML Shared Library Not Found)")


def test_without_the_package(state: Path, tmp_path: Path) -> None:
    """`import pynvml` fails as it does where nvidia-ml-py is not installed (a module first on the path that
    raises the ImportError Python raises then)."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "pynvml.py").write_text("raise ModuleNotFoundError(\"No module named 'pynvml'\", name='pynvml')\n")
    result = gpuadmin("--state", state, "top", env=_env(PYTHONPATH=f"{shadow}{os.pathsep}{ROOT}"))
    _one_line_exit_2(result, "the nvidia-ml-py package is not installed", "pip install 'gpuadmin[nvml]'")


def test_the_device_probe_without_a_driver() -> None:
    """bench/device/nvml_probe.py (for a real GPU) says in one line that there is none here, exit 2."""
    pytest.importorskip("pynvml")
    proc = subprocess.run([sys.executable, "-m", "bench.device.nvml_probe", "--repeat", "1"], capture_output=True,
                          text=True, cwd=ROOT, env=_env(), timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "nvml_probe: no NVIDIA driver found (NVML: NVML Shared Library Not Found)\n"


def test_the_columns_and_json_without_a_driver(state: Path) -> None:
    """`get gpus -o wide` still lists (dashes, one line why on stderr, exit 0); `top -o json` exit 2."""
    pytest.importorskip("pynvml")
    wide = gpuadmin("--state", state, "get", "gpus", "-o", "wide", env=_env())
    assert wide.code == 0 and "nvml down since" in wide.err and "Traceback" not in wide.err
    assert wide.out.splitlines()[1].split()[-4:] == ["-"] * 4
    assert gpuadmin("--state", state, "top", "-o", "json", env=_env()).code == 2


def test_idle_history_is_refused_with_nvml(state: Path) -> None:
    service = Service(state_dir=state)
    with pytest.raises(Exception, match="keeps no history") as refused:
        service.utilisation_history()
    assert getattr(refused.value, "exit_code", None) == 2


def test_unknown_source_refused(state: Path) -> None:
    bad = gpuadmin("--state", state, "config", "set", "metrics.source", "dcgm")
    assert bad.code == 2 and "one of prometheus, nvml" in bad.err
    assert gpuadmin("--state", state, "config", "set", "metrics.local-node", "a b\x1b[31m").code == 2


# --------------------------------------------------------------------------- the reading logic, stand-in NVML


class FakeNVMLError(Exception):
    def __init__(self, value: int, text: str) -> None:
        super().__init__(text)
        self.value = value


NOT_SUPPORTED = FakeNVMLError(3, "Not Supported")
NOT_FOUND = FakeNVMLError(6, "Not Found")
TIMEOUT = FakeNVMLError(10, "Timeout")


def _entry(gpus: list[dict[str, Any]], h: Any) -> dict[str, Any]:
    """The described GPU of a handle (its index), or MIG device (GPU index, slot)."""
    return gpus[h[0]]["migs"][h[1]] if isinstance(h, tuple) else gpus[h]  # type: ignore[no-any-return]


def _uuid(h: Any) -> str:
    return f"MIG-{h[0]}-{h[1]}" if isinstance(h, tuple) else f"GPU-{h}"


def fake_nvml(gpus: list[dict[str, Any]], *, init_error: FakeNVMLError | None = None) -> Any:
    """A module-like object with the pynvml calls the source makes, over described GPUs. A GPU: `util`, `used`,
    `free` (MiB), `temp`, `mw`, `dbe` (volatile, aggregate), `retired`, `rows` (unc, failure), `procs`
    [(pid, bytes)], `xids` (pending events), `migs` [{start, used, free, procs}], and `fail` {call: error}."""
    calls: list[str] = []

    def gpu(h: Any) -> dict[str, Any]:
        return _entry(gpus, h[0] if isinstance(h, tuple) else h)

    def failing(name: str, h: Any) -> None:
        calls.append(name)
        error = gpu(h).get("fail", {}).get(name)
        if error is not None:
            raise error

    def call(name: str, value: Any) -> Any:
        def read(h: Any, *_args: Any) -> Any:
            failing(name, h)
            return value(h, *_args)
        return read

    def init() -> None:
        if init_error is not None:
            raise init_error

    def memory(h: Any) -> Any:
        failing("memory", h)
        d = _entry(gpus, h)
        return SimpleNamespace(used=d["used"] * MIB, free=d["free"] * MIB, total=(d["used"] + d["free"]) * MIB)

    def procs(h: Any) -> list[Any]:
        failing("procs", h)
        d = _entry(gpus, h)
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in d.get("procs", ())]

    def register(h: int, _kind: int, events: list[Any]) -> None:
        failing("events", h)
        events.append(h)

    return SimpleNamespace(
        calls=calls, NVMLError=FakeNVMLError, nvmlInit=init, nvmlShutdown=lambda: None,
        NVML_TEMPERATURE_GPU=0, NVML_VOLATILE_ECC=0, NVML_AGGREGATE_ECC=1, NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1,
        NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR=1, nvmlEventTypeXidCriticalError=8,
        nvmlDeviceGetCount=lambda: len(gpus), nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUUID=_uuid,
        nvmlDeviceGetUtilizationRates=call("util", lambda h: SimpleNamespace(gpu=gpu(h)["util"])),
        nvmlDeviceGetMemoryInfo=memory,
        nvmlDeviceGetTemperature=call("temp", lambda h, _s: gpu(h)["temp"]),
        nvmlDeviceGetPowerUsage=call("power", lambda h: gpu(h)["mw"]),
        nvmlDeviceGetTotalEccErrors=call("ecc", lambda h, _e, c: gpu(h)["dbe"][c]),
        nvmlDeviceGetRetiredPages=call("retired", lambda h, _c: [0x1000] * gpu(h)["retired"]),
        nvmlDeviceGetRemappedRows=call("rows", lambda h: (0, gpu(h)["rows"][0], 0, gpu(h)["rows"][1])),
        nvmlDeviceGetComputeRunningProcesses=procs,
        nvmlDeviceGetGraphicsRunningProcesses=call("graphics", lambda _h: []),
        nvmlSystemGetProcessName=lambda pid: f"pid{pid}".encode(),
        nvmlEventSetCreate=list, nvmlDeviceRegisterEvents=register, nvmlEventSetFree=lambda _e: None,
        **_mig_and_events(gpus),
    )


def _mig_and_events(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The stand-in's MIG calls (placement starts as described) and its XID event queue (`xids`, drained)."""

    def mig_handle(h: int, slot: int) -> tuple[int, int]:
        if slot >= len(gpus[h].get("migs", ())):
            raise NOT_FOUND
        return (h, slot)

    def gi_info(ref: tuple[int, int]) -> Any:
        return SimpleNamespace(placement=SimpleNamespace(start=gpus[ref[0]]["migs"][ref[1]]["start"]))

    def wait(events: list[Any], _ms: int) -> Any:
        pending = gpus[events[0]].setdefault("xids", [])
        if not pending:
            raise TIMEOUT
        return SimpleNamespace(eventData=pending.pop(0))

    return {"nvmlDeviceGetMigMode": lambda h: (1, 1) if gpus[h].get("migs") is not None else (0, 0),
            "nvmlDeviceGetMaxMigDeviceCount": lambda _h: 7, "nvmlDeviceGetMigDeviceHandleByIndex": mig_handle,
            "nvmlDeviceGetGpuInstanceId": lambda m: 10 + m[1],
            "nvmlDeviceGetGpuInstanceById": lambda h, gi: (h, gi - 10), "nvmlGpuInstanceGetInfo": gi_info,
            "nvmlEventSetWait_v2": wait}


def _gpu(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"util": 87, "used": 40_000, "free": 41_559, "temp": 61, "mw": 512_345, "dbe": (0, 2),
                            "retired": 0, "rows": (1, 0), "procs": [(4242, 30_000 * MIB)]}
    return base | over


# the OCI sample's gpu-h100-07: every GPU in MIG mode, the instances' starts by GPU
LAYOUT = ((0, 2, 3, 4), (0, 1, 2, 3, 4, 5, 6), (0, 4), (0, 4), (0,), (0, 2, 4, 6), (0, 2, 4, 6), (0, 4, 6))


def _eight(**first: Any) -> list[dict[str, Any]]:
    """NVML's view of gpu-h100-07 as the state has it: each instance's used MiB 1000 + 10 x GPU + start."""
    gpus = [_gpu(util=10 * i, migs=[{"start": s, "used": 1000 + 10 * i + s, "free": 9000,
                                     "procs": [(5000 + 10 * i + s, 512 * MIB)]} for s in starts])
            for i, starts in enumerate(LAYOUT)]
    gpus[0].update(first)
    return gpus


def _targets(state: Path) -> Targets:
    return Targets.from_view(View(Service(state_dir=state)._holding_state()))


def test_readings_placed_on_the_local_node(state: Path) -> None:
    names = {4242: "python", 5000: "train.py"}
    source = NvmlSource(NODE, nvml=fake_nvml(_eight()), process_name=names.get)
    snapshot = source.refresh(_targets(state))
    assert snapshot.status.state == "ok" and snapshot.status.source == "nvml" and snapshot.status.notes == ()
    assert {key[0] for key in snapshot.gpus} == {NODE} and len(snapshot.gpus) == 8
    one = snapshot.gpu(NODE, 3)
    assert one is not None and one.uuid == "GPU-3"
    assert snapshot.gpu(NODE, 0) is not None and [tuple(p) for p in snapshot.gpus[(NODE, 0)].processes or ()] == \
        [(4242, "python", 30_000.0)]
    assert (one.util.value, one.fb_used_mib.value, one.fb_free_mib.value, one.temp_c.value, one.power_w.value) == \
        (30.0, 40_000.0, 41_559.0, 61.0, 512.345)
    assert (one.ecc_dbe_volatile.value, one.ecc_dbe_aggregate.value, one.retired_pages_dbe.value,
            one.remapped_rows_uncorrectable.value, one.row_remap_failure.value) == (0.0, 2.0, 0.0, 1.0, 0.0)
    assert [tuple(p) for p in one.processes or ()] == [(4242, "python", 30_000.0)]
    assert one.xid.value is None and one.xid.reason is not None and "began watching" in one.xid.reason
    # MIG instances by NVML's placement start: each of the state's four, with its own memory and processes
    starts = sorted(key[2] for key in snapshot.instances if key[:2] == (NODE, 0))
    assert starts == [0, 2, 3, 4]
    mig = snapshot.instance(NODE, 0, 3)
    assert mig is not None and mig.fb_used_mib.value == 1003.0 and mig.profile == "1g.10gb"
    assert [tuple(p) for p in mig.processes or ()] == [(5003, "?", 512.0)]
    assert len(snapshot.instances) == sum(map(len, LAYOUT))
    assert mig.util.value is None and "no utilisation for a MIG instance" in (mig.util.reason or "")
    assert mig.temp_c.reason == "a figure of the whole GPU: see the GPU"


def test_xid_events_are_drained_and_kept(state: Path) -> None:
    gpus = _eight()
    source = NvmlSource(NODE, nvml=fake_nvml(gpus), process_name=lambda _pid: "x")
    targets = _targets(state)
    assert source.refresh(targets).gpus[(NODE, 5)].xid.value is None
    gpus[5]["xids"] = [13, 79]
    assert source.refresh(targets).gpus[(NODE, 5)].xid.value == 79.0
    assert source.refresh(targets).gpus[(NODE, 5)].xid.value == 79.0  # kept: the last seen, not "none now"
    gpus[6]["fail"] = {"events": NOT_SUPPORTED}
    fresh = NvmlSource(NODE, nvml=fake_nvml(gpus), process_name=lambda _pid: "x").refresh(targets)
    assert fresh.gpus[(NODE, 6)].xid.reason == "NVML gives no XID events here: Not Supported"


def test_errors_and_hostile_values_are_reasons_never_numbers(state: Path) -> None:
    gpus = _eight(temp=math.nan, mw=-5, dbe=(2**64, 0),
                  fail={"rows": NOT_SUPPORTED, "util": FakeNVMLError(15, "GPU is lost")})
    gpus[2]["util"] = True  # a bool is no percentage
    gpus[3]["procs"] = [(-1, 5), (0, 5), (77, None), (78, 10 * MIB)]
    gpus[0]["fail"] |= {"procs": FakeNVMLError(4, "Insufficient Permissions"), "graphics": NOT_SUPPORTED}
    gpus[4]["procs"] = []
    source = NvmlSource(NODE, nvml=fake_nvml(gpus),
                        process_name=lambda pid: "\x1b[31mevil\x1b[0m" if pid == 78 else None)
    snapshot = source.refresh(_targets(state))
    bad = snapshot.gpus[(NODE, 0)]
    assert bad.util.reason == "NVML: GPU is lost"
    assert bad.temp_c.value is None and "out of range" in (bad.temp_c.reason or "")
    assert bad.power_w.value is None and bad.ecc_dbe_volatile.value is None
    assert bad.remapped_rows_uncorrectable.reason == "NVML: not supported on this GPU (no row remapping before Ampere)"
    assert snapshot.gpus[(NODE, 2)].util.reason == "NVML returned bool, not a number"
    assert snapshot.gpus[(NODE, 0)].processes is None  # neither list could be read: unknown, not "none"
    assert snapshot.gpus[(NODE, 4)].processes == ()  # both read, empty
    assert [tuple(p) for p in snapshot.gpus[(NODE, 3)].processes or ()] == [(77, "?", None),
                                                                             (78, "\x1b[31mevil\x1b[0m", 10.0)]


def test_a_gpu_the_state_lacks_and_one_nvml_lacks(state: Path) -> None:
    gpus = [*_eight(), _gpu()]  # NVML lists 9: GPU 8 the state does not have
    del gpus[0]["migs"][1]  # the instance at start 2 is not in NVML's list
    del gpus[7]["migs"]  # MIG off where the state has it on
    gpus[2]["migs"].append({"start": 2, "used": 1, "free": 1})  # an instance the state does not have
    snapshot = NvmlSource(NODE, nvml=fake_nvml(gpus), process_name=lambda _p: "x").refresh(_targets(state))
    assert snapshot.status.notes == ("GPU 2: NVML's MIG instance at start 2 is not in the state",
                                     "GPU 7: the state has it in MIG mode; NVML says MIG is off",
                                     f"NVML GPU 8: the state has no GPU {NODE}/8")
    assert snapshot.gpus[(NODE, 7)].util.value == 70.0
    missing = snapshot.instance(NODE, 0, 2)
    assert missing is not None and missing.fb_used_mib.reason == "NVML lists no MIG instance at start 2 on GPU 0"
    few = NvmlSource(NODE, nvml=fake_nvml(_eight()[:6]), process_name=lambda _p: "x").refresh(_targets(state))
    assert few.gpus[(NODE, 7)].util.reason == "NVML lists 6 GPUs on this host: no GPU 7"


def test_a_node_the_state_does_not_have(state: Path) -> None:
    snapshot = NvmlSource("laptop", nvml=fake_nvml(_eight())).refresh(_targets(state))
    assert snapshot.gpus == {} and snapshot.status.notes[0].startswith("the state has no node 'laptop' with GPUs")


def test_init_failure_backs_off_then_recovers(state: Path) -> None:
    now = [1000.0]
    nvml = fake_nvml(_eight(), init_error=FakeNVMLError(9, "Driver Not Loaded"))
    source = NvmlSource(NODE, nvml=nvml, clock=lambda: now[0], process_name=lambda _p: "x")
    targets = _targets(state)
    down = source.refresh(targets)
    assert down.status.state == "down" and down.gpus == {}
    assert source.unavailable == "no NVIDIA driver found (NVML: Driver Not Loaded)"
    assert down.status.retry_at == 1005.0
    nvml.nvmlInit = lambda: None
    assert source.refresh(targets).status.state == "down"  # before retry_at: nothing asked
    now[0] = 1006.0
    assert source.refresh(targets).status.state == "ok" and source.unavailable is None


def test_a_failed_device_count_is_down_with_the_last_readings(state: Path) -> None:
    nvml = fake_nvml(_eight())
    source = NvmlSource(NODE, nvml=nvml, process_name=lambda _p: "x")
    targets = _targets(state)
    first = source.refresh(targets)

    def lost() -> int:
        raise FakeNVMLError(999, "Unknown Error")

    nvml.nvmlDeviceGetCount = lost
    held = source.refresh(targets)
    assert held.status.state == "down" and held.status.message == "NVML: Unknown Error"
    assert held.gpus == first.gpus and source.unavailable is None


@pytest.fixture
def hostile_process(tmp_path: Path) -> Iterator[int]:
    """A real process whose name (what psutil reads from /proc) is a terminal escape: `sleep` run through a link
    named so (the kernel names a process after the file it executed)."""
    link = tmp_path / "\x1b[2Jevil"
    link.symlink_to(shutil.which("sleep") or "/bin/sleep")
    proc = subprocess.Popen([str(link), "120"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_top_shows_processes_escaped(state: Path, hostile_process: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`top` with the stand-in NVML listing a real process (its name read by psutil): PROCS in -o wide, escaped
    in the table; the processes in JSON; `source: nvml`."""
    import gpuadmin.telemetry.nvml as module

    pid = hostile_process
    gpus = _eight()
    gpus[1]["procs"] = [(pid, 1024 * MIB)]
    monkeypatch.setattr(module, "load_nvml", lambda: fake_nvml(gpus))
    result = Service(state_dir=state).top("util")
    rows = {row["NAME"]: row for row in result.rows}
    assert result.snapshot.status.source == "nvml"
    assert rows[f"{NODE}/1"]["PROCS"] == f"{pid} \x1b[2Jevil (1024 MiB)"
    assert rows[f"{NODE}/1"]["PROCESSES"] == [{"pid": pid, "name": "\x1b[2Jevil", "used_mib": 1024.0}]
    assert rows[f"{NODE}/0/1g.10gb@2"]["PROCS"].startswith("5002 ")
    assert rows[f"{NODE}/1/1g.10gb@6"]["PROCS"].startswith("5016 ")
    # the CLI in a real process, the stand-in injected as the bindings: the table escapes the name
    code = ("import gpuadmin.telemetry.nvml as m\n"
            "from tests.telemetry.test_nvml import fake_nvml, _eight, MIB\n"
            f"g = _eight(); g[1]['procs'] = [({pid}, 1024 * MIB)]\n"
            "m.load_nvml = lambda: fake_nvml(g)\n"
            "from gpuadmin.cli.main import main\n"
            "main()\n")
    for output in ("wide", "json"):
        proc = subprocess.run([sys.executable, "-c", code, "--state", str(state), "top", "-o", output],
                              capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout
        if output == "json":
            items = {i["name"]: i for i in json.loads(proc.stdout)["items"]}
            assert items[f"{NODE}/1"]["processes"] == [{"pid": pid, "name": "\x1b[2Jevil", "used_mib": 1024.0}]
            assert json.loads(proc.stdout)["source"]["source"] == "nvml"
        else:
            assert proc.stdout.splitlines()[0].split()[-1] == "PROCS" and f"{pid} " in proc.stdout


def test_the_device_probe_reads_and_times(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """bench/device/nvml_probe.py's whole path before a real GPU runs it: `import local`'s reader and the source
    over one stand-in (tests/adapters/test_local.py's NVML calls for the import, this module's for the readings:
    an H100 with the all-balanced MIG layout, and a whole one), every reading printed, the timings and ratio."""
    import bench.device.nvml_probe as probe
    from tests.adapters.test_local import H100_BALANCED, _h100
    from tests.adapters.test_local import fake_nvml as import_fake

    migs = [m | {"used": 100, "free": m["mib"] - 100, "procs": [(9000 + m["start"], 64 * MIB)]}
            for m in H100_BALANCED]
    gpus = [_h100(0, migs) | _gpu(util=0, xids=[79]), _h100(1) | _gpu()]
    reading, importing = fake_nvml(gpus), import_fake(gpus)
    for name in ("nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetGpuInstanceById", "nvmlGpuInstanceGetInfo"):
        setattr(reading, name, getattr(importing, name))  # the import's MIG calls (profile ids, real GI ids)
    merged = SimpleNamespace(**(vars(importing) | vars(reading)))
    merged.NVMLError = Exception  # each stand-in raises its own error class
    monkeypatch.setattr(probe, "load_nvml", lambda: merged)
    monkeypatch.setattr(sys, "argv", ["nvml_probe", "--repeat", "3"])
    assert probe.main() == 0
    out = capsys.readouterr().out
    assert "2 GPU(s) (H100-SXM5-80GB), 4 MIG instance(s)" in out
    assert re.search(r"/0/mig@4  3g\.40gb  MIG-0-\d\n(.*\n){11}    processes +9004 \S+ \(64 MiB\)\n", out), out
    assert re.search(r"/0 +GPU-0\n(.*\n){5}    xid +79\n", out), out
    assert "    power_w                      512.345" in out
    assert "no utilisation for a MIG instance" in out
    assert out.splitlines()[-1].startswith("timings: first refresh ") and "ratio" in out.splitlines()[-1]


def test_top_says_why_it_is_empty_when_this_host_is_not_a_node(state: Path) -> None:
    """On a real H200 (a machine named `vm`, the state the OCI sample) `top` printed only its header while
    `-o json` held the reason: the source's notes go to stderr in text, to the console's status line in `:top`."""
    assert gpuadmin("--state", state, "config", "set", "metrics.local-node", "laptop").code == 0
    code = ("import gpuadmin.telemetry.nvml as m\n"
            "from tests.telemetry.test_nvml import fake_nvml, _eight\n"
            "m.load_nvml = lambda: fake_nvml(_eight())\n"
            "from gpuadmin.cli.main import main\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code, "--state", str(state), "top"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == []  # the header alone
    assert ("gpuadmin: note: the state has no node 'laptop' with GPUs: set metrics.local-node to the state's name "
            "for this host") in proc.stderr
    assert "gpuadmin: note: NVML GPU 0: the state has no GPU laptop/0" in proc.stderr
    assert "gpuadmin: note: 4 more (-o json lists them all)" in proc.stderr  # 1 + 8 notes: five shown


async def test_the_console_top_says_why_it_is_empty(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuadmin.telemetry.nvml as module
    from gpuadmin.tui.screens.telemetry import TopScreen
    from tests.tui.tuikit import grid, make_app, screen_text, settle, wait_for

    assert gpuadmin("--state", state, "config", "set", "metrics.local-node", "laptop").code == 0
    monkeypatch.setattr(module, "load_nvml", lambda: fake_nvml(_eight()))
    app = make_app(Service(state_dir=state), view="top")
    async with app.run_test(size=(200, 24)) as pilot:
        await wait_for(pilot, lambda: app.metrics.status is not None)
        await settle(pilot)
        assert isinstance(app.screen, TopScreen) and grid(app).rows == []
        assert "the state has no node 'laptop' with GPUs" in screen_text(app)


async def test_the_console_top_shows_each_gpus_processes_wide(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvitop's question in the console: `:top` on the NVML source, Ctrl+W, a GPU's processes (pid, name, MiB) on
    its row, as `top -o wide` prints them."""
    import gpuadmin.telemetry.nvml as module
    from tests.tui.tuikit import grid, make_app, press, screen_text, settle, wait_for

    gpus = _eight()
    gpus[1]["procs"] = [(4242, 2048 * MIB), (4300, 512 * MIB)]
    monkeypatch.setattr(module, "load_nvml", lambda: fake_nvml(gpus))
    app = make_app(Service(state_dir=state), view="top")
    async with app.run_test(size=(240, 40)) as pilot:
        await wait_for(pilot, lambda: app.metrics.status is not None and bool(grid(app).rows))
        await press(pilot, "ctrl+w")
        await settle(pilot)
        row = next(r for r in grid(app).rows if r["NAME"] == f"{NODE}/1")
        assert row["PROCS"].startswith("4242 ") and "(2048 MiB)" in row["PROCS"] and "4300 " in row["PROCS"]
        header = next(line for line in screen_text(app).splitlines() if "NAME" in line)
        assert "PROCS" in header, header


def test_a_fatal_xid_read_by_nvml_flags_the_gpu_as_prometheus_readings_do(state: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The NVML source's snapshot is judged as the Prometheus source's is: an XID 79 NVML raises makes a health
    finding with its fence command, and the GPU's HEALTH is not `ok` (it read `ok` before the snapshot was judged)."""
    import gpuadmin.telemetry.nvml as module

    gpus = _eight()
    gpus[3]["xids"] = [79]
    monkeypatch.setattr(module, "load_nvml", lambda: fake_nvml(gpus))
    result = Service(state_dir=state).top("errors")
    assert [(f.node, f.gpu) for f in result.health] == [(NODE, 3)]
    rows = {row["NAME"]: row for row in result.rows}
    assert rows[f"{NODE}/3"]["HEALTH"] != "ok" and rows[f"{NODE}/2"]["HEALTH"] == "ok"
