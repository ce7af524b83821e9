"""Issue 24's "done when": the README's "A vCenter" session runs as written against VMware's simulator seeded as
`make demo-vcenter` seeds it (here on a free port, its password in place of the README's PASSWORD), twice in a
row — and what it claims holds: esx-vdi-01's 13 VMs are on esx-vdi-03 in vCenter itself, the host is in
maintenance mode, and the journal tells the executed evacuation."""

from __future__ import annotations

import re
from pathlib import Path

from tests.kube.test_readme_live_session import run_session
from tests.vsphere.estate import find, session
from tests.vsphere.vcsim import Simulator

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "## A vCenter\n"
DEMO_SERVER = "https://127.0.0.1:18443"
VDI_01 = [f"vdi-{i:02}" for i in range(1, 13)] + ["ws-cad-01"]  # the VMs the sample puts on esx-vdi-01


def readme_session() -> list[str]:
    """The commands of the README's "A vCenter" session: its indented lines, comments dropped."""
    block = README.read_text(encoding="utf-8").split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [re.sub(r"\s+# .*$", "", line.strip()) for line in block.splitlines() if line.startswith("    ")]
    return [line for line in lines if line]


def test_the_readme_vcenter_session_runs_as_written_twice(vcsim: Simulator, tmp_path: Path) -> None:
    lines = readme_session()
    assert any("init --from-cluster vcenter" in line for line in lines), "no session in the README"
    assert all(DEMO_SERVER in line for line in lines if "--server" in line)
    typed = [line.replace("=PASSWORD", f"={vcsim.password}") if line.startswith("export ") else
             line.replace(DEMO_SERVER, vcsim.server) for line in lines]
    for _round in (1, 2):
        outputs = run_session(typed, tmp_path)
        journal = next(out for line, out in outputs.items() if line.endswith("get journal"))
        assert "executed" in journal and "evacuate-host" in journal
        with session(vcsim) as service:
            assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is True
            assert {find(service, "VirtualMachine", vm).runtime.host.name for vm in VDI_01} == {"esx-vdi-03"}
