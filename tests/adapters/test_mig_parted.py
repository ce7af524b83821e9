"""mig-parted configs: NVIDIA's shipped default imports for every config and every catalog model it filters
for, into layouts the engine accepts; validation as mig-parted does it; export golden; round trip."""

from __future__ import annotations

import pytest
import yaml
from adapters_support import MIG_PARTED, fixture_bytes, golden

from gpuadmin.adapters import export_mig_parted, layouts_for_model, mig_parted_changes, mig_parted_layouts
from gpuadmin.adapters.mig_parted import parse_mig_parted, parse_profile, read_mig_parted
from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.mig import is_valid
from gpuadmin.engine.planner import plan
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Gpu, Inventory, MigInstance, Node
from gpuadmin.model.diagnostics import InputError


def _engine_accepts(model: GpuModel, layout: list[MigInstance]) -> None:
    """place() found it; the MIG rules of gpuadmin/engine/rules pass on a node holding it."""
    assert all(i.start is not None for i in layout)
    assert is_valid(model, [(i.profile, i.start or 0) for i in layout])
    node = Node(
        name="probe", platform="baremetal", gpus=[Gpu(index=0, model=model.name, mode="mig", mig=layout)]
    )
    result = plan(
        ClusterState.from_inventory(Inventory(version=1, cluster="t")), [ch.AddNode(op="add-node", node=node)]
    )
    mig_violations = [v for v in result.violations if v.rule.startswith("mig.")]
    assert mig_violations == [], mig_violations


def _catalog_models_for(filters: tuple[str, ...]) -> list[GpuModel]:
    found = {get_catalog().model_by_pci_id(f.split(":")[0]) for f in filters}
    return sorted((m for m in found if m is not None), key=lambda m: m.name)


def test_shipped_default_every_config_every_filtered_model() -> None:
    fixture_bytes(MIG_PARTED.name)
    spec = read_mig_parted(MIG_PARTED)
    assert len(spec.configs) == 81
    checked: set[tuple[str, str]] = set()
    for name, entries in spec.configs.items():
        for entry in entries:
            models = (
                _catalog_models_for(entry.device_filter)
                if entry.device_filter
                else [
                    m
                    for m in get_catalog().mig_capable_models()
                    if all(m.mig_profile(parse_profile(p).gi_name) for p in entry.mig_devices)
                ]
            )
            for model in models:
                layouts = layouts_for_model(spec, name, model, gpus=2)
                assert set(layouts) == {0, 1}, (name, model.name)
                for layout in layouts.values():
                    if entry.mig_enabled:
                        assert layout is not None
                        assert sum(entry.mig_devices.values()) == len(layout)
                        _engine_accepts(model, layout)
                    else:
                        assert layout is None
                checked.add((name, model.name))
    # all-balanced for every catalog model its filters name (B300/GB300, H800, PG506 … are not in the catalog;
    # H100-SXM5-94GB (0x2339) is in no filter of the file)
    balanced = {m for n, m in checked if n == "all-balanced"}
    assert balanced == {
        "A100-SXM4-40GB",
        "A100-PCIE-40GB",
        "A100-SXM4-80GB",
        "A100-PCIE-80GB",
        "A30",
        "H100-SXM5-80GB",
        "H100-PCIE-80GB",
        "H100-NVL-94GB",
        "H200-SXM5-141GB",
        "H200-NVL-141GB",
        "B200",
        "GB200",
        "H100-96GB-GH200",
        "GH200-144GB",
        "H20",
        "RTX-PRO-6000-BSE",
    }
    assert len(checked) > 60


def test_all_balanced_real_numbers() -> None:
    spec = read_mig_parted(MIG_PARTED)
    h100 = get_catalog().model("H100-SXM5-80GB")
    assert h100 is not None
    layout = layouts_for_model(spec, "all-balanced", h100)[0]
    assert layout is not None
    assert [(i.profile, i.start) for i in layout] == [
        ("2g.20gb", 0),
        ("1g.10gb", 2),
        ("1g.10gb", 3),
        ("3g.40gb", 4),
    ]
    a30 = get_catalog().model("A30")
    assert a30 is not None
    a30_layout = layouts_for_model(spec, "all-balanced", a30)[0]
    assert a30_layout is not None
    assert sorted(i.profile for i in a30_layout) == ["1g.6gb", "1g.6gb", "2g.12gb"]
    # all-1g.10gb: 7 of the single-slice profile on 80GB parts, 4 of the double-memory one on A100-40GB
    for model_name, count in (("A100-SXM4-80GB", 7), ("A100-SXM4-40GB", 4)):
        model = get_catalog().model(model_name)
        assert model is not None
        got = layouts_for_model(spec, "all-1g.10gb", model)[0]
        assert got is not None and len(got) == count


def test_h200_nvl_has_no_all_1g35gb_entry() -> None:
    spec = read_mig_parted(MIG_PARTED)
    node = Node(name="h", platform="baremetal", orchestrator="kubernetes", gpus=[Gpu(index=0, model="H200-NVL-141GB")])
    warnings: list[str] = []
    assert mig_parted_layouts(spec, "all-1g.35gb", node, warnings) == {}
    assert any("no entry" in w for w in warnings)


def _node() -> Node:
    return Node(
        name="gpu-h100-01",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[
            Gpu(index=0, model="H100-SXM5-80GB"),
            Gpu(
                index=1,
                model="H100-SXM5-80GB",
                mode="mig",
                mig=[
                    MigInstance(profile="3g.40gb", start=4),
                    MigInstance(profile="2g.20gb", start=0),
                    MigInstance(profile="1g.10gb", start=2),
                ],
            ),
            Gpu(index=2, model="H100-SXM5-80GB", mode="time-sliced", replicas=4),
            Gpu(index=3, model="A30", mode="mig", mig=[MigInstance(profile="4g.24gb", start=0)]),
        ],
    )


def test_export_golden_and_round_trip() -> None:
    node = _node()
    exported = export_mig_parted([node, Node(name="cpu-only", platform="baremetal", orchestrator="kubernetes")])
    golden("mig-parted", exported)
    assert list(exported["mig-configs"]) == ["all-disabled", "gpuadmin-gpu-h100-01"]
    entries = exported["mig-configs"]["gpuadmin-gpu-h100-01"]
    assert entries[1] == {
        "device-filter": ["0x233010DE"],
        "devices": [1],
        "mig-enabled": True,
        "mig-devices": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1},
    }
    spec = parse_mig_parted(yaml.safe_dump(exported, sort_keys=False), "export.yaml")
    layouts = mig_parted_layouts(spec, "gpuadmin-gpu-h100-01", node)
    assert layouts[0] is None and layouts[2] is None
    assert layouts[1] is not None and sorted((i.profile, i.start) for i in layouts[1]) == [
        ("1g.10gb", 2),
        ("2g.20gb", 0),
        ("3g.40gb", 4),
    ]  # the engine re-finds this very placement
    assert layouts[3] is not None and [(i.profile, i.start) for i in layouts[3]] == [("4g.24gb", 0)]


def test_changes_for_a_node() -> None:
    spec = read_mig_parted(MIG_PARTED)
    changes = mig_parted_changes(spec, "all-disabled", _node())
    assert [(c.op, c.gpu) for c in changes] == [("set-mode", 1), ("set-mode", 3)]
    changes = mig_parted_changes(spec, "all-balanced", _node())
    assert [c.op for c in changes] == ["set-mig"] * 4


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", "unknown version: v2"),
        ("mig-configs: {a: [{devices: all, mig-enabled: false}]}\n", "missing 'version'"),
        ("version: v1\nmig-configs: {}\n", "at least one entry in 'mig-configs'"),
        ("version: v1\nmig-configs: {a: []}\n", "at least one entry in 'a'"),
        ("version: v1\nmig-configs: {a: [{mig-enabled: false}]}\n", "missing required field: devices"),
        ("version: v1\nmig-configs: {a: [{devices: all}]}\n", "missing required field: mig-enabled"),
        ("version: v1\nmig-configs: {a: [{devices: some, mig-enabled: false}]}\n", "invalid string input"),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}\n",
            "missing required field 'mig-devices' when 'mig-enabled' is true",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, mig-devices: {1g.5gb: 1}}]}\n",
            "MIG devices included when 'mig-enabled' is false",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {1x.5gb: 1}}]}\n",
            "invalid format for '1x.5gb'",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {1g.5gb: -1}}]}\n",
            "invalid count",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, color: red}]}\n",
            "unexpected field: color",
        ),
        ("version: v1\nother: 1\n", "unexpected field: other"),
        (
            "version: v1\nmig-configs: {a: [{devices: all, device-filter: zz, mig-enabled: false}]}\n",
            "unable to create DeviceID",
        ),
    ],
)
def test_validation_as_mig_parted(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as bad:
        parse_mig_parted(text, "c.yaml")
    assert str(bad.value).startswith("c.yaml:")


def test_profile_grammar() -> None:
    assert parse_profile("1g.24gb+me.all").attrs == ("me.all",)
    assert parse_profile("1g.24gb-me").sign == "-"
    assert parse_profile("1c.2g.10gb").gi_name == "2g.10gb"
    for bad in ("", "1g", "1g.5gb+", "1g.5gb+me,me", "1g.5gb+1me", "5g.5gb", "2c.1g.5gb", "1g.5gb+me-x"):
        with pytest.raises(ValueError):
            parse_profile(bad)


def test_profile_missing_on_model_and_no_fit_are_located() -> None:
    text = (
        "version: v1\nmig-configs:\n  x:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n"
        '        "4g.40gb": 2\n'
    )
    spec = parse_mig_parted(text, "x.yaml")
    h100 = get_catalog().model("H100-SXM5-80GB")
    a100 = get_catalog().model("A100-SXM4-40GB")
    assert h100 is not None and a100 is not None
    with pytest.raises(InputError, match=r"^x\.yaml:7:.*2 × 4g\.40gb has no valid placement"):
        layouts_for_model(spec, "x", h100)
    with pytest.raises(InputError, match=r"'4g\.40gb' does not exist on A100-SXM4-40GB"):
        layouts_for_model(spec, "x", a100)
    with pytest.raises(InputError, match="no mig-parted config named 'y'"):
        layouts_for_model(spec, "y", h100)


def test_compute_instance_profiles_round_trip_as_one_ci_per_gi() -> None:
    """mig-parted makes one GI per count with one CI in it: `1c.3g.40gb: 2` is two 3g GIs of one 1c CI each."""
    from gpuadmin.adapters import export_mig_parted, parse_mig_parted
    from gpuadmin.model import Node

    text = "version: v1\nmig-configs:\n  ci:\n    - devices: all\n      mig-enabled: true\n" \
           "      mig-devices: {\"1c.3g.40gb\": 2}\n"
    h100 = get_catalog().model("H100-SXM5-80GB")
    assert h100 is not None
    layout = layouts_for_model(parse_mig_parted(text, "ci.yaml"), "ci", h100)[0]
    assert layout is not None
    assert [(i.profile, i.start, i.compute_instances) for i in layout] == [
        ("3g.40gb", 0, ["1c.3g.40gb"]), ("3g.40gb", 4, ["1c.3g.40gb"])]
    node = Node(name="n", platform="baremetal", gpus=[{"index": 0, "model": h100.name, "mode": "mig",
                                                        "mig": [i.model_dump() for i in layout]}])
    assert export_mig_parted([node])["mig-configs"]["gpuadmin-n"][0]["mig-devices"] == {"1c.3g.40gb": 2}
