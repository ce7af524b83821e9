"""Changes to the simulated estate, made through the vSphere API with pyVmomi, as an administrator's client makes
them (the simulator carries them out: tasks, the property collector); and a state bound to it by the real CLI."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from gpuadmin.cluster.read import Finding
from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import Result, gpuadmin
from tests.vsphere.vcsim import Simulator

# the seed's one powered-off vGPU VM: ESXi names it on no GPU, so a read with no state to keep its place from
# reports it (docs/vsphere.md, "A powered-off vGPU VM")
AI_DEV_02_OFF = Finding("vm", "ai-dev-02", "config.graphicsInfo", "1 vGPU(s) L40S-24C on no GPU of host esx-vdi-02: "
                        "placed when powered on (vCenter names a GPU only for a running VM)")

@contextmanager
def session(simulator: Simulator) -> Iterator[Any]:
    """A pyVmomi session with the simulator (its certificate is self-signed: not verified here)."""
    from pyVim.connect import Disconnect, SmartConnect

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    parts = urlsplit(simulator.url)
    service = SmartConnect(host=parts.hostname, port=parts.port, user=simulator.user, pwd=simulator.password,
                           sslContext=context)
    try:
        yield service
    finally:
        Disconnect(service)


def find(service: Any, kind: str, name: str) -> Any:
    from pyVmomi import vim

    content = service.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [getattr(vim, kind)], True)
    try:
        return next(obj for obj in view.view if obj.name == name)
    finally:
        view.Destroy()


def wait(task: Any) -> Any:
    from pyVim.task import WaitForTask

    WaitForTask(task)
    return task.info.result


def add_host(service: Any, cluster_name: str, host_name: str) -> Any:
    """A host added to the cluster (AddHost_Task), as an admin adds one: the simulator's ESXi, without GPUs."""
    from pyVmomi import vim

    cluster = find(service, "ClusterComputeResource", cluster_name)
    return wait(cluster.AddHost_Task(spec=vim.host.ConnectSpec(hostName=host_name), asConnected=True))


def create_vgpu_vm(service: Any, name: str, host_name: str, vgpu: str) -> Any:
    """A VM with one vGPU of type `vgpu`, created on the host (CreateVM_Task), as a VDI admin makes one."""
    from pyVmomi import vim

    host = find(service, "HostSystem", host_name)
    device = vim.vm.device.VirtualPCIPassthrough(backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(
        vgpu=vgpu))
    spec = vim.vm.ConfigSpec(name=name, guestId="otherGuest64", version="vmx-20",
                             files=vim.vm.FileInfo(vmPathName="[gpu-ds]"),
                             deviceChange=[vim.vm.device.VirtualDeviceSpec(operation="add", device=device)])
    datacenter = service.RetrieveContent().rootFolder.childEntity[0]
    return wait(datacenter.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host))


def vcenter_env(simulator: Simulator) -> dict[str, str]:
    """The environment of a gpuadmin command against the simulator: its password, and no kubeconfig."""
    return {**os.environ, "GPUADMIN_VCENTER_PASSWORD": simulator.password, "KUBECONFIG": "/nonexistent"}


def bind(simulator: Simulator, state: Path, *powered_off: str, init_args: tuple[str, ...] = ("--insecure",)
         ) -> dict[str, str]:
    """`state` made by the real `init --from-cluster vcenter`; then the VMs `powered_off` powered off (vSphere's
    rule for changing a VM's PCI devices) and synced: a powered-off VM is on no GPU's list, and its vGPUs stay
    where the state had them while it ran. The environment the commands ran with."""
    env = vcenter_env(simulator)
    done = gpuadmin("--state", state, "init", "--from-cluster", "vcenter", "--server", simulator.server, "--user",
                    simulator.user, *init_args, env=env)
    assert done.code == ExitCode.OK, done.err
    if powered_off:
        with session(simulator) as service:
            for vm in powered_off:
                wait(find(service, "VirtualMachine", vm).PowerOffVM_Task())
        done = gpuadmin("--state", state, "sync", env=env)
        assert done.code == ExitCode.OK, done.err
    return env


def apply_changes(state: Path, env: dict[str, str], *changes: dict[str, Any]) -> Result:
    """`apply -f` of a change file holding `changes`, confirmed."""
    path = state.parent / "changes.yaml"
    path.write_text(yaml.safe_dump({"changes": list(changes)}), encoding="utf-8")
    return gpuadmin("--state", state, "apply", "-f", path, "--yes", env=env)


def last_entry(state: Path) -> Any:
    with Store.open(state) as store:
        return store.journal()[-1]
