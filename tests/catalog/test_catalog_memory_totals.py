"""Device memory totals as nvidia-smi reports them (issue 19 point 11).

The figures are transcribed from published nvidia-smi outputs, cited in gpuadmin/catalog/data/gpus.yaml:
L40S 46068 MiB (akash-network/provider-configs PR #99, modal-labs/modal-client PR #2797), B200 183359 MiB
(modal-labs/gpu-glossary gpu-glossary/host-software/nvidia-smi.md), GB200 189471 MiB (GB200 tray outputs
in public repositories), RTX PRO 6000 Blackwell Server Edition 97887 MiB (one published output).
"""

from __future__ import annotations

import pytest

from gpuadmin.adapters import parse_nvidia_smi
from gpuadmin.catalog import get_catalog, mig_profile_name

NVIDIA_SMI_TOTALS = [
    ("L40S", "NVIDIA L40S", "26B910DE", 46068),
    ("B200", "NVIDIA B200", "290110DE", 183359),
    ("GB200", "NVIDIA GB200", "294110DE", 189471),
    ("RTX-PRO-6000-BSE", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "2BB510DE", 97887),
]


def _xml(product: str, pci: str, total_mib: int) -> str:
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>\n'
        "<driver_version>575.57.08</driver_version>\n<attached_gpus>1</attached_gpus>\n"
        f'<gpu id="00000000:51:00.0">\n<product_name>{product}</product_name>\n'
        "<mig_mode><current_mig>Disabled</current_mig><pending_mig>Disabled</pending_mig></mig_mode>\n"
        f"<mig_devices>None</mig_devices>\n<pci><pci_device_id>{pci}</pci_device_id></pci>\n"
        f"<fb_memory_usage><total>{total_mib} MiB</total></fb_memory_usage>\n</gpu>\n</nvidia_smi_log>\n"
    )


@pytest.mark.parametrize(("name", "product", "pci", "total_mib"), NVIDIA_SMI_TOTALS)
def test_catalog_total_is_the_nvidia_smi_total(name: str, product: str, pci: str, total_mib: int) -> None:
    catalog = get_catalog()
    model = catalog.model(name)
    assert model is not None
    assert catalog.model_by_product_name(product) is model and catalog.model_by_pci_id(pci) is model
    assert model.memory_mib == total_mib
    assert model.provenance_of("memory").confidence == "secondary"


@pytest.mark.parametrize(("name", "product", "pci", "total_mib"), NVIDIA_SMI_TOTALS)
def test_a_real_total_imports_without_a_frame_buffer_warning(
    name: str, product: str, pci: str, total_mib: int
) -> None:
    result = parse_nvidia_smi(_xml(product, pci, total_mib), "n")
    assert result.node.gpus[0].model == name
    assert result.warnings == []


@pytest.mark.parametrize(
    ("name", "whole_gpu"), [("B200", "7g.180gb"), ("GB200", "7g.186gb"), ("RTX-PRO-6000-BSE", "4g.96gb")]
)
def test_real_totals_keep_the_profile_names(name: str, whole_gpu: str) -> None:
    """The naming rule (gpu-facts §1.6) on the real total gives the names the catalog already has."""
    model = get_catalog().model(name)
    assert model is not None and model.mig_profile(whole_gpu) is not None
    compute = int(whole_gpu.split("g.", 1)[0])
    assert mig_profile_name(compute, model.memory_mib, model.memory_mib) == whole_gpu


def test_l40s_vgpu_frame_buffer_is_the_48_gb_board_not_the_nvidia_smi_total() -> None:
    model = get_catalog().model("L40S")
    assert model is not None
    assert model.vgpu_type("L40S-48C") is not None
    assert model.vgpu_framebuffer_mib == 48 * 1024 > model.memory_mib
