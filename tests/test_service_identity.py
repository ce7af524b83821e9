"""Who calls is read from the system once per process: the role checked is the identity's that stamps the job,
takes the write lock and signs the journal entry (issue 20 item 3; before, an apply read it five times)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.cli.main import run
from gpuadmin.service import Service
from gpuadmin.store import identity

SAMPLE = Path(__file__).resolve().parents[1] / "sample-inventories" / "oci-h100.yaml"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Each time the login identity is read from the system (`/proc/self/loginuid`, the first thing read)."""
    seen: list[int] = []
    real = identity.read_loginuid

    def counting(*args: object, **kwargs: object) -> int | None:
        seen.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(identity, "read_loginuid", counting)
    yield seen


def _cordon_file(tmp_path: Path) -> Path:
    path = tmp_path / "cordon.yaml"
    path.write_text("changes:\n  - {op: submit-job, job: {name: once, queue: research, request: {gpus: 1}}}\n"
                    "  - {op: cordon, node: gpu-h100-01}\n", encoding="utf-8")
    return path


def test_an_apply_command_reads_the_identity_once(tmp_path: Path, reads: list[int],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    Service.init(state, SAMPLE)
    reads.clear()
    assert run(["--state", str(state), "apply", "-f", str(_cordon_file(tmp_path)), "--yes"]) == 0
    assert len(reads) == 1
    capsys.readouterr()


def test_a_service_reads_it_once_for_every_use_case(tmp_path: Path, reads: list[int]) -> None:
    state = tmp_path / "state"
    Service.init(state, SAMPLE)
    reads.clear()
    service = Service(state_dir=state)
    changes = service.load_changes(_cordon_file(tmp_path))
    service.submit(service.plan(changes), confirmed=True)
    service.save_plan(service.plan([]), tmp_path / "plan.json")
    service.plan_saved(tmp_path / "plan.json")
    reversal = service.undo()
    service.submit(reversal.plan, confirmed=reversal.plan.confirmation_token, intent=reversal.intent)
    assert len(reads) == 1
    entries = service.journal()
    assert {e.actor for e in entries[-2:]} == {service.caller.identity.name}


def test_a_lowered_caller_stays_lowered_in_the_service(tmp_path: Path) -> None:
    """`--as-role viewer` resolved by the front end is the role the service it makes acts with."""
    from gpuadmin.service import NotPermitted, resolve_caller

    state = tmp_path / "state"
    Service.init(state, SAMPLE)
    service = Service(state_dir=state, caller=resolve_caller(state).lowered("viewer"))
    assert service.role == "viewer"
    with pytest.raises(NotPermitted, match="role viewer may not apply"):
        service.submit(service.plan(service.load_changes(_cordon_file(tmp_path))), confirmed=True)
