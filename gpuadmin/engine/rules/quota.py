"""Quota rules (DESIGN §2 Queue, §5 Quota): a queue never exceeds its limit, non-preemptible work never
runs on borrowed quota, and every job names a queue that exists."""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.engine.rules.base import Violation, job_target, queue_target, rule
from gpuadmin.engine.rules.nodes import EPSILON
from gpuadmin.engine.state import View


@rule("quota.limit", "A queue's running usage never exceeds its limit, in GPUs and in GPU memory.", "queue")
def limit(view: View, name: str) -> Iterable[Violation]:
    queue = view.queue(name)
    if queue is None or queue.limit is None:
        return
    used = view.queue_usage(name)
    if queue.limit.gpus is not None and used.gpus > queue.limit.gpus + EPSILON:
        yield Violation(
            "quota.limit",
            queue_target(name),
            f"queue {name} would run {used.gpus:.2f} GPUs, over its limit of {queue.limit.gpus}",
            "raise the limit with set-quota, or preempt work of this queue",
        )
    if queue.limit.gpu_memory_gib is not None and used.gpu_memory_gib > queue.limit.gpu_memory_gib + EPSILON:
        yield Violation(
            "quota.limit",
            queue_target(name),
            f"queue {name} would use {used.gpu_memory_gib:.1f} GiB of GPU memory, over its limit of "
            f"{queue.limit.gpu_memory_gib:g} GiB",
            "raise the limit with set-quota, or preempt work of this queue",
        )


@rule(
    "quota.nonpreemptible-in-quota",
    "A queue's non-preemptible work fits its deserved quota (never borrowed).",
    "queue",
)
def nonpreemptible_in_quota(view: View, name: str) -> Iterable[Violation]:
    queue = view.queue(name)
    if queue is None:
        return
    if queue.quota.gpus is None and queue.quota.gpu_memory_gib is not None:
        return  # a memory-only quota: GPU-equivalents are not what it deserves
    deserved = queue.quota.gpus or 0
    used = view.queue_usage(name).nonpreemptible_gpus
    if used > deserved + EPSILON:
        yield Violation(
            "quota.nonpreemptible-in-quota",
            queue_target(name),
            f"queue {name} would run {used:.2f} GPUs of non-preemptible work on a deserved quota of "
            f"{deserved}; the rest would be borrowed",
            "make the job preemptible, raise the queue's quota, or wait for quota to free up",
        )


@rule("quota.limit-not-below-quota", "A queue's limit is not below its deserved quota.", "queue")
def limit_not_below_quota(view: View, name: str) -> Iterable[Violation]:
    queue = view.queue(name)
    if queue is None or queue.limit is None:
        return
    for field, unit in (("gpus", "GPUs"), ("gpu_memory_gib", "GiB")):
        cap = getattr(queue.limit, field)
        deserved = getattr(queue.quota, field)
        if cap is not None and deserved is not None and cap < deserved:
            yield Violation(
                "quota.limit-not-below-quota",
                queue_target(name),
                f"queue {name} has a limit of {cap:g} {unit} below its quota of {deserved:g} {unit}",
                "the limit caps quota plus borrowing: set it ≥ the quota, or drop it",
            )


@rule("quota.queue-exists", "Every job names a queue that exists.", "job")
def queue_exists(view: View, name: str) -> Iterable[Violation]:
    job = view.job(name)
    if job is not None and view.queue(job.queue) is None:
        removed = job.queue in view.base.queues  # a remove-queue (or a restore) in this plan: the job is there
        yield Violation(
            "quota.queue-exists",
            job_target(name),
            f"job {name} names queue {job.queue}, which {'this plan removes' if removed else 'does not exist'}",
            "cancel the job first (cancel-job), or keep the queue" if removed
            else "create the queue with add-queue, or submit the job to an existing queue",
        )
