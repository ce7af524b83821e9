"""Issue 10, item 14: an export that finds nothing says so on stderr; ConfigMap data is written as block scalars,
as NVIDIA's own examples write a device-plugin config."""

from __future__ import annotations

import yaml

from tests.cli.clikit import SAMPLES, gpuadmin


def test_empty_exports_say_so_on_stderr() -> None:
    for kind in ("device-plugin", "labels"):  # the vSphere hosts run no pods (orchestrator: none)
        result = gpuadmin("--inventory", SAMPLES / "vsphere-hgx.yaml", "export", kind)
        assert result.code == 0
        assert f"gpuadmin: export {kind}: nothing to export" in result.err
        assert "no Kubernetes node" in result.err


def test_exports_with_data_say_nothing_on_stderr() -> None:
    result = gpuadmin("--inventory", SAMPLES / "k8s-mixed.yaml", "export", "device-plugin")
    assert result.code == 0 and "nothing to export" not in result.err


def test_configmap_data_uses_block_scalars() -> None:
    result = gpuadmin("--inventory", SAMPLES / "k8s-mixed.yaml", "export", "device-plugin")
    assert "  gpuadmin-dgx-a100-80-02: |-\n    version: v1\n    flags:\n      migStrategy: none\n" in result.out
    assert "\\n" not in result.out
    data = yaml.safe_load(result.out)["data"]["gpuadmin-dgx-a100-80-02"]
    assert yaml.safe_load(data)["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 4
