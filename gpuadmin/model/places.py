"""One notation for places, everywhere (listings, diffs, violation messages, explanations, JSON, input):

* a GPU:           `NODE/GPU`                 e.g. `gpu-h100-07/0`
* a MIG instance:  `NODE/GPU/PROFILE@START`   e.g. `gpu-h100-07/0/3g.40gb@4` (`NODE/GPU/@START` where the
  profile is not known, e.g. a slot whose GPU no longer has that instance)
* a VM on a host:  `NODE/vm:VM`               e.g. `esx-hgx-01/vm:train-vm-01` (where a job in a VM runs; its
  slots stay GPU places, `vm:` keeps the form apart from them: a GPU is a number)

A job's placement slot may be written this way in an inventory or a change file (`placement:
["gpu-h100-07/0/3g.40gb@4"]`); it is stored as `{node, gpu, mig_start}`. A violation about a GPU names it
the same way (`gpu-h100-07/0`); other targets keep their kind (`node/NAME`, `job/NAME`, `queue/NAME`).
"""

from __future__ import annotations

import re

# ASCII digits, at most 19 (a 64-bit integer): the schema bounds the GPU index and the start, and a longer
# number is no place at all (`int()` of 5,000 digits raises)
_PLACE = re.compile(r"^(?P<node>[^/\s]+)/(?P<gpu>[0-9]{1,19})(?:/(?P<profile>[^/@\s]*)@(?P<start>[0-9]{1,19}))?$")


def gpu_place(node: str, gpu: int) -> str:
    return f"{node}/{gpu}"


def slice_place(node: str, gpu: int, start: int | None = None, profile: str | None = None) -> str:
    if start is None:
        return gpu_place(node, gpu)
    return f"{node}/{gpu}/{profile or ''}@{start}"


def vm_place(node: str, vm: str) -> str:
    return f"{node}/vm:{vm}"


def parse_place(text: str) -> tuple[str, int, str | None, int | None]:
    """(node, gpu, profile, start) of `NODE/GPU` or `NODE/GPU/PROFILE@START`; ValueError otherwise."""
    found = _PLACE.match(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a place: write NODE/GPU or NODE/GPU/PROFILE@START "
                         "(e.g. gpu-h100-07/0/3g.40gb@4)")
    start = found["start"]
    return found["node"], int(found["gpu"]), found["profile"] or None, int(start) if start is not None else None
