"""Issue 21 point 18: every change op has an imperative command (`gpuadmin cordon NODE...`) built from the op
registry, going the way `apply -f` goes; `schedule` shows its plan before it asks; `apply -f -` reads stdin."""

from __future__ import annotations

import importlib
import json
import os
import pty
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuadmin.cli import verb_table
from gpuadmin.cli.main import run
from gpuadmin.engine.ops import OPS, NoVerb, Verb
from tests.cli.clikit import ROOT, SAMPLES, gpuadmin, state, state_from
from tests.cli.test_golden import UPDATE, check_golden, invoke
from tests.cli.verbtable import MARK_END, MARK_START, TABLE, expected_verbs, markdown, render

__all__ = ["state"]  # the fixture

OCI = str(SAMPLES / "oci-h100.yaml")
SAMPLE_FILES = ("oci-h100.yaml", "vsphere-hgx.yaml", "k8s-mixed.yaml")
DOCS = ROOT / "docs" / "cli.md"
# Examples that plan but are refused on every sample, and why (each still names real things and parses).
REFUSED_EXAMPLES = {"assign-vgpu": "every vGPU-mode GPU of the samples is full, or in a device group no VM holds"}


def test_the_verb_table_is_the_registry() -> None:
    """The differential test: the stdlib table the parser reads is what the registry's records say."""
    if UPDATE:
        TABLE.write_text(render(), encoding="utf-8")
        importlib.reload(verb_table)
    assert expected_verbs() == verb_table.VERBS, "run with GPUADMIN_UPDATE_GOLDEN=1 to regenerate verb_table.py"
    assert TABLE.read_text(encoding="utf-8") == render()


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_op_has_a_verb_or_says_why(op: str) -> None:
    verb = OPS[op].verb
    assert isinstance(verb, Verb | NoVerb)
    if isinstance(verb, NoVerb):
        assert verb.why.strip()
        return
    fields = OPS[op].model.model_fields
    for arg in verb.args:  # each argument fills a field the op's model has
        assert ({"node", "gpu"} <= set(fields)) if arg.kind == "gpu" else arg.field.split(".")[0] in fields, arg


def test_verbs_are_distinct_and_shadow_no_command() -> None:
    words = [v.words for v in verb_table.VERBS]
    assert len(words) == len(set(words))
    commands = {"tui", "init", "validate", "get", "describe", "plan", "apply", "undo", "redo", "schedule", "explain",
                "import", "export", "whoami"}
    assert not commands & {w[0] for w in words}


@pytest.mark.parametrize("verb", verb_table.VERBS, ids=lambda v: v.op)
def test_every_verb_help_has_an_example(capsys: pytest.CaptureFixture[str], verb: verb_table.Verb) -> None:
    with pytest.raises(SystemExit) as done:
        run([*verb.words, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert re.search(r"^examples?:\n  gpuadmin " + re.escape(" ".join(verb.words)) + " ", out, re.M), out
    assert "exit codes: 0 " in out and "--dry-run" in out


@pytest.mark.parametrize("verb", verb_table.VERBS, ids=lambda v: v.op)
def test_every_verb_example_plans_on_a_sample(capsys: pytest.CaptureFixture[str], verb: verb_table.Verb) -> None:
    """The example parses and names real things: allowed on one of the samples (--dry-run added)."""
    for line in verb.example.split("\n"):
        words = [w for w in shlex.split(re.split(r"\s{3,}", line.strip())[0])[1:] if w != "--yes"]
        codes = [invoke(capsys, "--inventory", str(SAMPLES / sample), *words, "--dry-run")[0]
                 for sample in SAMPLE_FILES]
        if verb.op in REFUSED_EXAMPLES:
            assert 1 in codes and 0 not in codes, (line, codes)
        else:
            assert 0 in codes, (line, codes)


def test_docs_list_every_verb() -> None:
    text = DOCS.read_text(encoding="utf-8")
    if UPDATE:
        head, rest = text.split(MARK_START, 1)
        DOCS.write_text(head + markdown() + rest.split(MARK_END, 1)[1], encoding="utf-8")
        text = DOCS.read_text(encoding="utf-8")
    assert markdown() in text, "docs/cli.md's list of verbs drifted: GPUADMIN_UPDATE_GOLDEN=1 rewrites it"


# goldens: text, json and yaml, --dry-run allowed and refused ---------------------------------------------------

@pytest.mark.parametrize("name,argv,code", [
    ("verb-mig-dry-run.text", ["mig", "gpu-h100-08/4", "7g.80gb", "--dry-run"], 0),
    ("verb-cordon-dry-run.json", ["cordon", "gpu-h100-03", "gpu-h100-04", "--dry-run", "-o", "json"], 0),
    ("verb-quota-dry-run.yaml", ["quota", "research", "--quota", "24", "--limit", "40", "--dry-run", "-o", "yaml"], 0),
    ("verb-quota-refused.text", ["quota", "research", "--quota", "16", "--limit", "32", "--dry-run"], 1),
    ("verb-cordon-applied.text", ["cordon", "gpu-h100-03", "--yes"], 0),
])
def test_verb_goldens(capsys: pytest.CaptureFixture[str], name: str, argv: list[str], code: int) -> None:
    got, out, _ = invoke(capsys, "--no-color", "--inventory", OCI, *argv)
    assert got == code
    check_golden(name, out)


# the same path as apply -f ---------------------------------------------------------------------------------------

def _hash(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = invoke(capsys, "--inventory", OCI, *argv, "-o", "json")
    assert code == 0, err
    digest: str = json.loads(out)["hash"]
    return digest


@pytest.mark.parametrize("argv,changes", [
    (["cordon", "gpu-h100-03", "gpu-h100-04"], "[{op: cordon, node: gpu-h100-03}, {op: cordon, node: gpu-h100-04}]"),
    (["mig", "gpu-h100-12/3", "3g.40gb", "4g.40gb"],
     "[{op: set-mig, node: gpu-h100-12, gpu: 3, instances: [{profile: 3g.40gb}, {profile: 4g.40gb}]}]"),
    (["mig", "gpu-h100-12/3", "--layout", "all-balanced"],
     "[{op: set-mig, node: gpu-h100-12, gpu: 3, instances: [{profile: 2g.20gb, start: 0}, "
     "{profile: 1g.10gb, start: 2}, {profile: 1g.10gb, start: 3}, {profile: 3g.40gb, start: 4}]}]"),
    (["time-slice", "gpu-h100-12/3", "--replicas", "4"], "[{op: set-time-slicing, node: gpu-h100-12, gpu: 3, "
                                                         "replicas: 4}]"),
    (["quota", "research", "--quota", "24", "--limit", "40"],
     "[{op: set-quota, queue: research, quota: {gpus: 24}, limit: {gpus: 40}}]"),
    (["cancel", "eval-405b-shard"], "[{op: cancel-job, name: eval-405b-shard}]"),
])
def test_a_verb_plans_what_its_change_file_plans(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 argv: list[str], changes: str) -> None:
    file = tmp_path / "changes.yaml"
    file.write_text(f"changes: {changes}\n", encoding="utf-8")
    assert _hash(capsys, *argv, "--dry-run") == _hash(capsys, "plan", "-f", str(file))


def _node_state(state: Path, node: str) -> str:
    listing = json.loads(gpuadmin("--state", state, "get", "nodes", node, "-o", "json").out)
    value: str = listing["items"][0]["state"]
    return value


def test_a_verb_is_journaled_and_undone(state: Path) -> None:
    done = gpuadmin("--state", state, "cordon", "gpu-h100-03", "--yes")
    assert done.code == 0 and "applied, revision 1" in done.err, done.err
    journal = gpuadmin("--state", state, "get", "journal", "-o", "json")
    assert "gpuadmin --state" in journal.out and "cordon gpu-h100-03" in journal.out
    assert _node_state(state, "gpu-h100-03") == "cordoned"
    assert gpuadmin("--state", state, "undo", "--yes").code == 0
    assert _node_state(state, "gpu-h100-03") == "ready"


# exit codes -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def refusing_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One state for the usage errors: each test reads the journal before and after its own refusal, so one that
    changed the state would fail there (an init per case was a third of each test's time)."""
    return state_from("oci-h100.yaml", tmp_path_factory.mktemp("refusing") / "state")


def _revision(state: Path) -> str:
    return gpuadmin("--state", state, "get", "journal", "-o", "json").out


def test_refused_exits_1_and_changes_nothing(state: Path) -> None:
    before = gpuadmin("--state", state, "get", "queues", "-o", "json").out
    refused = gpuadmin("--state", state, "quota", "research", "--quota", "16", "--limit", "32", "--yes")
    assert refused.code == 1
    assert gpuadmin("--state", state, "get", "queues", "-o", "json").out == before


@pytest.mark.parametrize("argv,named", [
    (["time-slice", "gpu-h100-12/3", "--replicas", "0"], "argument --replicas: "),
    (["time-slice", "gpu-h100-12/3", "--replicas", "4x"], "argument --replicas: "),
    (["time-slice", "gpu-h100-12"], "argument NODE/GPU: "),
    (["mig", "gpu-h100-12/3"], "one of PROFILE, --layout is needed"),
    (["mig", "gpu-h100-12/3", "1g.10gb", "--layout", "all-balanced"], "PROFILE and --layout exclude each other"),
    (["mig", "gpu-h100-12/3", "--layout", "all-nonsense"], "argument --layout: 'all-nonsense' is not a layout"),
    (["mig", "gpu-h100-12/3", "1g.10gb@x"], "argument PROFILE: "),
    (["submit", "x", "--gpus", "8"], "argument --queue: Field required"),
    (["attach", "hpc-vm-01", "--node", "esx-legacy-01"], "one of --gpus, --device-group is needed"),
    (["sharing", "gpu-h100-12", "sometimes"], "argument FRACTIONS: invalid choice: 'sometimes'"),
])
def test_a_bad_argument_is_a_usage_error_naming_it(refusing_state: Path, argv: list[str], named: str) -> None:
    before = _revision(refusing_state)
    bad = gpuadmin("--state", refusing_state, *argv, "--yes")
    assert bad.code == 2, bad.err
    assert "usage: gpuadmin " in bad.err and named in bad.err, bad.err
    assert "Traceback" not in bad.err and _revision(refusing_state) == before


def test_a_viewer_is_stopped_before_the_state_is_opened_but_may_dry_run(state: Path) -> None:
    viewer = gpuadmin("--state", state, "--as-role", "viewer", "cordon", "gpu-h100-03", "--yes")
    assert viewer.code == 4, viewer.err
    assert gpuadmin("--state", state, "--as-role", "viewer", "cordon", "gpu-h100-03", "--dry-run").code == 0
    assert gpuadmin("--state", state, "--as-role", "operator", "quota", "research", "--quota", "24",
                    "--yes").code == 4  # set-quota needs an admin, as in a change file


def test_without_a_terminal_and_without_yes_a_verb_answers_as_apply(state: Path, tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("changes: [{op: cordon, node: gpu-h100-03}]\n", encoding="utf-8")
    verb = gpuadmin("--state", state, "cordon", "gpu-h100-03", stdin="")
    apply = gpuadmin("--state", state, "apply", "-f", file, stdin="")
    assert verb.code == apply.code == 2
    assert "needs --yes" in verb.err


def test_hostile_names_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(capsys, "--inventory", OCI, "cordon", "evil\x1b]0;owned\x07\x1b[2J", "--dry-run")
    assert code == 1
    assert "\x1b" not in out + err and "\x07" not in out + err
    bad = gpuadmin("--inventory", OCI, "mig", "n\x1b[31m/0x\x1b[2J", "1g.10gb", "--dry-run")
    assert bad.code == 2 and "argument NODE/GPU" in bad.err and "\x1b" not in bad.err


# apply -f - ------------------------------------------------------------------------------------------------------

def test_apply_reads_the_change_file_from_stdin(state: Path) -> None:
    done = gpuadmin("--state", state, "apply", "-f", "-", "--yes", stdin="changes: [{op: cordon, node: gpu-h100-03}]\n")
    assert done.code == 0, done.err
    assert _node_state(state, "gpu-h100-03") == "cordoned"
    bad = gpuadmin("--state", state, "plan", "-f", "-", stdin="changes:\n  - op: cordon\n    nodee: x\n")
    assert bad.code == 2 and "<stdin>:3:5: changes[0].nodee: unknown field" in bad.err, bad.err


# schedule: show, then ask ----------------------------------------------------------------------------------------

def _run_in_a_terminal(argv: list[str], answer: bytes, until: bytes, seconds: float = 60) -> tuple[int, bytes]:
    """The real process on a pseudo-terminal: what it wrote up to `until`, then `answer` typed; its exit code and
    everything it wrote."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI, its stdin, stdout and stderr on the terminal
        os.chdir(ROOT)
        os.environ["NO_COLOR"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "gpuadmin.cli.main", *argv])
    seen = b""
    deadline = time.monotonic() + seconds
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if not answered and until in seen:
            os.write(fd, answer)
            answered = True
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen


def test_schedule_shows_the_plan_before_it_asks(tmp_path: Path) -> None:
    state_dir = state_from("oci-h100.yaml", tmp_path / "state")
    journal = gpuadmin("--state", state_dir, "get", "journal").out
    code, seen = _run_in_a_terminal(["--state", str(state_dir), "schedule"], b"n\n", b"Apply this plan?")
    asked = seen.index(b"Apply this plan?")
    assert seen.index(b"Scheduling cycle (binpack):") < asked and seen.index(b"Diff:") < asked, seen
    assert code == 130  # "n": not confirmed, nothing applied
    assert gpuadmin("--state", state_dir, "get", "journal").out == journal


def test_a_verb_at_a_terminal_shows_then_asks(tmp_path: Path) -> None:
    state_dir = state_from("oci-h100.yaml", tmp_path / "state")
    code, seen = _run_in_a_terminal(["--state", str(state_dir), "cordon", "gpu-h100-03"], b"y\n",
                                    b"Apply this plan?")
    assert code == 0, seen
    assert seen.index(b"state: ready -> cordoned") < seen.index(b"Apply this plan?") < seen.index(b"applied")


# start-up: `gpuadmin --help` stays fast ----------------------------------------------------------------------------

def test_help_builds_no_verb_parser_and_imports_no_engine() -> None:
    """The parser is built on every start: a verb's arguments are added only when the command line names it,
    and the verb table is read without the engine (pydantic, the planner: ~0.3 s)."""
    code = ("import sys\nfrom gpuadmin.cli.main import build_parser\n"
            "sub = next(a for a in build_parser(['--help'])._actions if a.dest == 'command')\n"
            "built = {name for name, p in sub.choices.items() if p.description}\n"
            "print(sorted(built & {'cordon', 'mig', 'vgpu'}), 'pydantic' in sys.modules, "
            "'gpuadmin.engine.ops' in sys.modules)\n"
            "sub = next(a for a in build_parser(['cordon', 'x'])._actions if a.dest == 'command')\n"
            "print(sorted(n for n, p in sub.choices.items() if p.description and n in {'cordon', 'mig'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.splitlines() == ["[] False False", "['cordon']"]
