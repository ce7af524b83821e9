"""Saved plans (`plan --save`, `apply --plan`) against a file someone else prepared: the save never writes into a
file or link it did not create, and the apply reads only plain, finite JSON made on this very state by the file's
owner, saying whose plan it is when that is not the caller. Real CLI, real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuadmin.store import Store
from tests.cli.clikit import SAMPLES, Result, gpuadmin, state_from

CORDON = "changes:\n  - {op: cordon, node: gpu-h100-12}\n"
NOBODY = 65534


def _changes(tmp_path: Path, text: str = CORDON) -> Path:
    path = tmp_path / "changes.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _saved(state: Path, tmp_path: Path, name: str = "plan.json") -> Path:
    path = tmp_path / name
    done = gpuadmin("--state", state, "plan", "-f", _changes(tmp_path), "--save", path)
    assert done.code == 0, done.err
    return path


def _untouched(state: Path) -> None:
    with Store.open(state) as store:
        assert store.revision() == 0
        assert len(store.journal()) == 1, "refused before anything was planned against the state"


def _one_line(result: Result) -> str:
    assert "Traceback" not in result.err, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    return lines[0]


EXISTS = ("not saved: the path exists (gpuadmin never writes into a file or link it did not just create) (hint: "
          "pick a new name, or pass --force to replace it)")


@pytest.mark.parametrize("planted", ["file", "symlink", "dangling-symlink"])
def test_save_never_writes_through_what_is_at_the_path(planted: str, state: Path, tmp_path: Path) -> None:
    victim, path = tmp_path / "victim", tmp_path / "plan.json"
    if planted == "file":  # say, a viewer's: saving into it would keep its owner, who could then rewrite it
        path.write_text("{}", encoding="utf-8")
        victim = path
    else:
        if planted == "symlink":
            victim.write_text("precious\n", encoding="utf-8")
        path.symlink_to(victim)
    before = victim.read_bytes() if victim.exists() else None
    done = gpuadmin("--state", state, "plan", "-f", _changes(tmp_path), "--save", path)
    assert done.code == 2, done.err
    assert done.err.splitlines()[-1] == f"{path}: {EXISTS}"
    assert (victim.read_bytes() if victim.exists() else None) == before
    # --force replaces the path itself (the link, not what it points to) with a new file of the caller's
    forced = gpuadmin("--state", state, "plan", "-f", _changes(tmp_path), "--save", path, "--force")
    assert forced.code == 0, forced.err
    assert not path.is_symlink() and path.stat().st_uid == os.geteuid() and path.stat().st_nlink == 1
    assert json.loads(path.read_text(encoding="utf-8"))["changes"] == [{"op": "cordon", "node": "gpu-h100-12"}]
    if planted != "file":
        assert (victim.read_bytes() if victim.exists() else None) == before
    assert gpuadmin("--state", state, "apply", "--plan", path, "--yes").code == 0


def test_a_saved_plan_records_its_author_and_state(state: Path, tmp_path: Path) -> None:
    data = json.loads(_saved(state, tmp_path).read_text(encoding="utf-8"))
    with Store.open(state) as store:
        lineage = store.lineage()
    import pwd

    assert data["author"] == {"uid": os.geteuid(), "name": pwd.getpwuid(os.geteuid()).pw_name}
    assert data["lineage"] == lineage and data["base_revision"] == 0


def _edited(saved: Path, edit: str) -> None:
    """`edit` applied to the saved JSON text: what a hand, or another user, may do to it."""
    text = saved.read_text(encoding="utf-8")
    if edit == "base_revision: 0.9":
        text = text.replace('"base_revision": 0', '"base_revision": 0.9')
    elif edit == "base_revision: true":
        text = text.replace('"base_revision": 0', '"base_revision": true')
    elif edit == "base_revision: '0'":
        text = text.replace('"base_revision": 0', '"base_revision": "0"')
    elif edit == "base_revision: 1e400":
        text = text.replace('"base_revision": 0', '"base_revision": 1e400')
    elif edit == "a fraction of 1e400":
        text = text.replace('"node": "gpu-h100-12"', '"node": "gpu-h100-12", "x": 1e400')
    elif edit == "NaN":
        text = text.replace('"base_revision": 0', '"base_revision": NaN')
    elif edit == "a 5000-digit integer":
        text = text.replace('"base_revision": 0', '"base_revision": ' + "9" * 5000)
    elif edit == "100k-deep JSON":
        text = text.replace('"violations": []', '"violations": ' + "[" * 100_000 + "]" * 100_000)
    elif edit == "not UTF-8":
        saved.write_bytes(text.encode("utf-8").replace(b'"gpu-h100-12"', b'"gpu-h100-\xff"', 1))
        return
    elif edit == "not an object":
        text = "[" + text + "]"
    elif edit == "no author":
        data = json.loads(text)
        del data["author"]
        text = json.dumps(data)
    elif edit == "an unknown op":
        text = text.replace('"op": "cordon"', '"op": "format-disk"', 1)
    else:
        raise AssertionError(edit)
    saved.write_text(text, encoding="utf-8")


MALFORMED = {
    "base_revision: 0.9": ": base_revision: not a saved gpuadmin plan: Input should be a valid integer",
    "base_revision: true": ": base_revision: not a saved gpuadmin plan: Input should be a valid integer",
    "base_revision: '0'": ": base_revision: not a saved gpuadmin plan: Input should be a valid integer",
    "base_revision: 1e400": ": not a saved gpuadmin plan: 1e400 is out of range",
    "a fraction of 1e400": ": not a saved gpuadmin plan: 1e400 is out of range",
    "NaN": ": not a saved gpuadmin plan: NaN is not a number a plan holds",
    "a 5000-digit integer": ": not a saved gpuadmin plan: Exceeds the limit (4300 digits) for integer string",
    "100k-deep JSON": ": not a saved gpuadmin plan: nested deeper than 64 levels",
    "not UTF-8": ": not a saved gpuadmin plan: not UTF-8 text",
    "not an object": ": not a saved gpuadmin plan: not a JSON object",
    "no author": ": author: not a saved gpuadmin plan: Field required",
    "an unknown op": ": changes[0]: not a saved gpuadmin plan: Input tag 'format-disk' found using 'op' does not match",
}


@pytest.fixture(scope="module")
def refusing_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One state for every malformed plan: each test checks the state untouched after its own refusal, so one that
    changed it would fail there (an init per case was most of these tests' time)."""
    return state_from("oci-h100.yaml", tmp_path_factory.mktemp("refusing") / "state")


@pytest.mark.parametrize("edit", MALFORMED)
def test_a_malformed_saved_plan_is_exit_2_and_applies_nothing(edit: str, refusing_state: Path,
                                                              tmp_path: Path) -> None:
    state = refusing_state
    saved = _saved(state, tmp_path)
    _edited(saved, edit)
    done = gpuadmin("--state", state, "apply", "--plan", saved, "--yes")
    assert done.code == 2, done.err
    line = _one_line(done)
    assert line.startswith(str(saved)) and MALFORMED[edit] in line, line
    _untouched(state)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_saved_plan_that_is_not_a_file_is_exit_2(kind: str, state: Path, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()  # a FIFO with no writer must not hang the apply
    done = gpuadmin("--state", state, "apply", "--plan", path, "--yes")
    assert done.code == 2, done.err
    assert _one_line(done).startswith(str(path)), done.err
    _untouched(state)


def test_a_plan_of_another_state_is_refused(state: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert gpuadmin("--state", other, "init", "--from", SAMPLES / "oci-h100.yaml").code == 0
    saved = _saved(other, tmp_path)  # same inventory, same revision, same changes: another state all the same
    refused = (f"{saved}: this plan was made on another state (or on this one before `init --force` replaced it), "
               f"not on {state} (hint: plan the changes again on this state)")
    done = gpuadmin("--state", state, "apply", "--plan", saved, "--yes")
    assert done.code == 2 and _one_line(done) == refused, done.err
    _untouched(state)
    # the same state, replaced by `init --force` since: its plans are of a state that is gone
    mine = _saved(state, tmp_path, "mine.json")
    assert gpuadmin("--state", state, "init", "--from", SAMPLES / "oci-h100.yaml", "--force").code == 0
    done = gpuadmin("--state", state, "apply", "--plan", mine, "--yes")
    assert done.code == 2 and _one_line(done) == refused.replace(str(saved), str(mine)), done.err


def test_a_plan_whose_file_belongs_to_someone_else_than_its_author_is_refused(state: Path, tmp_path: Path) -> None:
    """The file says root made it, but another user owns (so wrote) it: the kernel's word wins."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    saved = _saved(state, tmp_path)
    os.chown(saved, NOBODY, -1)
    done = gpuadmin("--state", state, "apply", "--plan", saved, "--yes")
    assert done.code == 2, done.err
    assert "refusing the saved plan: it says root (uid 0) made it, but the file belongs to " in _one_line(done)
    _untouched(state)


def test_another_users_plan_says_whose_it_is_and_shows_its_diff_even_with_yes(state: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    import pwd

    saved = _saved(state, tmp_path)
    data = json.loads(saved.read_text(encoding="utf-8"))
    data["author"] = {"uid": NOBODY, "name": "whoever"}
    saved.write_text(json.dumps(data), encoding="utf-8")
    os.chown(saved, NOBODY, -1)
    done = gpuadmin("--state", state, "apply", "--plan", saved, "--yes")
    assert done.code == 0, done.err
    name = pwd.getpwuid(NOBODY).pw_name  # the user database's name, not what the file says
    assert done.err.splitlines()[0] == (f"gpuadmin: this plan was saved by {name} (uid {NOBODY}), not by you: read "
                                        "what it does before it is applied")
    assert "gpu-h100-12" in done.out and "cordon" in done.out  # the plan and its diff, on stdout
