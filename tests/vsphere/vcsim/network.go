package main

// The vMotion network of a seeded host: ours, named so (the "seed-" names below). The simulator's ESXi template
// has one standard switch (vSwitch0, uplink vmnic0 at 10 Gbit/s) with one VMkernel NIC (vmk0, "Management
// Network") that is a vMotion candidate but not selected, so it does no vMotion. A host whose seed gives
// `vmotion_mb` (the link speeds of its vMotion uplinks, Mbit/s) gains what an admin sets up for vMotion: those
// physical NICs, a standard switch teaming them (both active), a "seed-vmotion" port group on it, a VMkernel NIC
// on that port group, and that NIC selected for vMotion (HostVirtualNicManager's netConfig "vmotion", as
// SelectVnicForNicType would; the simulator implements neither the NIC's creation nor the selection, so this
// writes them into the host's config). A host without `vmotion_mb` keeps the template's: no vMotion NIC.

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

const vmotionPortgroup = "seed-vmotion"
const vmotionSwitch = "seed-vSwitch-vmotion"
const vmotionVnic = "vmk1"

func seedVmotion(host *simulator.HostSystem, uplinksMb []int32) {
	if len(uplinksMb) == 0 {
		return
	}
	network := host.Config.Network // the host's own copy (simulator.NewHostSystem deep-copies the template)
	switchKey := "key-vim.host.VirtualSwitch-" + vmotionSwitch
	var keys, devices []string
	for i, speed := range uplinksMb {
		device := fmt.Sprintf("vmnic%d", 2+i) // vmnic0 and vmnic1 are the template's
		key := "key-vim.host.PhysicalNic-" + device
		keys, devices = append(keys, key), append(devices, device)
		link := types.PhysicalNicLinkInfo{SpeedMb: speed, Duplex: true}
		network.Pnic = append(network.Pnic, types.PhysicalNic{
			Key: key, Device: device, Pci: fmt.Sprintf("0000:%02x:00.0", 0x80+i), Driver: "seed",
			LinkSpeed: &link, ValidLinkSpecification: []types.PhysicalNicLinkInfo{link},
			Spec: types.PhysicalNicSpec{LinkSpeed: &link}, Mac: fmt.Sprintf("00:50:56:5e:ed:%02x", i),
		})
	}
	teaming := &types.HostNicTeamingPolicy{Policy: "loadbalance_srcid",
		NicOrder: &types.HostNicOrderPolicy{ActiveNic: devices}}
	network.Vswitch = append(network.Vswitch, types.HostVirtualSwitch{
		Name: vmotionSwitch, Key: switchKey, NumPorts: 128, Mtu: 9000, Pnic: keys,
		Portgroup: []string{"key-vim.host.PortGroup-" + vmotionPortgroup},
		Spec: types.HostVirtualSwitchSpec{NumPorts: 128, Mtu: 9000,
			Bridge: &types.HostVirtualSwitchBondBridge{NicDevice: devices}},
	})
	network.Portgroup = append(network.Portgroup, types.HostPortGroup{
		Key: "key-vim.host.PortGroup-" + vmotionPortgroup, Vswitch: switchKey,
		ComputedPolicy: types.HostNetworkPolicy{NicTeaming: teaming},
		Spec: types.HostPortGroupSpec{Name: vmotionPortgroup, VswitchName: vmotionSwitch,
			Policy: types.HostNetworkPolicy{NicTeaming: teaming}},
	})
	vnic := types.HostVirtualNic{
		Device: vmotionVnic, Key: "key-vim.host.VirtualNic-" + vmotionVnic, Portgroup: vmotionPortgroup,
		Spec: types.HostVirtualNicSpec{Portgroup: vmotionPortgroup, Mtu: 9000,
			Ip: &types.HostIpConfig{IpAddress: "192.0.2.1", SubnetMask: "255.255.255.0"}},
	}
	network.Vnic = append(network.Vnic, vnic)
	for i := range host.Config.VirtualNicManagerInfo.NetConfig {
		config := &host.Config.VirtualNicManagerInfo.NetConfig[i]
		if config.NicType != "vmotion" {
			continue
		}
		candidate := vnic
		candidate.Key = "vmotion." + vnic.Key // the manager keys its candidates by NIC type, as ESXi does
		config.CandidateVnic = append(config.CandidateVnic, candidate)
		config.SelectedVnic = []string{candidate.Key}
	}
}

// seedHostNetworkAndGraphics: what main.go's seeding of a host calls beside its hardware (ours): the vMotion
// network of the seed's `vmotion_mb`, and the vGPU placement policy graphics.go keeps the devices current by.
func seedHostNetworkAndGraphics(host *simulator.HostSystem, spec *seedHost) {
	seedVmotion(host, spec.VmotionMb)
	seedPlacementPolicy(host)
}
