"""The console's settings from files: themes (YAML, one per file) and the keymap.

Where they are looked for (later wins for the same theme name):
  gpuadmin/themes/*.yaml (in the package)       shipped with gpuadmin; an editable install reads <checkout>/themes
  $XDG_CONFIG_HOME/gpuadmin/themes/*.yaml       the operator's own (default ~/.config/gpuadmin/themes)
  $XDG_CONFIG_HOME/gpuadmin/keymap.yaml         binding id -> keys, e.g. `app.quit: "q,ctrl+c,x"`
  $XDG_CONFIG_HOME/gpuadmin/settings.yaml       what the console remembers: `theme: NAME` (written by `:theme`)

A file that does not read is an InputError naming it, the line and the field (exit 2 before the console
starts; a notification for `:theme`). The default theme follows the terminal: NO_COLOR picks the
high-contrast one, a 16-colour terminal (TERM=xterm, screen, linux) the ANSI one, anything else the dark.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, RootModel
from textual.theme import Theme

from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.service import load_model_file

# The top-level themes/ is the source; the build ships it inside the package as gpuadmin/themes (setup.py), which is
# where an installed wheel has it. An editable install runs from the checkout, where only the top-level folder exists.
CHECKOUT_THEMES = Path(__file__).resolve().parents[2] / "themes"
DEFAULT_DARK, DEFAULT_ANSI, DEFAULT_CONTRAST = "gpuadmin-dark", "gpuadmin-ansi", "gpuadmin-contrast"

ColorName = Annotated[str, Field(min_length=1, max_length=64)]


class ThemeFile(BaseModel):
    """A theme file's fields: Textual's Theme, checked strictly (a typo is an error, not ignored)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
    primary: ColorName
    secondary: ColorName | None = None
    warning: ColorName | None = None
    error: ColorName | None = None
    success: ColorName | None = None
    accent: ColorName | None = None
    foreground: ColorName | None = None
    background: ColorName | None = None
    surface: ColorName | None = None
    panel: ColorName | None = None
    boost: ColorName | None = None
    dark: bool = True
    ansi: bool = False
    variables: dict[str, ColorName] = Field(default_factory=dict)

    def to_theme(self) -> Theme:
        return Theme(**self.model_dump())


class Settings(BaseModel):
    """settings.yaml: what the console keeps between runs, read as strictly as a theme file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    theme: Annotated[str, Field(min_length=1, max_length=64)] | None = None


class Keymap(RootModel[dict[Annotated[str, Field(min_length=1)], Annotated[str, Field(min_length=1)]]]):
    """binding id -> comma-separated keys, e.g. `app.quit: "q,ctrl+c"`."""


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "gpuadmin"


def load_theme(path: Path) -> Theme:
    return load_model_file(path, ThemeFile).to_theme()


def shipped_themes_dir() -> Path:
    """The themes that come with gpuadmin: the package's own folder when installed, else the checkout's."""
    # files() of a package imported from the file system is a Path; anything else (a zip) has no themes to read here.
    packaged = files("gpuadmin") / "themes"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return CHECKOUT_THEMES


def theme_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    found: list[Path] = []
    for folder in (shipped_themes_dir(), config_dir(environ) / "themes"):
        if folder.is_dir():
            found += sorted(folder.glob("*.yaml"))
    return found


def load_themes(environ: Mapping[str, str] | None = None) -> dict[str, Theme]:
    themes: dict[str, Theme] = {}
    for path in theme_files(environ):
        theme = load_theme(path)
        themes[theme.name] = theme
    return themes


def default_theme(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return DEFAULT_CONTRAST
    forced = env.get("TEXTUAL_COLOR_SYSTEM", "")
    if forced in ("standard", "windows"):
        return DEFAULT_ANSI
    if forced in ("256", "truecolor"):
        return DEFAULT_DARK
    term = env.get("TERM", "")
    if env.get("COLORTERM", "") in ("truecolor", "24bit") or term.endswith(("-256color", "-direct")):
        return DEFAULT_DARK
    return DEFAULT_ANSI  # xterm, screen, linux, vt100, tmux without -256color: 16 colours


def load_keymap(known_ids: set[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`keymap.yaml`: binding id -> comma-separated keys. An unknown id is an error listing the known."""
    path = config_dir(environ) / "keymap.yaml"
    if not path.is_file():
        return {}
    keys = load_model_file(path, Keymap).root
    problems = [Diagnostic(f"unknown binding id {binding_id!r}", (binding_id,), "schema", str(path),
                           hint="`?` in the console lists every id")
                for binding_id in keys if binding_id not in known_ids]
    if problems:
        raise InputError(problems)
    return dict(keys)


def settings_path(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / "settings.yaml"


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """settings.yaml, or the defaults where there is none; a file that does not read is an InputError naming
    its line and field (exit 2 before the console starts)."""
    path = settings_path(environ)
    if not path.is_file():
        return Settings()
    return load_model_file(path, Settings)


def save_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> Path:
    """Write settings.yaml whole or not at all: a temporary file beside it, then renamed over it, so a console
    killed mid-write never leaves half a file for the next start to refuse. OSError if it cannot be written."""
    path = settings_path(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    # json.dumps writes a YAML double-quoted scalar: any theme name reads back as itself
    body = "".join(f"{key}: {json.dumps(value)}\n" for key, value in settings.model_dump(exclude_none=True).items())
    fd, temporary = tempfile.mkstemp(prefix=".settings-", suffix=".yaml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


__all__ = ["Settings", "config_dir", "default_theme", "load_keymap", "load_settings", "load_theme", "load_themes",
           "save_settings", "settings_path"]
