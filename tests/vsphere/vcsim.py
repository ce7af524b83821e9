"""Build and start VMware's vCenter simulator with gpuadmin's GPU seeding (tests/vsphere/vcsim/main.go).

The simulator is govmomi's `simulator.VPX()` (real VMware code), built offline from Debian's packages
(golang-go, golang-github-vmware-govmomi-dev, golang-gopkg-yaml.v3-dev: `make system-deps` installs them) with
GO111MODULE=off and GOPATH at /usr/share/gocode. The binary is cached in `.build/` (ignored), rebuilt when the
program's source changes. Where it cannot be built, `why_not()` says why and the tests skip with that reason.

    python -m tests.vsphere.vcsim --build        # build (make test does), exit 0 even where it cannot: says why
    python -m tests.vsphere.vcsim --port 18443   # serve the seeded estate until Ctrl-C (make demo-vcenter)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).resolve().parent / "vcsim"  # main.go and devicegroups.go: the cache key hashes every .go
SEED = Path(__file__).resolve().parent / "seed.yaml"
CACHE = ROOT / ".build" / "vcsim"
GOPATH = Path("/usr/share/gocode")
NEEDED = {  # what the build imports, and the Debian package that brings it
    GOPATH / "src/github.com/vmware/govmomi/simulator": "golang-github-vmware-govmomi-dev",
    GOPATH / "src/gopkg.in/yaml.v3": "golang-gopkg-yaml.v3-dev",
}
USER = "administrator@vsphere.local"
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Simulator:
    url: str  # https://127.0.0.1:PORT/sdk
    user: str
    password: str

    @property
    def server(self) -> str:
        return self.url.removesuffix("/sdk")


def _binary() -> Path:
    digest = hashlib.sha256(b"".join(source.read_bytes() for source in sorted(SOURCE.glob("*.go")))).hexdigest()[:16]
    return CACHE / f"vcsim-gpu-{digest}"


def why_not() -> str | None:
    """Why the simulator cannot be built here, or None."""
    if _binary().exists():
        return None
    if shutil.which("go") is None:
        return "no Go toolchain (as root: apt-get install golang-go)"
    missing = sorted({package for path, package in NEEDED.items() if not path.is_dir()})
    if missing:
        return f"govmomi's source is not installed (as root: apt-get install {' '.join(missing)})"
    return None


def build() -> Path:
    """The simulator's binary, built now unless the cache has it for this source. RuntimeError: why not."""
    binary = _binary()
    if binary.exists():
        return binary
    reason = why_not()
    if reason is not None:
        raise RuntimeError(reason)
    CACHE.mkdir(parents=True, exist_ok=True)
    # offline: no modules (nothing is downloaded), the packages from Debian's GOPATH
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(GOPATH), "GOCACHE": str(CACHE / "go-cache"),
           "CGO_ENABLED": "0"}
    partial = binary.with_suffix(".partial")
    done = subprocess.run(["go", "build", "-o", str(partial), "."], cwd=SOURCE, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"go build failed: {done.stderr.strip()[-2000:]}")
    partial.replace(binary)
    for stale in CACHE.glob("vcsim-gpu-*"):
        if stale != binary:
            stale.unlink(missing_ok=True)
    return binary


@contextmanager
def running(port: int = 0, password: str | None = None, seed: Path = SEED,
            device_groups: bool = True) -> Iterator[Simulator]:
    """The seeded simulator on 127.0.0.1:`port` (0: a free one), stopped when the block ends. `device_groups`
    False: it serves no vSphere 8 device groups, as a vCenter before 8.0 (tests/vsphere/vcsim/devicegroups.go)."""
    binary = build()
    password = password or secrets.token_urlsafe(12)
    env = {**os.environ, "VCSIM_PASSWORD": password}
    flags = [] if device_groups else ["-without-device-groups"]
    with subprocess.Popen([str(binary), "-seed", str(seed), "-port", str(port), "-user", USER, *flags], env=env,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()  # the seeding takes ~1 s; it prints once it listens
            if not line:
                said = process.stderr.read() if process.stderr else ""
                raise RuntimeError(f"vcsim did not start: {said.strip().splitlines()[0] if said.strip() else ''}")
            yield Simulator(json.loads(line)["url"], USER, password)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.vsphere.vcsim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="store_true", help="build the simulator (or say why not) and exit")
    parser.add_argument("--port", type=int, default=18443)
    args = parser.parse_args()
    if args.build:
        try:
            print(f"vcsim: {build().relative_to(ROOT)}")
        except RuntimeError as why:
            print(f"note: the vCenter simulator is not built, its tests will skip: {why}")
        return 0
    password = os.environ.get("GPUADMIN_VCENTER_PASSWORD") or secrets.token_urlsafe(12)
    try:
        with running(args.port, password) as simulator:
            print("\n".join(demo_session(simulator)), flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    except RuntimeError as why:
        print(f"demo-vcenter: {why}\n(DEMO_VCENTER_PORT=N picks another port)", file=sys.stderr)
        return 2
    print("demo-vcenter: stopped.", flush=True)
    return 0


def demo_session(simulator: Simulator) -> list[str]:
    """What `make demo-vcenter` prints: where the simulator is, and the session to try it with (docs/vsphere.md)."""
    return [f"vCenter simulator (govmomi's vcsim, GPU hosts seeded by tests/vsphere/seed.yaml) at {simulator.server}",
            f"  export GPUADMIN_VCENTER_PASSWORD='{simulator.password}'",
            f"  gpuadmin --state .demo/vcenter init --from-cluster vcenter --server {simulator.server} --insecure",
            "  gpuadmin --state .demo/vcenter get nodes",
            "  gpuadmin --state .demo/vcenter diff",
            "Ctrl-C stops it."]

if __name__ == "__main__":
    sys.exit(main())
