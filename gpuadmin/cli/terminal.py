"""The CLI's stderr as a stream on which no terminal escape can travel.

Diagnostics, warnings, prompts and errors name files, nodes, users and groups that gpuadmin did not choose;
`main` puts this stream in front of stderr so that every line written there, by any module (argparse's usage
errors too), passes through `gpuadmin.render.text.safe`, line by line (`safe_lines`). The writers still escape
the names they put in a line (`safe(name)`), so that a line break inside a name cannot start a line of its own;
this stream is what holds where one does not. gpuadmin never colours stderr: nothing meant for the terminal
is lost.
"""

from __future__ import annotations

import io
from typing import TextIO

from gpuadmin.render.text import safe_lines


class TerminalSafeStream(io.TextIOBase):
    """Writes to `stream` with every character a terminal would act on escaped, line breaks kept."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        # escaping is per character, so a line split over several writes is escaped the same
        self._stream.write(safe_lines(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors
