"""`get jobs`: REASON is the stable code of why a pending job waits, a filter key (`-l reason=over-limit`) in every
output format; REMEDY what would make room; MESSAGE (`-o wide`, JSON) all in words, whole."""

from __future__ import annotations

import json

from gpuadmin.service import Service
from tests.cli.clikit import SAMPLES, gpuadmin

OCI = SAMPLES / "oci-h100.yaml"
OVER_LIMIT = ["gpt-pretrain-405b", "nccl-allreduce-2node", "rlhf-ppo-2node", "intern-full-ft-8b"]


def test_select_by_reason_code() -> None:
    result = gpuadmin("--inventory", OCI, "get", "jobs", "-l", "reason=over-limit")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["NAME", "QUEUE", "STATUS", "REQUEST", "PLACEMENT", "AGE", "REASON", "REMEDY"]
    assert [line.split()[0] for line in lines[1:]] == OVER_LIMIT
    reason = lines[0].index("REASON")
    assert all(line[reason:].split()[0] == "over-limit" for line in lines[1:])


def test_select_by_reason_code_for_names() -> None:
    """`-o name` reads no reasons unless the selector may name one: then it must, or nothing matches."""
    result = gpuadmin("--inventory", OCI, "get", "jobs", "-l", "reason in (node-cordoned, profile-not-carved)",
                      "-o", "name")
    assert result.code == 0, result.err
    assert result.out.splitlines() == ["job/video-caption-serve", "job/eval-405b-shard", "job/vllm-405b-eval"]


def test_message_keeps_the_remedy_whole() -> None:
    wide = gpuadmin("--inventory", OCI, "get", "jobs", "vllm-405b-eval", "-o", "wide")
    assert wide.code == 0, wide.err
    assert wide.out.splitlines()[0].split()[-1] == "MESSAGE"
    assert wide.out.rstrip().endswith("remedy: uncordon gpu-h100-11"), wide.out
    doc = json.loads(gpuadmin("--inventory", OCI, "get", "jobs", "vllm-405b-eval", "-o", "json").out)
    item = doc["items"][0]
    assert doc["format_version"] == 2
    assert item["reason"] == "node-cordoned" and item["message"].endswith("remedy: uncordon gpu-h100-11")
    assert item["remedy"] == "uncordon gpu-h100-11"


def test_reason_codes_are_the_explanations() -> None:
    """REASON is `explain`'s reason code, MESSAGE its summary, for every job the cycle leaves waiting."""
    service = Service(inventory=OCI)
    rows = {r["NAME"]: r for r in service.get("jobs").rows}
    for name, row in rows.items():
        if row["STATUS"] != "pending" or row["REASON"] == "schedulable":
            continue
        explanation = service.explain(name)
        assert (row["REASON"], row["MESSAGE"]) == (explanation.reason, explanation.summary), name
        # the remedy of the whole cycle's explanation (`explain` of one job may search further: preemptions)
        assert row["REMEDY"] == "-" or row["REMEDY"] in explanation.summary, name


def test_an_unknown_key_names_reason_among_the_known() -> None:
    result = gpuadmin("--inventory", OCI, "get", "jobs", "-l", "resaon=over-limit")
    assert result.code == 2 and result.out == ""
    assert "reason" in result.err and "message" in result.err and "Traceback" not in result.err
