"""The topology tree in a real terminal (issue 21, point 11): tmux at 80x24 under TERM=xterm, a cursor drawn
as `>`, → opens a part, Enter on a GPU opens its node at that GPU, Esc comes back to the tree as it was."""

from __future__ import annotations

from pathlib import Path

from gpuadmin.service import Service
from tests.e2e.tmuxkit import ROOT, Pane, gpuadmin_argv

SAMPLE = ROOT / "sample-inventories" / "oci-h100.yaml"


def test_topology_tree_at_80x24(tmp_path: Path) -> None:
    Service.init(tmp_path / "state", SAMPLE)
    env = {"TERM": "xterm", "LANG": "C.UTF-8", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    pane = Pane(gpuadmin_argv("--state", str(tmp_path / "state")), env)
    try:
        pane.wait_for("GPUs by use")
        pane.type("4")
        tree = pane.wait_for("> - gpu-h100-01  baremetal + kubernetes  ready")
        assert "+ NVSwitch domain: [0 1 2 3 4 5 6 7]" in tree
        assert all(len(line) <= 80 for line in tree.splitlines()), "nothing drawn past 80 columns"

        pane.keys("Down", "Right")  # open the first host's NVSwitch domain: its GPUs
        opened = pane.wait_for("- NVSwitch domain: [0 1 2 3 4 5 6 7]")
        assert "GPU 0 H100-SXM5-80GB" in opened and "GPU 7 H100-SXM5-80GB" in opened

        pane.keys("Down", "Right", "Down")  # GPU 0 open: its slice and who holds it
        held = pane.wait_for("-> job ")
        cursor = next(line for line in held.splitlines() if line.lstrip("│ ").startswith(">"))
        assert "-> job " in cursor, held

        pane.keys("Up", "Enter")  # on GPU 0: its node's screen at that GPU
        node = pane.wait_for("> GPU 0 H100-SXM5-80GB")
        assert "topology >" in node.splitlines()[0]  # a drill-down from the tree (the header names the state too)

        pane.keys("Escape")
        back = pane.wait_for("- NVSwitch domain: [0 1 2 3 4 5 6 7]")
        assert "topology" in back.splitlines()[0]
        pane.type("q")
        assert pane.exit_code() == 0
    finally:
        pane.close()
