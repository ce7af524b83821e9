"""Issue 21, point 16f: which locales get the ASCII console, and what ASCII the console draws with."""

from __future__ import annotations

import pytest

from gpuadmin.cli.cmd_tui import locale_is_utf8
from gpuadmin.render.text import to_ascii


@pytest.mark.parametrize(("environ", "utf8"), [
    ({"LANG": "C.UTF-8"}, True),
    ({"LANG": "en_US.utf8"}, True),
    ({"LANG": "de_DE.UTF-8@euro"}, True),
    ({"LANG": "C"}, False),
    ({"LANG": "POSIX"}, False),
    ({"LANG": "en_US.ISO-8859-1"}, False),
    ({}, False),  # no locale at all is the C locale
    ({"LANG": "C.UTF-8", "LC_ALL": "C"}, False),  # LC_ALL wins
    ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, True),  # LC_CTYPE before LANG
    ({"LC_ALL": "", "LANG": "C.UTF-8"}, True),  # an empty variable is not set
])
def test_locale_is_utf8(environ: dict[str, str], utf8: bool) -> None:
    assert locale_is_utf8(environ) is utf8


def test_to_ascii_keeps_widths_and_never_makes_one_name_another() -> None:
    drawn = "\u256d\u2500 help \u2500\u256e\u2502\u258a\u2594\u2581\u2026 \u2717 gp\u00fc \u540d"
    assert to_ascii(drawn) == "+- help -+||--~ x gp? ??"
    assert to_ascii("plain ascii") == "plain ascii"
