"""Change files read with the same located errors as inventories (the union tag never shows in a path)."""

from __future__ import annotations

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.model.diagnostics import InputError
from gpuadmin.store import parse_changes


def errors(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse_changes(text, "c.yaml")
    return [str(d) for d in caught.value.diagnostics]


def test_valid_change_file_parses_every_op_shape() -> None:
    parsed = parse_changes(
        "changes:\n"
        "  - {op: set-mig, node: n1, gpu: 0, instances: [{profile: 3g.40gb}, {profile: 4g.40gb, start: 0}]}\n"
        "  - {op: cordon, node: n1}\n"
        "  - {op: submit-job, job: {name: j, queue: q, request: {fraction: 0.5}}}\n"
        "  - {op: restore, kind: queue, name: q}\n", "c.yaml")
    assert [type(c) for c in parsed] == [ch.SetMig, ch.Cordon, ch.SubmitJob, ch.Restore]
    assert isinstance(parsed[0], ch.SetMig) and parsed[0].instances[0].start is None


def test_errors_name_line_column_and_field_without_the_op_tag() -> None:
    found = errors("changes:\n"
                   "  - {op: set-mig, node: n1, gpu: yes, instances: []}\n"
                   "  - op: cordon\n"
                   "    nodes: n2\n")
    assert found[0] == "c.yaml:2:34: changes[0].gpu: expected an integer, got the string 'yes'"
    assert any(e.startswith("c.yaml:4:5: changes[1].nodes: unknown field 'nodes'") for e in found), found
    assert any("changes[1]" in e and "missing required field 'node'" in e for e in found), found
    assert not any("set-mig" in e.split(":")[3] for e in found), "the union tag is not part of the path"


def test_unknown_op_names_the_choices() -> None:
    (only,) = errors("changes:\n  - {op: cordn, node: n1}\n")
    assert only.startswith("c.yaml:2:")
    assert "unknown op 'cordn'" in only and "did you mean cordon" in only


def test_yaml_surprises_in_change_files() -> None:
    found = errors("changes:\n  - {op: cordon, node: n1, node: n2}\n")
    assert any("duplicate key 'node'" in e and "c.yaml:2:" in e for e in found), found
    found = errors("changes:\n  - {op: set-time-slicing, node: n1, gpu: 0, replicas: 010}\n")
    assert any("c.yaml:2:" in e and "octal" in e.lower() for e in found), found
