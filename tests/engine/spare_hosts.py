"""The spare vSphere hosts of tests/engine/fixtures/vsphere-spare-hosts.yaml added to the vSphere sample's raw
document: a spare host named as one of the sample's (its empty esx-vdi-03) takes that host's place, so the
evacuation tests see the fixture's half-full esx-vdi-03 beside esx-vdi-04 and esx-hgx-04."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SPARE = Path(__file__).parent / "fixtures" / "vsphere-spare-hosts.yaml"


def add_spare_hosts(raw: dict[str, Any]) -> None:
    spares = yaml.safe_load(SPARE.read_text(encoding="utf-8"))
    names = {spare["name"] for spare in spares}
    raw["nodes"] = [node for node in raw["nodes"] if node["name"] not in names] + spares
