"""Diagnostics: one problem found in an input, located by file, line, column and dotted path.

They live with the error root in `gpuadmin.errors` (every layer, the console included, reports them);
this module keeps the model's name for them."""

from gpuadmin.errors import Diagnostic, InputError, Kind, PathPart, dotted

__all__ = ["Diagnostic", "InputError", "Kind", "PathPart", "dotted"]
