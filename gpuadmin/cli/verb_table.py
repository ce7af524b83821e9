"""The change ops' commands (`gpuadmin cordon NODE...`) as plain data, for the parser to read at start-up.

GENERATED from the `verb` field of each op in gpuadmin/engine/ops.py by tests/cli/test_verbs_cli.py, which holds
the two equal (`GPUADMIN_UPDATE_GOLDEN=1` rewrites this file). The parser is built on every start, `--help` too;
importing the registry (pydantic, the planner, the catalog) costs ~0.3 s, this module nothing. Do not edit by hand.
"""

from __future__ import annotations

from typing import NamedTuple


class Arg(NamedTuple):
    """One argument of a verb: `gpuadmin.engine.ops.Arg`, field for field."""

    name: str
    field: str
    kind: str
    help: str
    many: bool = False
    each: bool = False
    choices: tuple[str, ...] = ()


class Verb(NamedTuple):
    """One op's command: the op, what it does (`summary`, its line in docs/changes.md) and its `ops.Verb`."""

    op: str
    summary: str
    words: tuple[str, ...]
    args: tuple[Arg, ...]
    example: str
    one_of: tuple[str, ...] = ()


VERBS: tuple[Verb, ...] = (
    Verb(
        'set-mig',
        ('MIG on, with exactly this layout; a missing `start` is chosen (see '
         'below).'),
        ('mig',),
        (
            Arg('NODE/GPU', '', 'gpu',
                'the GPU: its node and index (gpu-h100-08/4)'),
            Arg('PROFILE', 'instances', 'mig',
                ('an instance: PROFILE or PROFILE@START (3g.40gb@4); no START: the '
                 'engine picks one'), many=True),
            Arg('--layout', 'instances', 'layout',
                'a named mig-parted layout (all-balanced)'),
        ),
        ('gpuadmin mig gpu-h100-12/3 3g.40gb 4g.40gb --dry-run\n  gpuadmin mig '
         'gpu-h100-12/3 --layout all-balanced --yes'),
        ('PROFILE', '--layout'),
    ),
    Verb(
        'set-mode',
        "change the GPU's mode, leaving MIG.",
        ('mode',),
        (
            Arg('NODE/GPU', '', 'gpu',
                'the GPU: its node and index (gpu-h100-08/4)'),
            Arg('MODE', 'mode', 'choice',
                "the GPU's mode", choices=('full', 'time-sliced', 'vgpu', 'passthrough')),
            Arg('--replicas', 'replicas', 'int',
                'time-sliced: how many replicas'),
        ),
        'gpuadmin mode gpu-h100-12/3 full --dry-run',
    ),
    Verb(
        'set-time-slicing',
        'N replicas of the whole GPU, or of each MIG instance of `mig_profile`.',
        ('time-slice',),
        (
            Arg('NODE/GPU', '', 'gpu',
                'the GPU: its node and index (gpu-h100-08/4)'),
            Arg('--replicas', 'replicas', 'int',
                'replicas of the GPU (required)'),
            Arg('--mig-profile', 'mig_profile', 'name',
                'replicas of each MIG instance of this profile instead'),
        ),
        'gpuadmin time-slice gpu-h100-12/3 --replicas 4 --dry-run',
    ),
    Verb(
        'set-sharing',
        "turn the node's dynamic GPU sharing on or off.",
        ('sharing',),
        (
            Arg('NODE', 'node', 'name',
                'the node'),
            Arg('FRACTIONS', 'fractions', 'choice',
                'dynamic: fractions share full GPUs; off', choices=('dynamic', 'off')),
            Arg('--reserved-gib', 'reserved_gib', 'float',
                'memory kept back per shared GPU'),
        ),
        'gpuadmin sharing gpu-h100-12 dynamic --reserved-gib 1 --dry-run',
    ),
    Verb(
        'set-device-groups',
        "replace a vSphere host's device groups.",
        ('device-groups',),
        (
            Arg('NODE', 'node', 'name',
                'the node'),
            Arg('GROUP', 'groups', 'group',
                'a group: NAME=GPU,GPU (nvl-a=0,1)', many=True),
        ),
        ('gpuadmin device-groups esx-hgx-02 dg-a=0,1,2,3 dg-b=4,5 --dry-run     '
         'drops dg-c'),
    ),
    Verb(
        'assign-vgpu',
        'add one vGPU to a VM, on a GPU in `vgpu` mode.',
        ('vgpu', 'assign'),
        (
            Arg('NODE/GPU', '', 'gpu',
                'the GPU: its node and index (gpu-h100-08/4)'),
            Arg('VM', 'vm', 'name',
                'the VM'),
            Arg('PROFILE', 'profile', 'name',
                'the vGPU type (H100XM-40C)'),
        ),
        'gpuadmin vgpu assign esx-vdi-01/0 vdi-13 A40-12C --dry-run',
    ),
    Verb(
        'remove-vgpu',
        ('take one vGPU from a VM: the only way a VM loses one (the plan is '
         'destructive).'),
        ('vgpu', 'remove'),
        (
            Arg('NODE/GPU', '', 'gpu',
                'the GPU: its node and index (gpu-h100-08/4)'),
            Arg('VM', 'vm', 'name',
                'the VM'),
            Arg('PROFILE', 'profile', 'name',
                'the vGPU type (H100XM-40C)'),
        ),
        'gpuadmin vgpu remove esx-vdi-01/0 vdi-04 A40-12C --dry-run',
    ),
    Verb(
        'attach-vm',
        'pass GPUs (or a whole device group) through to a VM.',
        ('attach',),
        (
            Arg('VM', 'vm', 'name',
                'the VM'),
            Arg('--node', 'node', 'name',
                'the vSphere host that runs the VM'),
            Arg('--gpus', 'gpus', 'indexes',
                'the GPUs by index (0,1)'),
            Arg('--device-group', 'device_group', 'name',
                'the device group'),
        ),
        'gpuadmin attach hpc-vm-01 --node esx-legacy-01 --gpus 0,1 --dry-run',
        ('--gpus', '--device-group'),
    ),
    Verb(
        'detach-vm',
        "release a VM's GPUs or group; with neither field, everything it holds.",
        ('detach',),
        (
            Arg('VM', 'vm', 'name',
                'the VM'),
            Arg('--node', 'node', 'name',
                'the vSphere host that runs the VM'),
            Arg('--gpus', 'gpus', 'indexes',
                'the GPUs by index (0,1)'),
            Arg('--device-group', 'device_group', 'name',
                'the device group'),
        ),
        ('gpuadmin detach hpc-vm-01 --node esx-legacy-01 --dry-run     '
         'everything it holds'),
    ),
    Verb(
        'cordon',
        'stop new placements on the node (never on a `down` node).',
        ('cordon',),
        (
            Arg('NODE', 'node', 'name',
                'the node (several: one change each, in one plan)', many=True, each=True),
        ),
        'gpuadmin cordon gpu-h100-03 gpu-h100-04 --yes',
    ),
    Verb(
        'uncordon',
        'resume placements (a `down` node needs repair-node).',
        ('uncordon',),
        (
            Arg('NODE', 'node', 'name',
                'the node (several: one change each, in one plan)', many=True, each=True),
        ),
        'gpuadmin uncordon gpu-h100-03 --yes',
    ),
    Verb(
        'repair-node',
        'bring a `down` node back after its repair, recording what was done.',
        ('repair',),
        (
            Arg('NODE', 'node', 'name',
                'the node'),
            Arg('--note', 'note', 'text',
                'what was done (an RMA number; required)'),
            Arg('--state', 'state', 'choice',
                'ready (default) or cordoned', choices=('ready', 'cordoned')),
        ),
        "gpuadmin repair hgx-h200-03 --note 'RMA 4411: GPU 3 replaced' --yes",
    ),
    Verb(
        'set-gpu-health',
        ('fence a GPU as unhealthy (why, who, when): no new placements on it; '
         '`healthy` clears it (admin).'),
        ('gpu-health',),
        (
            Arg('NODE/GPU', '', 'gpu',
                'the GPU: its node and index (gpu-h100-08/4)'),
            Arg('HEALTH', 'health', 'choice',
                'unhealthy fences it; healthy clears the fence (needs an admin)', choices=('healthy', 'unhealthy')),
            Arg('--reason', 'reason', 'text',
                'with unhealthy: why (an XID, ECC errors)'),
        ),
        ("gpuadmin gpu-health gpu-h100-03/4 unhealthy --reason 'XID 79: GPU has "
         "fallen off the bus' --dry-run"),
    ),
    Verb(
        'drain',
        ("cordon, and evict the node's preemptible jobs; a non-preemptible one "
         'blocks it. On a vSphere host: evacuate its VMs too (as `evacuate-'
         'host`).'),
        ('drain',),
        (
            Arg('NODE', 'node', 'name',
                'the node (several: one change each, in one plan)', many=True, each=True),
        ),
        'gpuadmin drain gpu-h100-03 --dry-run',
    ),
    Verb(
        'evacuate-host',
        ('maintenance mode for a vSphere host: each VM moved first (vMotion for '
         'vGPU VMs, within its tolerated stun time; power off and on elsewhere '
         'for passthrough or device-group VMs), as the engine plans it; `drain` '
         'on a vSphere host does the same.'),
        ('evacuate',),
        (
            Arg('NODE', 'node', 'name',
                'the node'),
        ),
        'gpuadmin evacuate esx-vdi-01 --dry-run',
    ),
    Verb(
        'submit-job',
        'add a job to its queue.',
        ('submit',),
        (
            Arg('NAME', 'job.name', 'name',
                "the job's name"),
            Arg('--queue', 'job.queue', 'name',
                'its queue (required)'),
            Arg('--gpus', 'job.request.gpus', 'int',
                'whole GPUs per node'),
            Arg('--mig', 'job.request.mig', 'name',
                'one MIG instance of this profile (1g.10gb)'),
            Arg('--fraction', 'job.request.fraction', 'float',
                'a fraction of a shared GPU (0.25)'),
            Arg('--gpu-memory-gib', 'job.request.gpu_memory_gib', 'float',
                'GPU memory of a shared GPU, GiB'),
            Arg('--model', 'job.request.model', 'name',
                'only GPUs of this model'),
            Arg('--nodes', 'job.request.nodes', 'int',
                'a gang of this many nodes (default 1)'),
            Arg('--nvlink', 'job.request.nvlink', 'flag',
                'its GPUs in one NVLink domain'),
            Arg('--rdma', 'job.request.rdma', 'flag',
                'nodes with RDMA NICs'),
            Arg('--cpus', 'job.request.cpus', 'float',
                'CPUs per node'),
            Arg('--memory-gib', 'job.request.memory_gib', 'float',
                'node memory per node, GiB'),
            Arg('--priority', 'job.priority', 'int',
                'its priority (int32)'),
            Arg('--isolation', 'job.isolation', 'choice',
                'exclusive: no other job on its GPUs', choices=('exclusive', 'shared')),
            Arg('--selector', 'job.node_selector', 'label',
                'only nodes with this label (KEY=VALUE, repeatable)', many=True),
            Arg('--vm', 'job.vm', 'name',
                'run inside this vSphere VM, on GPUs it holds'),
        ),
        'gpuadmin submit finetune-8b --queue research --gpus 8 --dry-run',
        ('--gpus', '--mig', '--fraction', '--gpu-memory-gib'),
    ),
    Verb(
        'cancel-job',
        'remove a job (a running one frees its slices).',
        ('cancel',),
        (
            Arg('JOB', 'name', 'name',
                'the job (several: one change each, in one plan)', many=True, each=True),
        ),
        'gpuadmin cancel eval-405b-shard --dry-run',
    ),
    Verb(
        'preempt-job',
        ('evict a running job; it is requeued as `preempted` (`override` needs '
         'an admin).'),
        ('preempt',),
        (
            Arg('JOB', 'name', 'name',
                'the running job'),
            Arg('--override', 'override', 'flag',
                'an admin stops a non-preemptible job'),
            Arg('--reason', 'reason', 'text',
                'with --override: why (journaled)'),
        ),
        'gpuadmin preempt vit-h-pretrain --dry-run',
    ),
    Verb(
        'set-quota',
        'change a queue.',
        ('quota',),
        (
            Arg('QUEUE', 'queue', 'name',
                'the queue'),
            Arg('--quota', 'quota.gpus', 'int',
                'the GPUs the queue is guaranteed'),
            Arg('--quota-gib', 'quota.gpu_memory_gib', 'float',
                'the GPU memory it is guaranteed, GiB'),
            Arg('--limit', 'limit.gpus', 'int',
                'the most GPUs it may hold, borrowing included'),
            Arg('--limit-gib', 'limit.gpu_memory_gib', 'float',
                'the most GPU memory it may hold, GiB'),
            Arg('--weight', 'over_quota_weight', 'float',
                'its share of what is free beyond quotas'),
            Arg('--priority', 'priority', 'int',
                'its priority (int32)'),
        ),
        'gpuadmin quota research --quota 24 --limit 40 --dry-run',
    ),
    Verb(
        'add-queue',
        'add a queue.',
        ('queue', 'add'),
        (
            Arg('NAME', 'queue.name', 'name',
                'the new queue'),
            Arg('--quota', 'queue.quota.gpus', 'int',
                'the GPUs the queue is guaranteed'),
            Arg('--quota-gib', 'queue.quota.gpu_memory_gib', 'float',
                'the GPU memory it is guaranteed, GiB'),
            Arg('--limit', 'queue.limit.gpus', 'int',
                'the most GPUs it may hold, borrowing included'),
            Arg('--limit-gib', 'queue.limit.gpu_memory_gib', 'float',
                'the most GPU memory it may hold, GiB'),
            Arg('--weight', 'queue.over_quota_weight', 'float',
                'its share of what is free beyond quotas'),
            Arg('--priority', 'queue.priority', 'int',
                'its priority (int32)'),
        ),
        'gpuadmin queue add evals --quota 2 --limit 4 --dry-run',
    ),
    Verb(
        'remove-queue',
        'remove a queue without jobs.',
        ('queue', 'remove'),
        (
            Arg('NAME', 'name', 'name',
                'the queue (it holds no jobs)'),
        ),
        'gpuadmin queue remove vdi --dry-run',
    ),
    Verb(
        'remove-node',
        'remove a node without running jobs from the inventory.',
        ('node', 'remove'),
        (
            Arg('NAME', 'name', 'name',
                'the node (no job runs on it)'),
        ),
        'gpuadmin node remove gpu-h100-12 --dry-run',
    ),
)
