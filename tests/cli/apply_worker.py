"""One of the concurrent appliers of test_cli_process: N `gpuadmin apply` runs through the CLI's `run`.

Each apply submits a uniquely named job. A loser must exit 3 with a message naming the lock holder or the
stale revision; anything else is recorded as a bad loss. Prints a JSON summary.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

from gpuadmin.cli.main import run


def main() -> None:
    state, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    won: list[str] = []
    bad: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(count):
            name = f"w{worker}-{i}"
            change = Path(tmp) / f"{name}.yaml"
            change.write_text(
                f"changes: [{{op: submit-job, job: {{name: {name}, queue: interns, request: {{gpus: 1}}}}}}]\n",
                encoding="utf-8")
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = run(["--state", state, "apply", "-f", str(change), "--yes"])
            message = err.getvalue()
            if code == 0:
                won.append(name)
            elif code != 3 or not ("locked by" in message or "stale" in message):
                bad.append(f"exit {code}: {message.strip()[-200:]}")
    print(json.dumps({"won": len(won), "jobs": won, "bad_losses": bad}))


if __name__ == "__main__":
    main()
