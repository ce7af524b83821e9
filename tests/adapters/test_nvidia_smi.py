"""nvidia-smi -q -x importer, on the two real files and on hand-made edge cases."""

from __future__ import annotations

import pytest
from adapters_support import A100_XML, H100_XML, H200_XML, fixture_bytes

from gpuadmin.adapters import import_nvidia_smi, parse_nvidia_smi
from gpuadmin.model.diagnostics import InputError


def test_h100_hgx_eight_gpus_no_mig() -> None:
    fixture_bytes(H100_XML.name)
    result = import_nvidia_smi(H100_XML, "gpu-h100-01")
    node = result.node
    assert node.name == "gpu-h100-01" and node.platform == "baremetal"
    assert [g.index for g in node.gpus] == list(range(8))
    assert {g.model for g in node.gpus} == {"H100-SXM5-80GB"}
    assert all(g.mode == "full" and g.mig is None for g in node.gpus)
    assert result.gpu_memory_mib == dict.fromkeys(range(8), 81559)
    assert node.nvlink == "nvswitch"  # every GPU: <fabric><state>Completed</state><status>Success</status>
    assert result.warnings == []


def test_a_real_h200_recorded_on_a_lent_machine() -> None:
    """`nvidia-smi -q -x` as a real H200 printed it (driver 580, in a VM): the product name `NVIDIA H200` is the
    141 GB SXM board, its memory as the driver reports it, module 1; `<fabric>` N/A leaves NVLink unknown."""
    fixture_bytes(H200_XML.name)
    result = import_nvidia_smi(H200_XML, "vm")
    assert [(g.index, g.model, g.mode, g.module_id) for g in result.node.gpus] == [(0, "H200-SXM5-141GB", "full", 1)]
    assert result.gpu_memory_mib == {0: 143771} and result.node.nvlink is None
    assert result.warnings == []


def test_a100_mig_four_1g20gb_and_attached_gpus_quirk() -> None:
    fixture_bytes(A100_XML.name)
    result = import_nvidia_smi(A100_XML, "a100-node", platform="baremetal", orchestrator="kubernetes")
    node = result.node
    assert (node.platform, node.orchestrator) == ("baremetal", "kubernetes")
    assert len(node.gpus) == 1
    gpu = node.gpus[0]
    assert gpu.model == "A100-SXM4-80GB" and gpu.mode == "mig"
    assert [(i.profile, i.start) for i in gpu.mig or ()] == [
        ("1g.20gb", 0),
        ("1g.20gb", 2),
        ("1g.20gb", 4),
        ("1g.20gb", 6),
    ]
    assert result.gpu_memory_mib == {0: 81920}
    assert any("attached_gpus says 4" in w and "1 <gpu>" in w for w in result.warnings)
    assert node.nvlink is None  # fabric N/A: the XML does not say


def _xml(
    gpus: str, attached: int = 1, doctype: str = '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">'
) -> str:
    return (
        f'<?xml version="1.0" ?>\n{doctype}\n<nvidia_smi_log>\n<driver_version>510.47.03</driver_version>\n'
        f"<attached_gpus>{attached}</attached_gpus>\n{gpus}</nvidia_smi_log>\n"
    )


def _gpu(
    product: str = "NVIDIA H100 80GB HBM3",
    pci: str = "233010DE",
    total: str = "81559 MiB",
    current: str = "Disabled",
    pending: str | None = None,
    devices: str = "None",
) -> str:
    return (
        f'<gpu id="00000000:01:00.0">\n<product_name>{product}</product_name>\n'
        f"<mig_mode><current_mig>{current}</current_mig>"
        f"<pending_mig>{pending or current}</pending_mig></mig_mode>\n"
        f"<mig_devices>{devices}</mig_devices>\n<pci><pci_device_id>{pci}</pci_device_id></pci>\n"
        f"<fb_memory_usage><total>{total}</total></fb_memory_usage>\n</gpu>\n"
    )


def _mig(
    gi: int,
    sms: int | None,
    mib: int,
    ofa: int = 0,
    ci: int = 0,
    ce: int | None = None,
    media: tuple[int, int, int] | None = None,
) -> str:
    """One `<mig_device>` as nvidia-smi writes it (structure of the real telegraf sample); `media` is
    (decoder, encoder, jpg) counts, `ce` the copy engines, both left out where None."""
    sms_text = "N/A" if sms is None else sms
    engines = f"<ofa_count>{ofa}</ofa_count>"
    if ce is not None:
        engines += f"<copy_engine_count>{ce}</copy_engine_count>"
    if media is not None:
        engines += (
            f"<decoder_count>{media[0]}</decoder_count><encoder_count>{media[1]}</encoder_count>"
            f"<jpg_count>{media[2]}</jpg_count>"
        )
    return (
        f"<mig_device><index>{gi}</index><gpu_instance_id>{gi}</gpu_instance_id>"
        f"<compute_instance_id>{ci}</compute_instance_id><device_attributes><shared>"
        f"<multiprocessor_count>{sms_text}</multiprocessor_count>{engines}</shared>"
        f"</device_attributes><fb_memory_usage><total>{mib} MiB</total></fb_memory_usage></mig_device>"
    )


def test_h100_all_balanced_profiles_from_sms_and_memory() -> None:
    devices = _mig(1, 60, 40320) + _mig(2, 32, 20096) + _mig(3, 16, 9984) + _mig(4, 16, 9984)
    result = parse_nvidia_smi(_xml(_gpu(current="Enabled", devices=devices)), "n")
    layout = [(i.profile, i.start) for i in result.node.gpus[0].mig or ()]
    assert sorted(p for p, _ in layout) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    assert layout == [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]


def test_double_memory_1g_and_media_extension() -> None:
    # H100: 1g.20gb shows 26 SMs in -lgip, 2g.20gb 32; +me has an OFA engine
    devices = _mig(1, 26, 20096) + _mig(2, 32, 20096) + _mig(3, 16, 9984, ofa=1)
    result = parse_nvidia_smi(_xml(_gpu(current="Enabled", devices=devices)), "n")
    assert sorted(i.profile for i in result.node.gpus[0].mig or ()) == ["1g.10gb+me", "1g.20gb", "2g.20gb"]


def test_v11_by_pci_id_with_units_and_pending_mig() -> None:
    text = _xml(_gpu(product="N/A", pci="20B010DE", total="40 GiB", current="Disabled", pending="Enabled"))
    result = parse_nvidia_smi(text, "old")
    gpu = result.node.gpus[0]
    assert gpu.model == "A100-SXM4-40GB" and gpu.mode == "full"
    assert result.gpu_memory_mib == {0: 40960}
    assert any("pending" in w for w in result.warnings)


def test_memory_na_falls_back_to_catalog_with_warning() -> None:
    result = parse_nvidia_smi(_xml(_gpu(total="N/A")), "n")
    assert result.gpu_memory_mib == {}
    assert any("no frame-buffer total" in w for w in result.warnings)


def test_mig_enabled_without_devices() -> None:
    result = parse_nvidia_smi(_xml(_gpu(current="Enabled", devices="None")), "n")
    assert result.node.gpus[0].mode == "mig" and result.node.gpus[0].mig == []
    assert any("no MIG devices" in w for w in result.warnings)


def test_two_compute_instances_in_one_gpu_instance() -> None:
    # the GI's 3 copy engines tell a 3g.40gb from a 4g.40gb (4), whose 64 SMs the CIs could also fit in
    devices = _mig(1, 32, 40320, ci=0, ce=3) + _mig(1, 28, 40320, ci=1, ce=3)
    result = parse_nvidia_smi(_xml(_gpu(current="Enabled", devices=devices)), "n")
    mig = result.node.gpus[0].mig or []
    assert [i.profile for i in mig] == ["3g.40gb"]
    # the GI's 60 SMs are 20 per compute slice: 32 SMs is a 2c CI, 28 a 1c one (file order kept)
    assert mig[0].compute_instances == ["2c.3g.40gb", "1c.3g.40gb"]
    assert any("holds compute instances 2c.3g.40gb, 1c.3g.40gb" in w for w in result.warnings)


def test_compute_instances_without_sm_counts_are_imported_as_one_with_a_warning() -> None:
    devices = _mig(1, None, 40320, ci=0, ce=3) + _mig(1, None, 40320, ci=1, ce=3)
    result = parse_nvidia_smi(_xml(_gpu(current="Enabled", devices=devices)), "n")
    mig = result.node.gpus[0].mig or []
    assert mig and mig[0].compute_instances is None
    assert any("2 compute instances without SM counts" in w for w in result.warnings)


def test_compute_instances_that_overfill_every_gi_are_refused_with_the_line() -> None:
    # 88 SMs with 40 GB: more than a 3g.40gb (60) or a 4g.40gb (64) holds, so no GI profile fits them
    devices = _mig(1, 44, 40320, ci=0) + _mig(1, 44, 40320, ci=1)
    message = _error(_xml(_gpu(current="Enabled", devices=devices)))
    assert message.startswith("smi.xml:9:") and "MIG devices 1, 1 (GPU instance 1) cannot be identified" in message
    assert "88 SMs, 40320 MiB" in message and "3g.40gb (60 SMs" in message and "4g.40gb (64 SMs" in message


def test_attached_gpus_more_than_elements_trusts_elements() -> None:
    result = parse_nvidia_smi(_xml(_gpu() + _gpu(), attached=8), "n")
    assert len(result.node.gpus) == 2


def test_unknown_dtd_version_is_a_warning() -> None:
    text = _xml(_gpu(), doctype='<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v14.dtd">')
    assert any("v14" in w for w in parse_nvidia_smi(text, "n").warnings)


def _error(text: str | bytes) -> str:
    with pytest.raises(InputError) as bad:
        parse_nvidia_smi(text, "n", file="smi.xml")
    return str(bad.value)


def test_not_xml_names_file_and_line() -> None:
    assert _error("<nvidia_smi_log>\n<gpu>\n</nvidia_smi_log>\n").startswith("smi.xml:3:")
    assert "not XML" in _error("hello")


def test_wrong_root() -> None:
    assert "not <nvidia_smi_log>" in _error("<?xml version='1.0'?>\n<html></html>")


def test_unknown_product_imports_whole_marked_not_in_catalog() -> None:
    text = _xml(_gpu(product="Tesla V100-SXM2-16GB", pci="1DB110DE", total="16160 MiB") + _gpu())
    result = parse_nvidia_smi(text, "n", file="smi.xml")
    unknown, known = result.node.gpus
    assert (unknown.model, unknown.mode, unknown.mig) == ("Tesla V100-SXM2-16GB", "full", None)
    assert unknown.not_in_catalog is not None
    assert (unknown.not_in_catalog.memory_mib, unknown.not_in_catalog.pci_device_id) == (16160, "0x1DB1")
    assert known.model == "H100-SXM5-80GB" and known.not_in_catalog is None
    warning = next(w for w in result.warnings if w.startswith("GPU 0:"))
    assert "not in the catalog" in warning and "MIG" in warning and "vGPU" in warning and "0x1DB1" in warning


def test_unknown_product_with_mig_enabled_is_imported_whole_with_a_warning() -> None:
    devices = _mig(1, 16, 9984)
    result = parse_nvidia_smi(_xml(_gpu(product="NVIDIA Z100", pci="FFFF10DE", current="Enabled",
                                        devices=devices)), "n")
    gpu = result.node.gpus[0]
    assert (gpu.model, gpu.mode, gpu.mig) == ("NVIDIA Z100", "full", None)
    assert any("MIG devices cannot be read" in w for w in result.warnings)


def test_scrubbed_pci_id_does_not_stop_a_name_match_and_vice_versa() -> None:
    by_name = parse_nvidia_smi(_xml(_gpu(product="NVIDIA H100 80GB HBM3", pci="00000000")), "n")
    assert by_name.node.gpus[0].model == "H100-SXM5-80GB"
    by_pci = parse_nvidia_smi(_xml(_gpu(product="N/A", pci="233010DE")), "n")
    assert by_pci.node.gpus[0].model == "H100-SXM5-80GB"
    odd_name = parse_nvidia_smi(_xml(_gpu(product="GPU-REDACTED", pci="2BB510DE", total="97887 MiB")), "n")
    assert odd_name.node.gpus[0].model == "RTX-PRO-6000-BSE"
    neither = parse_nvidia_smi(_xml(_gpu(product="N/A", pci="00000000")), "n").node.gpus[0]
    assert neither.model == "unidentified GPU 0" and neither.not_in_catalog is not None
    assert neither.not_in_catalog.pci_device_id is None


def test_entities_and_internal_subsets_refused() -> None:
    laughs = (
        '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a "aaaaaaaaaa">\n'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n<nvidia_smi_log>&b;</nvidia_smi_log>'
    )
    assert "refused unsafe XML" in _error(laughs)
    xxe = (
        '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log SYSTEM "x.dtd" [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "\n<nvidia_smi_log>&x;</nvidia_smi_log>"
    )
    assert "refused unsafe XML" in _error(xxe)


def test_mig_device_no_profile_fits() -> None:
    message = _error(_xml(_gpu(current="Enabled", devices=_mig(1, 16, 30000))))
    assert "GPU 0: MIG device 1 (GPU instance 1) cannot be identified" in message
    assert "no H100-SXM5-80GB MIG profile has 30gb" in message


# Issue 19 point 5: double-memory 1g profiles. H200 values from NVIDIA's published facts: 143771 MiB total
# (catalog, real nvidia-smi), 1g.35gb = 32.50 GiB (the 2 memory slices of 2g.35gb, real -lgip) = 33280 MiB,
# 26 SMs (-lgip of profile ID 15 on every Hopper part) or 16 (a one-slice device, GFD label on H100 NVL), engines
# of MIG-UG Table 8 (1 NVDEC, 1 JPEG, 0 OFA, 1 CE); 2g.35gb 32 SMs / 2 CE, 3g.71gb 60 SMs / 3 CE (real -lgip,
# benchmark notes, Table 8); a 3g.71gb holds twice 2g.35gb's 32.50 GiB (66560 MiB).
H200_TOTAL = "143771 MiB"


def _h200(devices: str) -> str:
    return _xml(_gpu(product="NVIDIA H200", pci="233510DE", total=H200_TOTAL, current="Enabled", devices=devices))


def _h200_1g35(gi: int, sms: int = 26) -> str:
    return _mig(gi, sms, 33280, ce=1, media=(1, 0, 1))


def test_h200_all_1g35gb_is_four_1g35gb() -> None:
    # mig-parted's all-1g.35gb for 0x2335: 4 × 1g.35gb; it failed to import (read as 4 × 2g.35gb)
    result = parse_nvidia_smi(_h200("".join(_h200_1g35(gi) for gi in (3, 4, 5, 6))), "n")
    assert [(i.profile, i.start) for i in result.node.gpus[0].mig or ()] == [
        ("1g.35gb", 0), ("1g.35gb", 2), ("1g.35gb", 4), ("1g.35gb", 6)
    ]


def test_h200_mixed_layout_reads_1g35gb_not_2g35gb() -> None:
    # it imported silently wrong: 1g.35gb read as a 2g.35gb, still a valid layout
    devices = _h200_1g35(1, sms=16) + _mig(2, 32, 33280, ce=2, media=(2, 0, 2)) + _mig(3, 60, 66560, ce=3)
    result = parse_nvidia_smi(_h200(devices), "n")
    assert sorted(i.profile for i in result.node.gpus[0].mig or ()) == ["1g.35gb", "2g.35gb", "3g.71gb"]


def test_b200_1g45gb_told_from_2g45gb_by_copy_engines() -> None:
    # MIG-UG Table 9: 1g.45gb has 2 copy engines, 2g.45gb 3 (the catalog has no B200 SM counts). No B200 XML is
    # public: the memory is one in the two-slice band of a 183359 MiB B200, which NVLIB's rule names "45gb"
    devices = _mig(1, 18, 45824, ce=2) + _mig(2, 36, 45824, ce=3)
    text = _xml(_gpu(product="NVIDIA B200", pci="290110DE", total="183359 MiB", current="Enabled", devices=devices))
    result = parse_nvidia_smi(text, "n")
    assert sorted(i.profile for i in result.node.gpus[0].mig or ()) == ["1g.45gb", "2g.45gb"]


@pytest.mark.parametrize(
    ("product", "pci", "total", "memory", "one_g", "two_g", "ce"),
    [
        # GB200 (the catalog's 189471 MiB total): 1g.47gb / 2g.47gb, 2 / 3 copy engines as B200's Table 9
        ("NVIDIA GB200", "294110DE", "189471 MiB", 47360, "1g.47gb", "2g.47gb", (2, 3)),
        # GH200 144G HBM3e: 1g.36gb / 2g.36gb, 1 / 2 copy engines as every Hopper part's real -lgip
        ("NVIDIA GH200 144G HBM3e", "234810DE", "147456 MiB", 36864, "1g.36gb", "2g.36gb", (1, 2)),
    ],
)
def test_double_memory_1g_of_gb200_and_gh200_144_is_not_read_as_2g(
    product: str, pci: str, total: str, memory: int, one_g: str, two_g: str, ce: tuple[int, int]
) -> None:
    """The other two parts the issue names (point 5): no SM count in the catalog, so main's nearest-SM guess
    read the one-slice device as the two-slice one. No XML of either is public: the memory is the two-slice
    band of the catalog total, which NVLIB's rule names as above."""
    devices = _mig(1, 16, memory, ce=ce[0]) + _mig(2, 32, memory, ce=ce[1])
    text = _xml(_gpu(product=product, pci=pci, total=total, current="Enabled", devices=devices))
    assert sorted(i.profile for i in parse_nvidia_smi(text, "n").node.gpus[0].mig or ()) == [one_g, two_g]


def test_an_instance_nothing_tells_apart_is_an_error_naming_it() -> None:
    # a B200 1g.45gb without copy-engine counts could be a 2g.45gb: refused, never guessed
    text = _xml(_gpu(product="NVIDIA B200", pci="290110DE", total="183359 MiB", current="Enabled",
                     devices=_mig(7, 18, 45824)))
    message = _error(text)
    assert "GPU 0: MIG device 7 (GPU instance 7) cannot be identified" in message
    assert "fit several B200 MIG profiles (1g.45gb, 2g.45gb)" in message


# Issue 19 point 6: media extensions. RTX PRO 6000 Blackwell Server Edition values transcribed from a real
# `nvidia-smi mig -lgip` (driver 610.43.02, quoted in the blog post "Slicing GPUs in Kubernetes with NVIDIA MIG"):
# 97887 MiB total, a 1g.24gb device 24192 MiB, 46 SMs, 1 CE; DEC/ENC/JPEG/OFA: 1g.24gb 1/1/1/0, +me 1/1/1/1,
# +gfx 1/1/1/0, +me.all 4/4/4/1, -me 0/0/0/0 (also MIG-UG Table 11).
def _rtx(devices: str) -> str:
    return _xml(_gpu(product="NVIDIA RTX PRO 6000 Blackwell Server Edition", pci="2BB510DE", total="97887 MiB",
                     current="Enabled", devices=devices))


def _rtx_1g(gi: int, media: tuple[int, int, int], ofa: int) -> str:
    return _mig(gi, 46, 24192, ofa=ofa, ce=1, media=media)


def test_media_all_and_no_media_profiles_are_told_apart() -> None:
    devices = _rtx_1g(1, (4, 4, 4), 1) + "".join(_rtx_1g(gi, (0, 0, 0), 0) for gi in (2, 3, 4))
    result = parse_nvidia_smi(_rtx(devices), "n")
    assert sorted(i.profile for i in result.node.gpus[0].mig or ()) == [
        "1g.24gb+me.all", "1g.24gb-me", "1g.24gb-me", "1g.24gb-me"
    ]


def test_media_extension_and_plain_profiles_with_the_gfx_twin_warned() -> None:
    devices = _rtx_1g(1, (1, 1, 1), 1) + _rtx_1g(2, (1, 1, 1), 0) + _mig(3, 94, 48512, ce=2, media=(2, 2, 2))
    result = parse_nvidia_smi(_rtx(devices), "n")
    assert sorted(i.profile for i in result.node.gpus[0].mig or ()) == ["1g.24gb", "1g.24gb+me", "2g.48gb"]
    assert any("1g.24gb and 1g.24gb+gfx report the same" in w for w in result.warnings)


def test_missing_file() -> None:
    with pytest.raises(InputError, match="cannot read"):
        import_nvidia_smi("/nonexistent/x.xml", "n")


def test_module_ids_are_read_from_the_real_hgx_h100() -> None:
    """`<platformInfo><module_id>` of the real 8× H100 file: GPU 0 sits in module 7. Fabric Manager's
    partitions (rule group.fm-partition) are sets of module ids, so the index alone would name the wrong GPUs;
    the telegraf A100 file has no module id and reads as none."""
    node = import_nvidia_smi(H100_XML, "gpu-h100-01").node
    assert [g.module_id for g in node.gpus] == [7, 5, 6, 8, 1, 3, 4, 2]
    assert [g.module_id for g in import_nvidia_smi(A100_XML, "a").node.gpus] == [None]


def test_repeated_or_bad_module_ids_are_left_out_with_a_warning() -> None:
    text = fixture_bytes(H100_XML.name).decode()
    repeated = text.replace("<module_id>5</module_id>", "<module_id>7</module_id>", 1)
    result = parse_nvidia_smi(repeated, "n")
    assert [g.module_id for g in result.node.gpus] == [None] * 8
    assert any("module ids repeat" in w for w in result.warnings)
    bad = text.replace("<module_id>5</module_id>", "<module_id>99999999999999999999</module_id>", 1)
    result = parse_nvidia_smi(bad, "n")
    assert result.node.gpus[1].module_id is None and result.node.gpus[0].module_id == 7
    assert any("GPU 1: module id" in w for w in result.warnings)
