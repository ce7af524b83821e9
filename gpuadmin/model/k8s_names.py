"""Kubernetes' own name rules that gpuadmin's own checks need, as the API server applies them (the OpenAPI
schema says only "string"). Each function returns the problems with a value, empty when it is valid, as
apimachinery's validators do (kubernetes/apimachinery pkg/util/validation/validation.go):

- `dns1123_subdomain_problems`: `IsDNS1123Subdomain` — at most 253 characters of lower-case DNS labels
  (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`) joined by `.`: node and most object names, and what the device plugin
  allows after `nvidia.com/` in a resource name;
- `label_value_problems`: `IsValidLabelValue` — empty, or at most 63 characters
  `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`;
- `qualified_name_problems`: `IsQualifiedName` — a label's, a taint's or a toleration's key: an optional DNS-1123
  subdomain prefix and `/`, then a name of at most 63 characters of a label value's charset.

The whole value must match (`fullmatch`): a regex `$` would let a trailing newline through.
"""

from __future__ import annotations

import re

DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*")
#: the charset of a label value, and of the name part of a qualified name (label keys, resource names)
NAME_PART = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_RE = re.compile(NAME_PART)


def dns1123_subdomain_problems(value: str) -> list[str]:
    problems = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        problems.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        problems.append("a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                        "and must start and end with an alphanumeric character")
    return problems


def label_value_problems(value: str) -> list[str]:
    problems = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if value and not _LABEL_VALUE_RE.fullmatch(value):
        problems.append("a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', and "
                        "must start and end with an alphanumeric character")
    return problems


def qualified_name_problems(value: str) -> list[str]:
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return ["prefix part must be non-empty"]
    problems = dns1123_subdomain_problems(prefix) if prefix else []
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > LABEL_VALUE_MAX or not _LABEL_VALUE_RE.fullmatch(name):
        problems.append(f"name part must be no more than {LABEL_VALUE_MAX} characters of alphanumerics, '-', '_' "
                        "or '.', starting and ending with an alphanumeric character")
    return problems
