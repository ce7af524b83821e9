// Ours, like all the seeding: what VMware's simulator (govmomi 0.24) does not answer for a host's passthrough GPUs.
//
// A client attaching a host's PCI device to a VM asks vCenter which devices a VM on that host may take, and the
// system id each device's backing must name: EnvironmentBrowser.QueryConfigTarget(host).pciPassthrough
// (VirtualMachinePciPassthroughInfo: the HostPciDevice and its systemId). The simulator's QueryConfigTarget
// lists datastores and networks only, so each cluster's environment browser is wrapped here: the simulator answers
// the call as before, and the wrapper adds, for the host asked about, every PCI device the seed enabled for
// passthrough (HostPciPassthruInfo.passthruEnabled, seedHardware), with the system id the seed's passthrough VMs
// name ("seed-<host>", createVM). What the client then does with them (ReconfigVM_Task) is the simulator's.
package main

import (
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// seedEnvironmentBrowser is a cluster's environment browser whose config target lists the seeded passthrough GPUs.
type seedEnvironmentBrowser struct {
	*simulator.EnvironmentBrowser
}

// QueryConfigTarget is the simulator's answer, plus the asked host's passthrough-enabled PCI devices.
func (b *seedEnvironmentBrowser) QueryConfigTarget(ctx *simulator.Context, req *types.QueryConfigTarget) soap.HasFault {
	body := b.EnvironmentBrowser.QueryConfigTarget(ctx, req)
	answer, ok := body.(*methods.QueryConfigTargetBody)
	if !ok || answer.Res == nil || req.Host == nil {
		return body
	}
	host, ok := ctx.Map.Get(*req.Host).(*simulator.HostSystem)
	if !ok {
		return body
	}
	devices := map[string]types.HostPciDevice{}
	for _, device := range host.Hardware.PciDevice {
		devices[device.Id] = device
	}
	target := answer.Res.Returnval
	for _, base := range host.Config.PciPassthruInfo {
		info := base.GetHostPciPassthruInfo()
		device, known := devices[info.Id]
		if !info.PassthruEnabled || !known {
			continue
		}
		target.PciPassthrough = append(target.PciPassthrough, &types.VirtualMachinePciPassthroughInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: device.DeviceName},
			PciDevice:                device,
			SystemId:                 "seed-" + host.Name,
		})
	}
	return body
}

// seedPassthroughTargets wraps the environment browser of each cluster (the one its VMs name).
func seedPassthroughTargets(clusters map[string]*object.ClusterComputeResource) {
	for _, cluster := range clusters {
		simCluster := simulator.Map.Get(cluster.Reference()).(*simulator.ClusterComputeResource)
		browser := simulator.Map.Get(*simCluster.EnvironmentBrowser).(*simulator.EnvironmentBrowser)
		simulator.Map.Put(&seedEnvironmentBrowser{browser})
	}
}
