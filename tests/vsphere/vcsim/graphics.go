package main

// Keeping each seeded host's graphics devices current (ours, named so). ESXi names on each graphics device
// (HostConfigInfo.graphicsInfo[].vm) the VMs that use it, and updates that list as a VM powers on there or arrives
// by vMotion. The simulator knows nothing of GPUs, and the seeding (main.go) writes the lists once; this handler,
// registered with the simulator's object registry once the estate is built, rewrites them on every change of a
// VM's runtime.host or runtime.powerState, as the simulator publishes it (Registry.Update: power operations,
// RelocateVM_Task):
//
//   - a VM no longer on the host, or powered off (or suspended) there, leaves the host's devices: ESXi lists on a
//     graphics device only the VMs that use it (the API reference of HostGraphicsInfo.vm: "Virtual machines using
//     this graphics device"; `esxcli graphics vm list`: "List active VMs associated with graphics devices"), and a
//     VM that is not running uses none. That a powered-off VM is in no list is derived from these two, not a
//     VMware statement in so many words;
//   - a running VM that stays on the host keeps its GPUs (the seed's, or those given it here earlier);
//   - a running VM with vGPU devices (VirtualPCIPassthrough, vmiop backing) that is on none of the host's
//     sharedDirect devices is given one per vGPU, each on a different device, by the placement policy
//     "consolidation" (ESXi's "group VMs on GPU until full", HostGraphicsConfig.sharedPassthruAssignmentPolicy,
//     which the seed sets on every host): the first device in PCI order that already runs vGPUs of that type and
//     has room for one more, else the first empty one. A vGPU's frame buffer is read from its type's name
//     (grid_a40-12c: 12 GB); where none fits, the vGPU is on no device (a real ESXi refuses the power-on);
//   - a running VM with a passthrough device (device backing) is named on the direct device of that PCI id.
//
// gpuadmin's read cannot learn a powered-off VM's GPUs from these lists; what it does instead (the state's
// placement kept, or the vGPUs reported unplaced) is in docs/vsphere.md.

import (
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// graphicsSeed is a simulator.RegisterObject: the registry calls it on each object put, updated or removed.
type graphicsSeed struct {
	mu sync.Mutex
}

// newGraphicsSeed is registered once the estate is built, so the seed's own placement is the starting point.
func newGraphicsSeed() *graphicsSeed {
	return &graphicsSeed{}
}

func (g *graphicsSeed) Reference() types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "GpuadminSeedGraphics", Value: "seed-graphics"}
}

func (g *graphicsSeed) PutObject(mo.Reference) {} // a new VM is powered off: nothing to place yet

func (g *graphicsSeed) RemoveObject(types.ManagedObjectReference) {} // vSphere destroys only powered-off VMs

func (g *graphicsSeed) UpdateObject(obj mo.Reference, changes []types.PropertyChange) {
	if obj.Reference().Type != "VirtualMachine" { // the registry hands over the mo.VirtualMachine inside ours
		return
	}
	for _, change := range changes {
		if change.Name == "runtime.host" || change.Name == "runtime.powerState" {
			g.refresh()
			return
		}
	}
}

// seedPlacementPolicy is what each seeded host says of itself (HostConfigInfo.graphicsConfig).
func seedPlacementPolicy(host *simulator.HostSystem) {
	host.Config.GraphicsConfig = &types.HostGraphicsConfig{HostDefaultGraphicsType: "sharedDirect",
		SharedPassthruAssignmentPolicy: "consolidation"}
}

// onHost is one VM on a host and its GPU devices: its vGPU types (one per device) and its passthrough PCI ids.
type onHost struct {
	ref         types.ManagedObjectReference
	name        string
	running     bool
	vgpus       []string
	passthrough []string
}

var vgpuSize = regexp.MustCompile(`-([0-9]+)[a-z]+$`)

// frameBufferKiB of a vGPU type by its name (grid_a40-12c: 12 GB), 0 when the name does not say.
func frameBufferKiB(vgpu string) int64 {
	match := vgpuSize.FindStringSubmatch(vgpu)
	if match == nil {
		return 0
	}
	gb, _ := strconv.ParseInt(match[1], 10, 64)
	return gb << 20
}

func (g *graphicsSeed) refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	on := map[types.ManagedObjectReference][]onHost{}   // host → its VMs
	vgpuOf := map[types.ManagedObjectReference]string{} // a VM → its vGPU type
	for _, entity := range simulator.Map.All("VirtualMachine") {
		vm := entity.(*simulator.VirtualMachine)
		if vm.Runtime.Host == nil || vm.Config == nil {
			continue
		}
		mine := onHost{ref: vm.Self, name: vm.Name,
			running: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn}
		for _, device := range vm.Config.Hardware.Device {
			// by its backing, not its Go type: a device of a device group is devicegroups.go's VirtualPCIPassthrough
			switch backing := device.GetVirtualDevice().Backing.(type) {
			case *types.VirtualPCIPassthroughVmiopBackingInfo:
				mine.vgpus = append(mine.vgpus, backing.Vgpu)
				vgpuOf[vm.Self] = backing.Vgpu
			case *types.VirtualPCIPassthroughDeviceBackingInfo:
				mine.passthrough = append(mine.passthrough, backing.Id)
			}
		}
		on[*vm.Runtime.Host] = append(on[*vm.Runtime.Host], mine)
	}
	for _, entity := range simulator.Map.All("HostSystem") {
		host := entity.(*simulator.HostSystem)
		if host.Config == nil || len(host.Config.GraphicsInfo) == 0 {
			continue
		}
		vms := on[host.Self]
		sort.Slice(vms, func(i, j int) bool { return vms[i].name < vms[j].name })
		host.Config.GraphicsInfo = placed(host.Config.GraphicsInfo, vms, vgpuOf)
	}
}

// placed is the host's graphics devices naming `vms`, its VMs: a new slice (the property collector may be reading
// the old one).
func placed(devices []types.HostGraphicsInfo, vms []onHost,
	vgpuOf map[types.ManagedObjectReference]string) []types.HostGraphicsInfo {
	running := map[types.ManagedObjectReference]bool{} // the VMs that keep a place here
	for _, vm := range vms {
		running[vm.ref] = vm.running
	}
	out := make([]types.HostGraphicsInfo, len(devices))
	held := map[types.ManagedObjectReference]int{} // vGPU devices a VM already holds
	for i, device := range devices {
		out[i] = device
		out[i].Vm = nil
		for _, ref := range device.Vm {
			if running[ref] {
				out[i].Vm = append(out[i].Vm, ref)
				held[ref]++
			}
		}
	}
	for _, vm := range vms {
		if !vm.running {
			continue // a VM that is off is placed when it powers on
		}
		for _, id := range vm.passthrough {
			for i := range out {
				if out[i].PciId == id && out[i].GraphicsType == "direct" && !names(out[i], vm.ref) {
					out[i].Vm = append(out[i].Vm, vm.ref)
				}
			}
		}
		for n := held[vm.ref]; n < len(vm.vgpus); n++ {
			if i := consolidate(out, vm.ref, vm.vgpus[n], vgpuOf); i >= 0 {
				out[i].Vm = append(out[i].Vm, vm.ref)
			}
		}
	}
	return out
}

// consolidate: the device a vGPU of type `vgpu` of VM `ref` goes to, or -1.
func consolidate(devices []types.HostGraphicsInfo, ref types.ManagedObjectReference, vgpu string,
	vgpuOf map[types.ManagedObjectReference]string) int {
	size := frameBufferKiB(vgpu)
	empty := -1
	for i, device := range devices {
		if device.GraphicsType != "sharedDirect" || names(device, ref) {
			continue
		}
		if len(device.Vm) == 0 {
			if empty < 0 && size <= device.MemorySizeInKB {
				empty = i
			}
			continue
		}
		same, used := true, int64(0)
		for _, other := range device.Vm {
			same = same && vgpuOf[other] == vgpu
			used += frameBufferKiB(vgpuOf[other])
		}
		if same && used+size <= device.MemorySizeInKB {
			return i
		}
	}
	return empty
}

func names(device types.HostGraphicsInfo, ref types.ManagedObjectReference) bool {
	for _, vm := range device.Vm {
		if vm == ref {
			return true
		}
	}
	return false
}
