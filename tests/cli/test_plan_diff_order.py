"""The plan's diff lists a list's items in their order, and an emptied list only by its items.

Found by hand on the README's vCenter session: evacuating a host with 13 VMs printed `vms[10]`, `vms[11]`,
`vms[12]` between `vms[0]` and `vms[1]` (the paths sorted as text), and a line `vms: - -> []` beside the thirteen
VMs' own removals."""

from __future__ import annotations

from gpuadmin.render.plan import field_changes


def test_list_items_are_in_their_order_and_an_emptied_list_is_no_line_of_its_own() -> None:
    before = {"vms": [{"name": f"vm-{i}"} for i in range(12)], "state": "ready"}
    after = {"vms": [], "state": "draining"}
    paths = [path for path, _, _ in field_changes(before, after)]
    assert paths == ["state", *(f"vms[{i}].name" for i in range(12))]
    assert ("vms[11].name", "vm-11", None) in field_changes(before, after)


def test_nested_indices_compare_as_numbers_at_every_level() -> None:
    before = {"gpus": [{"vgpus": [{"vm": "a", "profile": "p"}], "slots": [{"n": i} for i in range(11)]}
                       for _ in range(11)]}
    paths = [path for path, _, _ in field_changes(before, {})]
    assert paths.index("gpus[2].slots[0].n") < paths.index("gpus[10].slots[0].n")
    assert paths.index("gpus[2].slots[2].n") < paths.index("gpus[2].slots[10].n")
    assert paths[0] == "gpus[0].slots[0].n" and "gpus[0].vgpus" in paths  # a compact list stays one line


def test_an_empty_list_against_a_missing_one_is_no_change() -> None:
    assert field_changes({"labels": [], "vgpus": []}, {}) == []
    assert field_changes({}, {"labels": ["a"]}) == [("labels", None, ["a"])]
