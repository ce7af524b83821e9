"""Issue 22's "done when": the README's "A live cluster" session runs as written against the API server double
that `make demo-cluster` serves (the same seeded cluster, here in-process on a free port, its kubeconfig where
the session expects it: `.demo/kubeconfig`, context `demo`), twice in a row — and what it claims holds: the cordon
was executed on the cluster (the double's Node is unschedulable, the real kubectl shows it), and the journal
tells the sync and the executed cordon."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kube import demo_cluster, seed
from tests.kube.apiserver_double import ApiServerDouble


def run_session(lines: list[str], workdir: Path) -> dict[str, str]:
    """Each line in bash from `workdir`, as a reader types them; `export` lines set the environment of the rest.
    The output of each command, by its line."""
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1",
           "HOME": str(workdir)}  # kubectl's discovery cache goes under HOME, not the user's
    outputs = {}
    for line in lines:
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value
            continue
        proc = subprocess.run(["bash", "-c", line], cwd=workdir, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"{line}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        outputs[line] = proc.stdout
    return outputs


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (Debian's kubernetes-client) is not installed")
def test_the_readme_live_cluster_session_runs_as_written_twice(tmp_path: Path) -> None:
    lines = demo_cluster.readme_session()
    assert any("init --from-cluster kubernetes" in line for line in lines), "no session in the README"
    cordoned = next(line.split()[line.split().index("cordon") + 1] for line in lines if " cordon " in line)
    cluster = seed.cluster_of(seed.load_sample("oci-h100.yaml"))
    with ApiServerDouble(mig_configs=cluster.mig_configs) as double:
        seed.seed(double, cluster)
        (tmp_path / ".demo").mkdir()
        double.write_kubeconfig(tmp_path / ".demo" / "kubeconfig", context=demo_cluster.CONTEXT)
        for _round in (1, 2):
            outputs = run_session(lines, tmp_path)
            assert (double.get("nodes", cordoned) or {})["spec"].get("unschedulable") is True
            kubectl = next(out for line, out in outputs.items() if line.startswith("kubectl "))
            row = next(row for row in kubectl.splitlines() if row.startswith(cordoned))
            assert "SchedulingDisabled" in row
            journal = next(out for line, out in outputs.items() if line.endswith("get journal"))
            assert "executed" in journal and "cordon" in journal
        assert ("patch", "nodes") in double.requests
