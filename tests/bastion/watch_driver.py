"""A viewer's live watch, as the console does it: print the revision, then each move of the state as a JSON line
(`python -m tests.bastion.watch_driver STATE_DIR`, run as the viewer). Stops after 30 s."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gpuadmin.service import Service


def main() -> None:
    service = Service(state_dir=Path(sys.argv[1]))
    assert service.store is not None
    revision = service.revision()
    print(json.dumps({"revision": revision, "role": service.role, "writable": service.store.writable}), flush=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        moved = service.changes_since(revision)
        if moved.revision != revision:
            revision = moved.revision
            service.refresh()
            nodes = [name for kind, name in moved.touched if kind == "node"]
            state = service.state.nodes[nodes[0]].state if nodes else None
            print(json.dumps({"revision": revision, "touched": sorted([list(t) for t in moved.touched]),
                              "state": state}), flush=True)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
