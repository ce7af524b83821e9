"""The pure parts of the vCenter binding, which need no simulator: vCenter's ESXi version as the inventory writes
it, and the server URL's checks (the rest is tested against the simulator: test_vcenter_read.py)."""

from __future__ import annotations

import pytest

from gpuadmin.cluster.vcenter import VcenterAddress, parse_server
from gpuadmin.cluster.vcenter_inventory import esxi_version
from gpuadmin.errors import InputError


@pytest.mark.parametrize(("reported", "written"), [
    ("8.0.1", "8.0U1"), ("8.0.3", "8.0U3"), ("7.0.3", "7.0U3"), ("8.0.0", "8.0"), ("9.0.0", "9.0"),
    ("8.0", None), ("8.0.1a", None), ("", None), (None, None), ("8.0.1\u202e", None)])
def test_the_esxi_version_is_written_as_the_inventory_writes_it(reported: str | None, written: str | None) -> None:
    assert esxi_version(reported) == written


@pytest.mark.parametrize(("given", "address"), [
    ("vc.example.com", VcenterAddress("vc.example.com", 443, "/sdk")),
    ("https://vc.example.com:8443", VcenterAddress("vc.example.com", 8443, "/sdk")),
    ("https://127.0.0.1:18443/sdk/", VcenterAddress("127.0.0.1", 18443, "/sdk")),
    ("https://[::1]:443", VcenterAddress("::1", 443, "/sdk"))])
def test_a_server_is_an_https_address(given: str, address: VcenterAddress) -> None:
    assert parse_server(given) == address
    assert address.server.startswith("https://") and address.server.endswith(f":{address.port}")


@pytest.mark.parametrize("given", ["http://vc.example.com", "https://admin:secret@vc.example.com", "https://",
                                   "https://vc.example.com:99999"])
def test_anything_else_is_bad_input_that_never_repeats_a_password(given: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_server(given)
    assert "secret" not in str(refused.value)
