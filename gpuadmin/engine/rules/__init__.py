"""The isolation engine's rule catalog (DESIGN §5). Importing this package registers every rule family, so
`RULES` is complete; docs/rules.md is generated from it (tests/engine/rules/test_docs.py keeps it in step)."""

from gpuadmin.engine.rules import (  # noqa: F401  (imported to register their rules)
    device_groups,
    mig,
    modes,
    nodes,
    placement,
    quota,
    vgpu,
    vsphere,
)
from gpuadmin.engine.rules.base import RULES, Rule, Scope, Touched, Violation, check, expand

__all__ = ["RULES", "Rule", "Scope", "Touched", "Violation", "check", "expand"]
