"""The console draws a dynamically shared full GPU (Run:ai-style fractions) as shared: who holds it, with what
share and memory, and what is left; a free GPU of a sharing node says fractions may share it."""

from __future__ import annotations

from gpuadmin.service import Service
from gpuadmin.tui.screens.node import NodeScreen
from tests.tui.tuikit import ROOT, filter_rows, make_app, press, screen_text, settle

OCI = ROOT / "sample-inventories" / "oci-h100.yaml"


async def test_node_screen_draws_fractions_on_a_shared_full_gpu() -> None:
    app = make_app(Service(inventory=OCI))
    async with app.run_test(size=(140, 60)) as pilot:
        await settle(pilot)
        await press(pilot, "colon", *"node gpu-h100-09", "enter")
        await settle(pilot)
        assert isinstance(app.screen, NodeScreen)
        text = screen_text(app)
        assert "nb-alice 0.5 39.6G" in text and "nb-chen 0.2022 16G" in text  # share and GiB per fraction
        assert "3.8G left" in text  # what is left of GPU 0's memory after the reserve
        assert "free (fractions may share it)" in text  # GPUs 3-7
        assert "shared" in text


async def test_gpus_view_lists_holders_with_share_and_memory() -> None:
    app = make_app(Service(inventory=OCI), view="gpus")
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "gpu-h100-09")
        await settle(pilot)
        text = screen_text(app)
        assert "shared by 3: 0.95 GPU used, 3.8 GiB left" in text
        assert "nb-alice(0.5, 39.6GiB)" in text
