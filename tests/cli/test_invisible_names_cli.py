"""Issue 21, point 16d, through the real CLI: characters that draw as nothing (zero-width space and joiner, word
joiner, BOM, a bidi override) are written as visible escapes in text, and as JSON/YAML escapes that read back to
the very names."""

from __future__ import annotations

import json
import re

import yaml

from tests.cli.clikit import ROOT, gpuadmin

INVISIBLE = ROOT / "tests" / "tui" / "fixtures" / "invisible.yaml"
DRAWS_AS_NOTHING = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def test_text_output_shows_invisible_characters() -> None:
    nodes = gpuadmin("--inventory", INVISIBLE, "get", "nodes")
    jobs = gpuadmin("--inventory", INVISIBLE, "get", "jobs")
    assert nodes.code == jobs.code == 0
    assert r"gpu\u200b-01" in nodes.out and "\ngpu-01 " in nodes.out
    assert r"train\u200d7" in jobs.out and r"research\ufeff" in jobs.out and r"\u202eevil" in jobs.out
    described = gpuadmin("--inventory", INVISIBLE, "describe", "node", "gpu\u200b-01")
    assert described.code == 0 and r"train\u2060ing" in described.out
    for out in (nodes.out, jobs.out, described.out):
        assert not DRAWS_AS_NOTHING.search(out)


def test_documents_escape_them_and_read_back() -> None:
    as_json = gpuadmin("--inventory", INVISIBLE, "get", "nodes", "-o", "json")
    as_yaml = gpuadmin("--inventory", INVISIBLE, "get", "nodes", "-o", "yaml")
    assert not DRAWS_AS_NOTHING.search(as_json.out + as_yaml.out)
    names = {item["metadata"]["name"] if "metadata" in item else item["name"]
             for item in json.loads(as_json.out)["items"]}
    assert names == {"gpu\u200b-01", "gpu-01"}
    assert "gpu\u200b-01" in {item["name"] for item in yaml.safe_load(as_yaml.out)["items"]}
