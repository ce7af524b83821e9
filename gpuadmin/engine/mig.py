"""MIG layout algebra on catalog models: validity, placement search, enumeration (gpu-facts §1.2, §1.4).

A *layout* is a set of GPU instances, each a (profile name, start) pair, where `start` is the first memory
slice the instance occupies. A layout is valid when

1. every profile exists for the model (and the model is MIG-capable),
2. every start is one of the profile's placements (`nvidia-smi mig -lgipp`),
3. no two instances share a memory slice,
4. the compute slices add up to at most the model's (7; A30 4),
5. no profile has more instances than its cap,
6. at most one instance carries media extensions (`+me`), and
7. where the catalog models a GPU's media engines (`GpuModel.mig_media_budget`), the instances' DEC/ENC/JPEG/OFA
   add up to at most the GPU's: on the RTX PRO 6000 a `+me.all` instance takes all of them.

Validity is decided by *searching* placements — never by replaying the driver's greedy creation order, which
refuses layouts that exist (`-cgi 19,19,14,9` fails where `-cgi 9,19,14,19` works). Where a start is omitted,
`place` picks the placement that keeps the most room for further instances, deterministically.

All numbers come from the catalog model; nothing here knows a GPU.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from gpuadmin.catalog.entities import MEDIA_ENGINE_KINDS, GpuModel, MigProfile

Instance = tuple[str, int]  # (profile, start)
Layout = tuple[Instance, ...]  # canonical: sorted by start (starts are unique in a valid layout)
Request = tuple[str, int | None]  # (profile, start or None for "engine chooses")

ProblemKind = Literal[
    "not-mig-capable",
    "unknown-profile",
    "bad-start",
    "overlap",
    "compute-slices",
    "instance-cap",
    "media-extensions",
    "media-engines",
    "no-placement",
]


@dataclass(frozen=True, slots=True)
class LayoutProblem:
    """One reason a layout is not valid, with the numbers an operator needs."""

    kind: ProblemKind
    message: str
    hint: str | None = None
    profile: str | None = None
    start: int | None = None


def canonical(layout: Iterable[Instance]) -> Layout:
    """The canonical form of a layout: sorted by (start, profile)."""
    return tuple(sorted(layout, key=lambda inst: (inst[1], inst[0])))


def _mask(profile: MigProfile, start: int) -> int:
    return ((1 << profile.memory_slices) - 1) << start


def _full_mask(model: GpuModel) -> int:
    return (1 << model.memory_slices) - 1


def _legal(model: GpuModel, profile: MigProfile, start: int) -> bool:
    return start in profile.starts and start + profile.memory_slices <= model.memory_slices


_ENGINE_NAMES = {"dec": "NVDEC", "enc": "NVENC", "jpg": "JPEG", "ofa": "OFA"}


def media_engines_over(model: GpuModel, profiles: Iterable[MigProfile]) -> list[str]:
    """The media engines `profiles` together take beyond the model's budget ("5 NVDEC (of 4)"); empty where they
    fit or the catalog models no budget for the model."""
    budget = model.mig_media_budget
    if budget is None:
        return []
    chosen = list(profiles)
    over = []
    for kind in MEDIA_ENGINE_KINDS:
        have = budget.count(kind)
        used = sum(p.engines.count(kind) or 0 for p in chosen)
        if have is not None and used > have:
            over.append(f"{used} {_ENGINE_NAMES[kind]} (of {have})")
    return over


# ----------------------------------------------------------------------------------------------- explain


def explain_layout(model: GpuModel, instances: Sequence[Request]) -> list[LayoutProblem]:
    """Every reason `instances` is not a valid layout of `model`; empty when it is.

    Instances without a start are judged by search: the layout is refused ("no-placement") only when no
    assignment of legal starts makes it valid together with the fixed ones.
    """
    if not model.mig_capable or model.memory_slices <= 0:
        return [
            LayoutProblem(
                "not-mig-capable",
                f"{model.name} does not support MIG",
                "use a MIG-capable model (A100, A30, H100, H200, B200 ...) or another mode",
            )
        ]
    problems: list[LayoutProblem] = []
    known: list[tuple[MigProfile, int | None]] = []
    for name, start in instances:
        profile = model.mig_profile(name)
        if profile is None:
            names = ", ".join(p.name for p in model.mig_profiles)
            problems.append(
                LayoutProblem(
                    "unknown-profile",
                    f"MIG profile {name!r} does not exist on {model.name}",
                    f"profiles of {model.name}: {names}",
                    profile=name,
                    start=start,
                )
            )
            continue
        if start is not None and not _legal(model, profile, start):
            starts = ",".join(str(s) for s in profile.starts)
            problems.append(
                LayoutProblem(
                    "bad-start",
                    f"{profile.name} cannot start at memory slice {start} on {model.name} "
                    f"(placements {{{starts}}}:{profile.memory_slices})",
                    f"start {profile.name} at one of {{{starts}}}, or omit 'start' to let the engine choose",
                    profile=profile.name,
                    start=start,
                )
            )
            continue
        known.append((profile, start))

    # overlaps among fixed, legal starts
    fixed = [(p, s) for p, s in known if s is not None]
    for i, (p1, s1) in enumerate(fixed):
        for p2, s2 in fixed[i + 1 :]:
            shared = _mask(p1, s1) & _mask(p2, s2)
            if shared:
                slices = [k for k in range(model.memory_slices) if shared >> k & 1]
                problems.append(
                    LayoutProblem(
                        "overlap",
                        f"{p1.name}@{s1} and {p2.name}@{s2} overlap in memory slices "
                        f"{','.join(map(str, slices))}",
                        "move one of them to a free placement, or omit 'start' to let the engine choose",
                        profile=p2.name,
                        start=s2,
                    )
                )

    compute = sum(p.compute_slices for p, _ in known)
    if compute > model.compute_slices:
        parts = " + ".join(f"{p.name}({p.compute_slices})" for p, _ in known)
        problems.append(
            LayoutProblem(
                "compute-slices",
                f"the layout uses {compute} compute slices, {model.name} has {model.compute_slices}: {parts}",
                "drop or shrink an instance",
            )
        )

    counts = Counter(p.name for p, _ in known)
    by_name = {p.name: p for p, _ in known}
    for name, count in sorted(counts.items()):
        cap = by_name[name].max_instances
        if count > cap:
            problems.append(
                LayoutProblem(
                    "instance-cap",
                    f"{count} instances of {name}, at most {cap} on {model.name}",
                    f"use at most {cap} × {name}",
                    profile=name,
                )
            )

    media = [p.name for p, _ in known if p.media_extensions]
    if len(media) > 1:
        problems.append(
            LayoutProblem(
                "media-extensions",
                f"{len(media)} instances with media extensions ({', '.join(media)}); a GPU has at most one",
                "keep one +me instance and use the plain profile for the others",
            )
        )

    over = media_engines_over(model, (p for p, _ in known))
    if over:
        takers = ", ".join(p.name for p, _ in known if any(p.engines.count(k) for k in MEDIA_ENGINE_KINDS))
        problems.append(
            LayoutProblem(
                "media-engines",
                f"the instances need more media engines than {model.name} has: {', '.join(over)} (instances "
                f"with media engines: {takers})",
                "a +me.all instance takes all the GPU's media engines: pair it with -me instances only, or use "
                "+me / the plain profiles",
            )
        )

    if not problems and any(s is None for _, s in known) and place(model, instances) is None:
        wanted = ", ".join(f"{n}@{s}" if s is not None else n for n, s in instances)
        problems.append(
            LayoutProblem(
                "no-placement",
                f"no placement of [{wanted}] on {model.name} avoids overlapping memory slices",
                "drop an instance or choose a smaller profile",
            )
        )
    return problems


def is_valid(model: GpuModel, layout: Iterable[Instance]) -> bool:
    return not explain_layout(model, list(layout))


# ------------------------------------------------------------------------------------------------- place


def _score(
    model: GpuModel, used: int, chosen: Sequence[tuple[MigProfile, int]]
) -> tuple[int, int, tuple[int, ...]]:
    """How much room a partial layout leaves, higher is better.

    (memory size of the largest profile that could still be added, number of (profile, start) positions that
    could still be added, free memory-slice runs from longest).
    """
    compute_left = model.compute_slices - sum(p.compute_slices for p, _ in chosen)
    counts = Counter(p.name for p, _ in chosen)
    media = any(p.media_extensions for p, _ in chosen)
    largest = 0
    positions = 0
    for profile in model.mig_profiles:
        if profile.compute_slices > compute_left or counts[profile.name] >= profile.max_instances:
            continue
        if profile.media_extensions and media:
            continue
        for start in profile.starts:
            if _legal(model, profile, start) and not used & _mask(profile, start):
                positions += 1
                largest = max(largest, profile.memory_slices)
    runs: list[int] = []
    run = 0
    for k in range(model.memory_slices):
        if used >> k & 1:
            if run:
                runs.append(run)
            run = 0
        else:
            run += 1
    if run:
        runs.append(run)
    return largest, positions, tuple(sorted(runs, reverse=True))


def _assignments(
    model: GpuModel, free: Sequence[MigProfile], used: int, floor: dict[str, int]
) -> Iterator[list[int]]:
    """Every assignment of legal, non-overlapping starts to `free` (in order), given occupied slices `used`.

    Instances of one profile are interchangeable, so their starts are taken in increasing order (`floor`):
    each distinct layout is produced once.
    """
    if not free:
        yield []
        return
    profile, rest = free[0], free[1:]
    low = floor.get(profile.name, -1)
    for start in profile.starts:
        if start <= low or not _legal(model, profile, start):
            continue
        mask = _mask(profile, start)
        if used & mask:
            continue
        floor[profile.name] = start
        for tail in _assignments(model, rest, used | mask, floor):
            yield [start, *tail]
        floor[profile.name] = low
    floor[profile.name] = low


def place(model: GpuModel, instances: Sequence[Request]) -> list[Instance] | None:
    """Starts for every instance, honouring the given ones, or None when no valid layout exists.

    The result is in the order of `instances`. Among all valid completions the one chosen leaves the largest
    profile still placeable (then the most free positions, then the longest free runs); ties go to the
    lowest starts. The search is exhaustive, so a layout is refused only when none exists.
    """
    key = (model.name, tuple(instances))
    cached = _PLACE_CACHE.get(key)
    if cached is not None or key in _PLACE_CACHE:
        return list(cached) if cached is not None else None
    result = _place(model, instances)
    if len(_PLACE_CACHE) > 65536:
        _PLACE_CACHE.clear()
    _PLACE_CACHE[key] = tuple(result) if result is not None else None
    return result


_PLACE_CACHE: dict[tuple[str, tuple[Request, ...]], tuple[Instance, ...] | None] = {}


def _place(model: GpuModel, instances: Sequence[Request]) -> list[Instance] | None:
    if not model.mig_capable or model.memory_slices <= 0 or not instances:
        return [] if model.mig_capable and not instances else None
    profiles: list[MigProfile] = []
    for name, start in instances:
        profile = model.mig_profile(name)
        if profile is None or (start is not None and not _legal(model, profile, start)):
            return None
        profiles.append(profile)
    if sum(p.compute_slices for p in profiles) > model.compute_slices:
        return None
    if sum(1 for p in profiles if p.media_extensions) > 1 or media_engines_over(model, profiles):
        return None
    counts = Counter(p.name for p in profiles)
    if any(counts[p.name] > p.max_instances for p in profiles):
        return None
    used = 0
    for profile, (_, start) in zip(profiles, instances, strict=True):
        if start is not None:
            mask = _mask(profile, start)
            if used & mask:
                return None
            used |= mask
    # free instances: largest first (fewest placements), then by name, so the search is order-independent
    free_idx = sorted(
        (i for i, (_, s) in enumerate(instances) if s is None),
        key=lambda i: (-profiles[i].memory_slices, -profiles[i].compute_slices, profiles[i].name, i),
    )
    free = [profiles[i] for i in free_idx]
    fixed_chosen = [(profiles[i], s) for i, (_, s) in enumerate(instances) if s is not None]
    best: tuple[tuple[int, int, tuple[int, ...]], tuple[int, ...]] | None = None
    best_starts: list[int] | None = None
    for starts in _assignments(model, free, used, {}):
        mask = used
        chosen = list(fixed_chosen)
        for profile, start in zip(free, starts, strict=True):
            mask |= _mask(profile, start)
            chosen.append((profile, start))
        score = _score(model, mask, chosen)
        # maximise the score; on a tie prefer the lowest starts (compare negated start sequences)
        key = (score, tuple(-s for s in starts))
        if best is None or key > best:
            best, best_starts = key, starts
    if best_starts is None:
        return None
    starts_out = [s if s is not None else -1 for _, s in instances]
    for i, start in zip(free_idx, best_starts, strict=True):
        starts_out[i] = start
    return [(profile.name, start) for profile, start in zip(profiles, starts_out, strict=True)]


# ----------------------------------------------------------------------------------------------- enumerate


_LAYOUTS: dict[str, tuple[Layout, ...]] = {}


def valid_layouts(model: GpuModel) -> tuple[Layout, ...]:
    """Every valid, non-empty layout of `model`, each canonical, in a stable order. Cached per model."""
    cached = _LAYOUTS.get(model.name)
    if cached is not None:
        return cached
    layouts: list[Layout] = []
    if model.mig_capable and model.memory_slices > 0:
        candidates = sorted(
            ((p, s) for p in model.mig_profiles for s in p.starts if _legal(model, p, s)),
            key=lambda c: (c[1], c[0].name),
        )
        chosen: list[tuple[MigProfile, int]] = []
        counts: Counter[str] = Counter()
        budgeted = model.mig_media_budget is not None

        def extend(index: int, used: int, compute: int, media: bool) -> None:
            for k in range(index, len(candidates)):
                profile, start = candidates[k]
                mask = _mask(profile, start)
                if used & mask or compute + profile.compute_slices > model.compute_slices:
                    continue
                if counts[profile.name] >= profile.max_instances or (media and profile.media_extensions):
                    continue
                if budgeted and media_engines_over(model, [*(p for p, _ in chosen), profile]):
                    continue
                chosen.append((profile, start))
                counts[profile.name] += 1
                layouts.append(canonical((p.name, s) for p, s in chosen))
                extend(
                    k + 1, used | mask, compute + profile.compute_slices, media or profile.media_extensions
                )
                counts[profile.name] -= 1
                chosen.pop()

        extend(0, 0, 0, False)
    result = tuple(sorted(layouts, key=lambda lay: (len(lay), lay)))
    _LAYOUTS[model.name] = result
    return result


def layouts_with(model: GpuModel, profiles: Iterable[str], keep: Iterable[Instance] = ()) -> list[Layout]:
    """Valid layouts that keep every instance of `keep` (same profile, same start) and add at least
    `profiles` (a multiset) — what "repartition GPU to <layout>" may offer. Fewest extra instances first,
    then the layouts that leave the most room, then canonical order."""
    kept = set(keep)
    need = Counter(p for p, _ in kept) + Counter(profiles)
    out: list[Layout] = []
    for layout in valid_layouts(model):
        if len(layout) < sum(need.values()) or not kept.issubset(layout):
            continue
        have = Counter(p for p, _ in layout)
        if all(have[p] >= n for p, n in need.items()):
            out.append(layout)

    def room(layout: Layout) -> tuple[int, int, tuple[int, ...]]:
        chosen: list[tuple[MigProfile, int]] = []
        used = 0
        for name, start in layout:
            profile = model.mig_profile(name)
            assert profile is not None
            chosen.append((profile, start))
            used |= _mask(profile, start)
        return _score(model, used, chosen)

    scored = [(len(layout), room(layout), layout) for layout in out]
    scored.sort(key=lambda t: (t[0], tuple(-x for x in t[1][:2]), tuple(-r for r in t[1][2]), t[2]))
    return [layout for _, _, layout in scored]


def free_starts(model: GpuModel, layout: Iterable[Instance], profile: str) -> list[int]:
    """Starts at which one more `profile` instance can join `layout` with the layout still valid."""
    current = list(layout)
    prof = model.mig_profile(profile)
    if prof is None:
        return []
    return [s for s in prof.starts if _legal(model, prof, s) and is_valid(model, [*current, (prof.name, s)])]


def memory_used(model: GpuModel, layout: Iterable[Instance]) -> int:
    """Memory slices a layout occupies (unknown profiles count nothing)."""
    used = 0
    for name, start in layout:
        profile = model.mig_profile(name)
        if profile is not None and _legal(model, profile, start):
            used |= _mask(profile, start)
    return bin(used & _full_mask(model)).count("1")


# ----------------------------------------------------------------------------------- compute instances


def compute_slices_of(gi_profile: MigProfile, ci_name: str) -> int | None:
    """Compute slices of a compute instance named `ci_name` inside a GI of `gi_profile`, or None when the name
    is not one of that GI's CI profiles. The GI's own name is its full-width CI; `<C>c.<GI name>` is a CI of
    C slices (gpu-facts §1.2 naming; NVLIB names a CI `<C>c.<G>g.<GB>gb` when C differs from G)."""
    name = ci_name.strip().lower()
    if name.startswith("mig "):
        name = name[4:].strip()
    if name == gi_profile.name:
        return gi_profile.compute_slices
    head, dot, rest = name.partition("c.")
    if not dot or rest != gi_profile.name or not head.isdigit():
        return None
    slices = int(head)
    return slices if 0 < slices < gi_profile.compute_slices else None


def compute_instance_problems(model: GpuModel, gi_name: str, cis: Sequence[str]) -> list[str]:
    """Why a GI's compute-instance split is not valid (empty when it is): every CI is a CI profile of this GI
    and their compute slices add up to at most the GI's. CI placements inside the GI are not checked — the
    reference has no `-lcipp` table."""
    gi = model.mig_profile(gi_name)
    if gi is None:
        return []  # mig.profile-exists says so
    problems: list[str] = []
    total = 0
    for ci in cis:
        slices = compute_slices_of(gi, ci)
        if slices is None:
            choices = ", ".join([*(f"{c}c.{gi.name}" for c in range(1, gi.compute_slices)), gi.name])
            problems.append(f"{ci!r} is not a compute instance of a {gi.name} GPU instance (choose {choices})")
            continue
        total += slices
    if total > gi.compute_slices:
        problems.append(
            f"compute instances {', '.join(cis)} use {total} compute slices, the {gi.name} GPU instance has "
            f"{gi.compute_slices}"
        )
    return problems
