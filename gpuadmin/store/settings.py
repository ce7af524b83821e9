"""The state's settings (`gpuadmin config`): a small JSON object of text values, `settings.json` beside
`state.db` in the state directory.

A file beside the database rather than a table in it: a setting says where gpuadmin reads from (the Prometheus
URL), not what the cluster is, so it has no revision, no journal entry and no undo, and it changes no plan; and
the database's schema stays the cluster's. It is written whole, to a temporary file opened as every state file
is (`shared.open_state_file`: no link followed, the directory's mode) and renamed over the old one, so a reader
sees the old settings or the new, never half. Read back, it is checked as hostile: a regular file of a trusted
owner, at most 64 KiB, a JSON object of strings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuadmin.store.errors import StateCorrupt, from_os_error
from gpuadmin.store.shared import check_state_file, open_state_file

SETTINGS_NAME = "settings.json"
MAX_SETTINGS_BYTES = 64 * 1024


def read_settings(state_dir: Path) -> dict[str, str]:
    """The settings, {} where none were ever set."""
    path = state_dir / SETTINGS_NAME
    if not os.path.lexists(path):
        return {}
    check_state_file(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SETTINGS_BYTES + 1)
    except OSError as exc:
        raise from_os_error(path, exc) from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise StateCorrupt(f"{path}: over {MAX_SETTINGS_BYTES // 1024} KiB; not gpuadmin's settings")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise StateCorrupt(f"{path}: not JSON; remove it and set the settings again") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise StateCorrupt(f"{path}: not an object of text settings; remove it and set them again")
    return data


def write_settings(state_dir: Path, settings: dict[str, str]) -> None:
    """Replace the settings whole."""
    path = state_dir / SETTINGS_NAME
    temporary = state_dir / f".{SETTINGS_NAME}.new"
    data = (json.dumps(settings, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()
    fd = open_state_file(temporary, os.O_WRONLY | os.O_TRUNC)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise from_os_error(path, exc) from None
