"""Enter opens the thing under the cursor in every view (issue 21, point 11): a GPU opens at that GPU, a held
slice its job; the topology view is a tree with a cursor (k9s's xray): node -> NVLink domain / device group ->
GPU -> slice -> holder, expanded and collapsed with → and ←."""

from __future__ import annotations

from typing import Any

from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.topology import TopologyScreen
from gpuadmin.tui.widgets.boards import BoardsView
from tests.tui.tuikit import drawing_text, filter_rows, make_app, press, screen_text, settle

SIZE = (100, 30)


def cursor_line(app: GpuadminApp) -> str:
    tree = app.screen.query_one(BoardsView)
    return tree.line(tree.cursor).plain


async def cursor_to(pilot: Any, text: str) -> None:
    """Move the topology's cursor down (the real key) to the first line holding `text`."""
    app = pilot.app
    for _ in range(60):
        if text in cursor_line(app):
            return
        await press(pilot, "down")
    raise AssertionError(f"no line with {text!r}")


def opened_at(app: GpuadminApp, node: str, gpu: int | None) -> None:
    screen = app.screen
    assert isinstance(screen, NodeScreen), type(screen).__name__
    assert (screen.node, screen.gpu) == (node, gpu)


async def test_enter_on_a_gpu_opens_its_node_at_that_gpu() -> None:
    app = make_app(view="gpus")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "node=gpu-h100-07")
        await press(pilot, "down", "down", "enter")  # gpu-h100-07/2
        opened_at(app, "gpu-h100-07", 2)
        text = screen_text(app)
        assert "> GPU 2 H100-SXM5-80GB" in text
        assert text.index("> GPU 2") < text.index("GPU 3 H100")  # scrolled to it, the GPUs after below
        assert app.screen.crumb() == "gpu-h100-07/2"  # the header's breadcrumb says where
        await press(pilot, "d")
        assert isinstance(app.screen, DescribeScreen) and app.screen.title_text == "gpu gpu-h100-07/2"


async def test_enter_on_a_slice_opens_its_job_or_its_gpu() -> None:
    app = make_app(view="slices")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "holders=vit-h-pretrain")
        await press(pilot, "enter")
        assert isinstance(app.screen, DescribeScreen) and app.screen.title_text == "job vit-h-pretrain"
        await press(pilot, "escape", "escape")
        await filter_rows(pilot, "node=gpu-h100-09")  # the first: shared by nb-alice and nb-bob
        await press(pilot, "enter")
        opened_at(app, "gpu-h100-09", 0)
        await press(pilot, "escape")
        await filter_rows(pilot, "node=gpu-h100-07,holders!=reranker-serve")
        await press(pilot, "enter")  # a free MIG instance: its GPU
        opened_at(app, "gpu-h100-07", 0)


async def test_the_topology_has_a_cursor_and_enter_opens_the_node() -> None:
    app = make_app(view="topology")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert screen_text(app).splitlines()[1].strip() == "> - gpu-h100-01  baremetal  ready"
        await press(pilot, "down")
        assert "NVSwitch domain" in cursor_line(app)
        await press(pilot, "d")  # describes what the line belongs to
        assert isinstance(app.screen, DescribeScreen) and app.screen.title_text == "node gpu-h100-01"
        await press(pilot, "escape", "enter")
        opened_at(app, "gpu-h100-01", None)


async def test_the_topology_tree_opens_down_to_the_holder() -> None:
    app = make_app(view="topology")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        before = drawing_text(app)
        assert "GPU 0 H100-SXM5-80GB  mig" not in before  # GPUs start shut
        await cursor_to(pilot, "gpu-h100-07")
        await cursor_to(pilot, "NVSwitch domain: [0 1 2 3]")
        assert ">   + NVSwitch domain: [0 1 2 3]" in screen_text(app)  # the cursor's `>`; `+`: shut
        await press(pilot, "right", "down")
        assert "GPU 0 H100-SXM5-80GB  mig" in cursor_line(app)
        await press(pilot, "l", "down")
        assert "MIG 2g.20gb@0 -> job reranker-serve" in cursor_line(app)
        await press(pilot, "right", "down")
        assert cursor_line(app).strip() == "job reranker-serve"
        await press(pilot, "enter")
        assert isinstance(app.screen, DescribeScreen) and app.screen.title_text == "job reranker-serve"
        await press(pilot, "escape")
        await press(pilot, "left")  # a leaf: to its parent
        assert "MIG 2g.20gb@0" in cursor_line(app)
        await press(pilot, "left", "up", "enter")  # shut it; on the GPU, Enter: the node at that GPU
        opened_at(app, "gpu-h100-07", 0)
        await press(pilot, "escape", "left", "left")  # shut the GPU; to the domain
        await press(pilot, "left")  # shut the domain: as it was
        assert drawing_text(app) == before


async def test_the_tree_shows_device_groups_with_their_gpus_and_vms() -> None:
    app = make_app(view="topology")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await cursor_to(pilot, "device group 2: dg-b [4 5] -> vm train-vm-03")
        await press(pilot, "right", "down")
        assert "GPU 4 A100-SXM4-80GB  vgpu" in cursor_line(app)
        await press(pilot, "right", "down")
        assert "vGPU A100DX-80C -> vm train-vm-03" in cursor_line(app)
