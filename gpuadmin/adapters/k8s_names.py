"""Kubernetes' own name rules, as the API server applies them (the OpenAPI schema says only "string").

Each function returns the problems with a value (empty when it is valid), as apimachinery's validators do:

- `dns1123_label_problems` / `dns1123_subdomain_problems`: kubernetes/apimachinery
  pkg/util/validation/validation.go `IsDNS1123Label` (≤ 63, `[a-z0-9]([-a-z0-9]*[a-z0-9])?`) and
  `IsDNS1123Subdomain` (≤ 253, such labels joined by `.`); object names of most kinds are subdomains;
- `qualified_name_problems`: `IsQualifiedName` — since 2025 an alias of pkg/api/validate/content/kube.go
  `IsLabelKey`: an optional DNS-1123-subdomain prefix and `/`, then a name of ≤ 63 characters
  `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`; label keys and resource names are qualified names;
- `label_value_problems`: `IsValidLabelValue` / content `IsLabelValue` — empty, or ≤ 63 characters of the
  name charset;
- `extended_resource_name_problems`: kubernetes/kubernetes pkg/apis/core/helper/helpers.go
  `IsExtendedResourceName` — what a device plugin may advertise: a domain prefix other than `kubernetes.io`,
  not `requests.`-prefixed, and `requests.` + name still a qualified name;
- `container_resource_name_problems`: a container's `resources.limits`/`requests` key, as
  kubernetes/kubernetes pkg/apis/core/validation/validation.go `validateContainerResourceName` checks it: a
  qualified name; unprefixed only for the standard container resources (`cpu`, `memory`,
  `ephemeral-storage`, `hugepages-<size>`); prefixed outside `kubernetes.io/` only as an extended resource.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_NATIVE_NAMESPACE = "kubernetes.io/"
_QUOTA_REQUESTS_PREFIX = "requests."


def dns1123_label_problems(value: str) -> list[str]:
    problems = []
    if len(value) > DNS1123_LABEL_MAX:
        problems.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _DNS1123_LABEL_RE.match(value):
        problems.append("a DNS-1123 label must consist of lower case alphanumeric characters or '-', and must "
                        "start and end with an alphanumeric character")
    return problems


def dns1123_subdomain_problems(value: str) -> list[str]:
    problems = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        problems.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        problems.append("a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                        "and must start and end with an alphanumeric character")
    return problems


def qualified_name_problems(value: str) -> list[str]:
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name is a name with an optional DNS subdomain prefix and one '/'"]
    problems = []
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in dns1123_subdomain_problems(prefix)]
    else:
        name = value
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        problems.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    if not _QUALIFIED_NAME_RE.match(name):
        problems.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                        "end with an alphanumeric character")
    return problems


def label_value_problems(value: str) -> list[str]:
    problems = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if value and not _QUALIFIED_NAME_RE.match(value):
        problems.append("a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', and "
                        "must start and end with an alphanumeric character")
    return problems


def extended_resource_name_problems(value: str) -> list[str]:
    """An extended resource (what a device plugin advertises): prefixed by a domain other than
    `kubernetes.io`, not `requests.`-prefixed, and `requests.` + name still a qualified name."""
    if "/" not in value or _NATIVE_NAMESPACE in value:
        return ["an extended resource name needs a domain prefix other than kubernetes.io (e.g. nvidia.com/gpu)"]
    if value.startswith(_QUOTA_REQUESTS_PREFIX):
        return ["an extended resource name may not start with 'requests.'"]
    return [f"as a quota name: {p}" for p in qualified_name_problems(_QUOTA_REQUESTS_PREFIX + value)]


def container_resource_name_problems(value: str) -> list[str]:
    problems = qualified_name_problems(value)
    if problems:
        return problems
    if "/" not in value:
        if value not in _STANDARD_CONTAINER_RESOURCES and not value.startswith("hugepages-"):
            return ["must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-*)"]
        return []
    return [] if _NATIVE_NAMESPACE in value else extended_resource_name_problems(value)
