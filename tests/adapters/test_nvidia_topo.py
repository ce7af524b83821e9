"""nvidia-smi topo -m: the real 8× A100 NV12 matrix (NIC Legend style) and hand-made older-style matrices."""

from __future__ import annotations

import pytest
from adapters_support import TOPO, TOPO_MESH, fixture_bytes

from gpuadmin.adapters import apply_topology, parse_topology, read_topology
from gpuadmin.model import Gpu, Node, Rdma
from gpuadmin.model.diagnostics import InputError


def test_real_matrix_one_nvswitch_domain_of_eight() -> None:
    fixture_bytes(TOPO.name)
    topo = read_topology(TOPO)
    assert topo.gpus == list(range(8))
    assert topo.nvlink_domains == [list(range(8))]
    assert topo.nvlink_kind == "nvswitch"
    assert len(topo.nvlinks) == 28 and set(topo.nvlinks.values()) == {12}
    assert topo.nics == [f"mlx5_{i}" for i in range(8)]  # NIC0..NIC7 resolved through the NIC Legend


def test_real_matrix_nic_affinity_as_in_the_file() -> None:
    topo = read_topology(TOPO)
    assert topo.nic_affinity[0] == {
        "mlx5_0": "PXB",
        "mlx5_1": "PXB",
        "mlx5_2": "NODE",
        "mlx5_3": "NODE",
        "mlx5_4": "SYS",
        "mlx5_5": "SYS",
        "mlx5_6": "SYS",
        "mlx5_7": "SYS",
    }
    assert topo.nic_affinity[5]["mlx5_4"] == "PXB" and topo.nic_affinity[5]["mlx5_6"] == "NODE"
    closest = {g: topo.closest_nics(g) for g in topo.gpus}
    assert closest == {
        0: ["mlx5_0", "mlx5_1"],
        1: ["mlx5_0", "mlx5_1"],
        2: ["mlx5_2", "mlx5_3"],
        3: ["mlx5_2", "mlx5_3"],
        4: ["mlx5_4", "mlx5_5"],
        5: ["mlx5_4", "mlx5_5"],
        6: ["mlx5_6", "mlx5_7"],
        7: ["mlx5_6", "mlx5_7"],
    }
    assert topo.cpu_affinity == {
        **dict.fromkeys(range(4), "0-31,64-95"),
        **dict.fromkeys(range(4, 8), "32-63,96-127"),
    }
    assert topo.numa_affinity == {**dict.fromkeys(range(4), 0), **dict.fromkeys(range(4, 8), 1)}


OLD_STYLE_PAIRS = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tmlx5_0\tmlx5_1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV12\tSYS\tSYS\tPIX\tSYS\t0-15\t0\t\tN/A\n"
    "GPU1\tNV12\t X \tSYS\tSYS\tPIX\tSYS\t0-15\t0\t\tN/A\n"
    "GPU2\tSYS\tSYS\t X \tNV12\tSYS\tPHB\t16-31\t1\t\tN/A\n"
    "GPU3\tSYS\tSYS\tNV12\t X \tSYS\tPHB\t16-31\t1\t\tN/A\n"
    "mlx5_0\tPIX\tPIX\tSYS\tSYS\t X \tSYS\n"
    "mlx5_1\tSYS\tSYS\tPHB\tPHB\tSYS\t X \n"
    "\nLegend:\n\n  X    = Self\n"
)


def test_old_style_direct_nic_columns_and_pairs() -> None:
    topo = parse_topology(OLD_STYLE_PAIRS)
    assert topo.nics == ["mlx5_0", "mlx5_1"]
    assert topo.nvlink_domains == [[0, 1], [2, 3]]
    assert topo.nvlink_kind == "pairs"
    assert topo.closest_nics(2) == ["mlx5_1"] and topo.nic_affinity[2]["mlx5_1"] == "PHB"
    assert topo.numa_affinity == {0: 0, 1: 0, 2: 1, 3: 1}


def test_no_nvlink() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\t0-7\t0\nGPU1\tSYS\t X \t8-15\t1\n"
    topo = parse_topology(text)
    assert topo.nvlink_kind == "none" and topo.nvlink_domains == [[0], [1]] and topo.nics == []


def test_not_a_matrix() -> None:
    with pytest.raises(InputError, match="no header row"):
        parse_topology("hello\nworld\n", "t.txt")
    with pytest.raises(InputError, match="unknown link"):
        parse_topology(
            "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNVX\t0-7\t0\nGPU1\tNVX\t X \t0-7\t0\n"
        )


# The HGX A100 4-GPU layout (issue 19 point 8): 12 NVLinks per A100, 4 to each of 3 peers, no NVSwitch. Real
# output transcribed from NVIDIA/nccl-tests#331 (tests/adapters/fixtures/README.md); the board layout is in
# gpuadmin/catalog/data/platforms.yaml (HGX A100 4-GPU: nvlink direct, 12 links per GPU, topo matrix NV4).
def _a100_node(count: int, model: str = "A100-SXM4-40GB", **fields: object) -> Node:
    return Node.model_validate({"name": "n", "platform": "baremetal",
                                "gpus": [{"index": i, "model": model} for i in range(count)], **fields})


def test_four_gpu_nv4_mesh_is_direct_links_not_nvswitch() -> None:
    fixture_bytes(TOPO_MESH.name)
    topo = read_topology(TOPO_MESH)
    assert topo.gpus == [0, 1, 2, 3] and set(topo.nvlinks.values()) == {4} and len(topo.nvlinks) == 6
    assert topo.nvlink_domains == [[0, 1, 2, 3]]
    # 3 peers × NV4 = 12 links per GPU, all an A100 has: each peer over a third of them, so direct links
    assert {topo.links_per_gpu(g) for g in topo.gpus} == {12}
    updated, warnings = apply_topology(_a100_node(4), topo)
    assert updated.nvlink == "mesh"
    assert not any("NVLink" in w for w in warnings)


def test_eight_gpu_nv12_is_nvswitch_with_or_without_the_model() -> None:
    topo = read_topology(TOPO)  # real 8 × NV12: each GPU shows 84 links, an A100 has 12 — only a switch
    assert topo.nvlink_kind_for(12) == "nvswitch" and topo.nvlink_kind == "nvswitch"
    assert apply_topology(_a100_node(8, "A100-SXM4-80GB"), topo)[0].nvlink == "nvswitch"


def test_a_matrix_that_fits_both_readings_is_unknown_not_a_guess() -> None:
    topo = read_topology(TOPO_MESH)
    # 4 × NV4 on a GPU whose link count the catalog lacks: a switch with 4 links per GPU would print the same
    assert topo.nvlink_kind == "unknown"
    updated, warnings = apply_topology(_a100_node(4, "L40S"), topo)
    assert updated.nvlink == "unknown"
    assert any("fits no layout" in w and "nvlink set to unknown" in w for w in warnings)
    # a kind the node already has from other evidence stays, and the warning says so
    kept, warnings = apply_topology(_a100_node(4, "L40S", nvlink="pairs"), topo)
    assert kept.nvlink == "pairs" and any("kept nvlink: pairs" in w for w in warnings)


def test_pairs_in_another_order_and_partial_meshes_are_unknown() -> None:
    crossed = (
        "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tSYS\tNV12\tSYS\t0-15\t0\n"
        "GPU1\tSYS\t X \tSYS\tNV12\t0-15\t0\n"
        "GPU2\tNV12\tSYS\t X \tSYS\t0-15\t0\n"
        "GPU3\tSYS\tNV12\tSYS\t X \t0-15\t0\n"
    )
    assert parse_topology(crossed).nvlink_kind_for(12) == "unknown"  # pairs (0,2),(1,3): not the model's (0,1),(2,3)
    ring = (
        "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tNV2\tSYS\tNV2\t0-15\t0\n"
        "GPU1\tNV2\t X \tNV2\tSYS\t0-15\t0\n"
        "GPU2\tSYS\tNV2\t X \tNV2\t0-15\t0\n"
        "GPU3\tNV2\tSYS\tNV2\t X \t0-15\t0\n"
    )
    assert parse_topology(ring).nvlink_kind_for(12) == "unknown"  # one domain, not all-to-all


def test_a_topology_of_another_machine_is_refused() -> None:
    topo = read_topology(TOPO)  # 8 GPUs
    with pytest.raises(InputError) as caught:
        apply_topology(_a100_node(4), topo)
    message = str(caught.value)
    assert str(TOPO) in message and "8 GPUs" in message and "has 4" in message


def test_apply_topology_sets_nvlink_and_rdma() -> None:
    node = Node(name="n", platform="baremetal", gpus=[Gpu(index=i, model="A100-SXM4-80GB") for i in range(8)])
    topo = read_topology(TOPO)
    updated, warnings = apply_topology(node, topo)
    assert updated.nvlink == "nvswitch" and updated.rdma is None
    assert any("speed and network are unknown" in w for w in warnings)
    updated, warnings = apply_topology(node, topo, rdma_gbps=200, rdma_network="cluster-net-1")
    assert updated.rdma == Rdma(nics=8, gbps=200, network="cluster-net-1") and warnings == []
    kept = node.model_copy(update={"rdma": Rdma(nics=16, gbps=100, network="cn")})
    assert apply_topology(kept, topo)[0].rdma == Rdma(nics=8, gbps=100, network="cn")


# Written from the documented `topo -m` format (tests/adapters/fixtures/written/README.md): tab-separated, the
# header wrapped in ESC[4m … ESC[0m as real terminals get it, 12 NICs on an 8-GPU HGX node (NIC8–NIC11 on
# the CPU side), rows padded `0\t\tN/A` after NUMA Affinity as real output is.
WRITTEN = TOPO.parent / "written"
ESCAPES = WRITTEN / "topo_8x-h100_nv18_12nic_4-cpu-side_escapes.txt"
CGROUP = WRITTEN / "topo_8x-h100_nv18_12nic_cgroup-empty-affinity.txt"


def test_header_with_terminal_escapes_and_cpu_side_nics() -> None:
    assert "\x1b[4m" in ESCAPES.read_text(encoding="utf-8")  # the fixture really carries the escapes
    topo = read_topology(ESCAPES)
    assert topo.gpus == list(range(8)) and topo.nvlink_kind == "nvswitch"
    assert set(topo.nvlinks.values()) == {18}
    assert topo.nics == [f"mlx5_{i}" for i in range(12)]
    assert topo.cpu_side_nics == ["mlx5_8", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert topo.closest_nics(3) == ["mlx5_3"]
    assert topo.cpu_affinity[0] == "0-55,112-167" and topo.cpu_affinity[7] == "56-111,168-223"
    assert topo.numa_affinity == {**dict.fromkeys(range(4), 0), **dict.fromkeys(range(4, 8), 1)}
    assert topo.gpu_numa_id == dict.fromkeys(range(8))  # "N/A" after the padding tab


def test_cpu_side_nics_are_kept_as_nics_of_the_node() -> None:
    node = Node(name="hgx", platform="baremetal", gpus=[Gpu(index=i, model="H100-SXM5-80GB") for i in range(8)])
    updated, warnings = apply_topology(node, read_topology(ESCAPES), rdma_gbps=400, rdma_network="fabric")
    assert updated.rdma == Rdma(nics=12, gbps=400, network="fabric")
    assert updated.nvlink == "nvswitch"
    assert any("4 of the 12 NICs sit next to no GPU" in w and "mlx5_8" in w for w in warnings)


def test_empty_cpu_affinity_inside_a_cgroup_keeps_the_columns() -> None:
    topo = read_topology(CGROUP)
    assert topo.cpu_affinity == dict.fromkeys(range(8))
    assert topo.numa_affinity == {**dict.fromkeys(range(4), 0), **dict.fromkeys(range(4, 8), 1)}


def test_odd_cpu_affinity_text_is_kept_as_written() -> None:
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV4\t0,2,4-7 (cgroup)\tN/A\t\tN/A\n"
        "GPU1\tNV4\t X \t0,2,4-7 (cgroup)\tN/A\t\tN/A\n"
    )
    topo = parse_topology(text)
    assert topo.cpu_affinity == dict.fromkeys((0, 1), "0,2,4-7 (cgroup)")
    assert topo.numa_affinity == {0: None, 1: None} and topo.nvlink_kind == "pairs"
