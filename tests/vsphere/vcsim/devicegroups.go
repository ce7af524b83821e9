// vSphere 8 device groups in VMware's vCenter simulator: OUR seeding, not the simulator's.
//
// govmomi 0.24 (Debian's, which this program is built from) predates vSphere 8 and has none of its device-group
// types, so this file adds the few the reader asks for, with the vSphere API's own type and field names (API
// release 8.0.0.1, as pyVmomi's type definitions and Broadcom's API reference give them):
//
//   - a VM's `config.deviceGroups` (VirtualMachineVirtualDeviceGroups of VirtualMachineVirtualDeviceGroupsVendorDeviceGroup:
//     groupInstanceKey, deviceGroupName). govmomi's VirtualMachineConfigInfo has no such field, so the simulator's
//     property collector cannot serve the path; `deviceGroupCollector` wraps it (the simulator's session code
//     expects such a wrapper: "PropertyCollector might be wrapped with a custom type"), takes the path out of the
//     request, lets the simulator answer the rest and adds the seeded groups to each VM's answer.
//   - each member device's `deviceGroupInfo` (VirtualDeviceDeviceGroupInfo: groupInstanceKey, sequenceId): the VM's
//     vGPU devices are replaced, after CreateVM_Task made them, by `VirtualPCIPassthrough` below, govmomi's device
//     with the field added (the same WSDL type name on the wire), so ReconfigVM and the rest keep working on them.
//   - a ReconfigVM_Task adding or removing a group (`reconfiguredGroups`): the request's devices decode as
//     `VirtualPCIPassthrough` below (registered under the WSDL name), so their deviceGroupInfo reaches the VM; the
//     request's `deviceGroups` does not (govmomi's VirtualMachineConfigSpec has no such field, and the decoder drops
//     it), so after each device change the VM's groups are made again from its devices: a new (negative, the
//     client's temporary) groupInstanceKey gets the VM's next free key, as vCenter gives one, and is named after
//     the group its host offers of as many vGPUs of the members' type; a key no device carries any more is gone.
//     That naming is OURS (derived): a vCenter takes the name from the request.
//   - a host's `configManager.assignableHardwareManager` (HostAssignableHardwareManager, which 0.24's simulator does
//     not serve) with its method RetrieveVendorDeviceGroupInfo: the vendor device groups the host offers
//     (VirtualMachineVendorDeviceGroupInfo: deviceGroupName, componentDeviceInfo, one per device of the group).
//
// Everything else a client sees (sessions, the property collector's other paths, tasks) is the simulator's.
package main

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

const vmDeviceGroupsPath = "config.deviceGroups"

// VirtualDeviceDeviceGroupInfo is vSphere 8's VirtualDevice.deviceGroupInfo: the group a device belongs to.
type VirtualDeviceDeviceGroupInfo struct {
	types.DynamicData

	GroupInstanceKey int32 `xml:"groupInstanceKey"`
	SequenceId       int32 `xml:"sequenceId"`
}

// VirtualPCIPassthrough is govmomi's device with vSphere 8's deviceGroupInfo (the wire name is the Go type's).
type VirtualPCIPassthrough struct {
	types.VirtualPCIPassthrough

	DeviceGroupInfo *VirtualDeviceDeviceGroupInfo `xml:"deviceGroupInfo,omitempty"`
}

// VirtualMachineVirtualDeviceGroupsVendorDeviceGroup is one vendor device group a VM holds.
type VirtualMachineVirtualDeviceGroupsVendorDeviceGroup struct {
	types.DynamicData

	GroupInstanceKey int32  `xml:"groupInstanceKey"`
	DeviceGroupName  string `xml:"deviceGroupName"`
}

// VirtualMachineVirtualDeviceGroups is a VM's config.deviceGroups.
type VirtualMachineVirtualDeviceGroups struct {
	types.DynamicData

	DeviceGroup []VirtualMachineVirtualDeviceGroupsVendorDeviceGroup `xml:"deviceGroup,omitempty,typeattr"`
}

// VirtualMachineVendorDeviceGroupInfoComponentDeviceInfo is one device of a vendor device group a host offers.
type VirtualMachineVendorDeviceGroupInfoComponentDeviceInfo struct {
	types.DynamicData

	Type           string                  `xml:"type"` // pciPassthru, nvidiaVgpu, sriovNic, dvx
	VendorName     string                  `xml:"vendorName"`
	DeviceName     string                  `xml:"deviceName"`
	IsConfigurable bool                    `xml:"isConfigurable"`
	Device         types.BaseVirtualDevice `xml:"device,typeattr"`
}

// VirtualMachineVendorDeviceGroupInfo is a vendor device group a host offers (RetrieveVendorDeviceGroupInfo).
type VirtualMachineVendorDeviceGroupInfo struct {
	types.VirtualMachineTargetInfo

	DeviceGroupName        string                                                   `xml:"deviceGroupName"`
	DeviceGroupDescription string                                                   `xml:"deviceGroupDescription,omitempty"`
	ComponentDeviceInfo    []VirtualMachineVendorDeviceGroupInfoComponentDeviceInfo `xml:"componentDeviceInfo,omitempty,typeattr"`
}

type retrieveVendorDeviceGroupInfoRequest struct {
	This types.ManagedObjectReference `xml:"_this"`
}

type retrieveVendorDeviceGroupInfoResponse struct {
	Returnval []VirtualMachineVendorDeviceGroupInfo `xml:"returnval,omitempty,typeattr"`
}

type retrieveVendorDeviceGroupInfoBody struct {
	Req    *retrieveVendorDeviceGroupInfoRequest  `xml:"urn:vim25 RetrieveVendorDeviceGroupInfo,omitempty"`
	Res    *retrieveVendorDeviceGroupInfoResponse `xml:"RetrieveVendorDeviceGroupInfoResponse,omitempty"`
	Fault_ *soap.Fault                            `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *retrieveVendorDeviceGroupInfoBody) Fault() *soap.Fault { return b.Fault_ }

// assignableHardwareManager serves one host's RetrieveVendorDeviceGroupInfo with the seeded groups.
type assignableHardwareManager struct {
	mo.ExtensibleManagedObject

	groups []VirtualMachineVendorDeviceGroupInfo
}

// groupNamed is the name of the group the manager offers of `size` vGPU devices of `vgpu` ("" where none).
func (m *assignableHardwareManager) groupNamed(size int, vgpu string) string {
	for _, group := range m.groups {
		if len(group.ComponentDeviceInfo) != size {
			continue
		}
		matches := true
		for _, component := range group.ComponentDeviceInfo {
			backing, vmiop := component.Device.GetVirtualDevice().Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo)
			matches = matches && vmiop && backing.Vgpu == vgpu
		}
		if matches {
			return group.DeviceGroupName
		}
	}
	return ""
}

func (m *assignableHardwareManager) RetrieveVendorDeviceGroupInfo(*retrieveVendorDeviceGroupInfoRequest) soap.HasFault {
	return &retrieveVendorDeviceGroupInfoBody{Res: &retrieveVendorDeviceGroupInfoResponse{Returnval: m.groups}}
}

// nvidiaDeviceGroupName is the seed's name of an NVIDIA NVLink device group of `size` vGPUs of `vgpu`. The form
// (Nvidia:SIZE@TYPE%NVLink) is the one VMware's vSphere 8 device-group blog shows; gpuadmin does not parse it.
func nvidiaDeviceGroupName(size int, vgpu string) string {
	return fmt.Sprintf("Nvidia:%d@%s%%NVLink", size, vgpu)
}

// seedOfferedDeviceGroups gives the host an assignable-hardware manager offering a group of each seeded size for
// each of its vGPU types: nvidiaVgpu devices of that type.
func seedOfferedDeviceGroups(host *simulator.HostSystem, spec *seedHost) {
	if len(spec.DeviceGroupSizes) == 0 {
		return
	}
	manager := &assignableHardwareManager{}
	manager.Self = types.ManagedObjectReference{Type: "HostAssignableHardwareManager",
		Value: "assignableHardwareManager-" + host.Self.Value}
	for _, size := range spec.DeviceGroupSizes {
		for _, vgpu := range spec.VgpuTypes {
			name := nvidiaDeviceGroupName(size, vgpu)
			group := VirtualMachineVendorDeviceGroupInfo{DeviceGroupName: name,
				DeviceGroupDescription: fmt.Sprintf("%d x %s NVLink", size, spec.Gpu.Name)}
			group.Name = name
			for index := 0; index < size; index++ {
				group.ComponentDeviceInfo = append(group.ComponentDeviceInfo,
					VirtualMachineVendorDeviceGroupInfoComponentDeviceInfo{
						Type: "nvidiaVgpu", VendorName: "NVIDIA Corporation", DeviceName: spec.Gpu.Name,
						Device: &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{
							Backing: &types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: vgpu}}},
					})
			}
			manager.groups = append(manager.groups, group)
		}
	}
	simulator.Map.Put(manager)
	host.ConfigManager.AssignableHardwareManager = &manager.Self
}

// vmDeviceGroups holds each VM's seeded config.deviceGroups, served by deviceGroupCollector.
var vmDeviceGroups = struct {
	sync.Mutex
	byVM map[types.ManagedObjectReference]*VirtualMachineVirtualDeviceGroups
}{byVM: map[types.ManagedObjectReference]*VirtualMachineVirtualDeviceGroups{}}

// seedVMDeviceGroup makes the VM's vGPU devices one vendor device group (its config.deviceGroups and each
// device's deviceGroupInfo), as adding an NVIDIA device group in vSphere 8 does.
func seedVMDeviceGroup(vm *simulator.VirtualMachine, vgpu string, name string) {
	const key = 1 // vSphere gives each of a VM's groups a non-negative instance key of its own choosing
	var members int32
	for i, device := range vm.Config.Hardware.Device {
		passthrough, ok := device.(*VirtualPCIPassthrough) // the simulator decoded CreateVM_Task's devices as ours
		if !ok {
			continue
		}
		if _, vmiop := passthrough.Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo); !vmiop {
			continue
		}
		passthrough.DeviceGroupInfo = &VirtualDeviceDeviceGroupInfo{GroupInstanceKey: key, SequenceId: members}
		vm.Config.Hardware.Device[i] = passthrough
		members++
	}
	if name == "" {
		name = nvidiaDeviceGroupName(int(members), vgpu)
	}
	vmDeviceGroups.Lock()
	defer vmDeviceGroups.Unlock()
	vmDeviceGroups.byVM[vm.Self] = &VirtualMachineVirtualDeviceGroups{DeviceGroup: []VirtualMachineVirtualDeviceGroupsVendorDeviceGroup{
		{GroupInstanceKey: key, DeviceGroupName: name}}}
}

// deviceGroupCollector is the simulator's property collector, answering config.deviceGroups as well.
type deviceGroupCollector struct {
	simulator.PropertyCollector
}

func (pc *deviceGroupCollector) RetrievePropertiesEx(ctx *simulator.Context, r *types.RetrievePropertiesEx) soap.HasFault {
	asked := false
	specs := make([]types.PropertyFilterSpec, len(r.SpecSet))
	for i, spec := range r.SpecSet {
		specs[i] = spec
		specs[i].PropSet = nil
		for _, props := range spec.PropSet {
			var paths []string
			for _, path := range props.PathSet {
				if props.Type == "VirtualMachine" && path == vmDeviceGroupsPath {
					asked = true
					continue
				}
				paths = append(paths, path)
			}
			props.PathSet = paths
			specs[i].PropSet = append(specs[i].PropSet, props)
		}
	}
	stripped := *r
	stripped.SpecSet = specs
	answer := pc.PropertyCollector.RetrievePropertiesEx(ctx, &stripped)
	body, ok := answer.(*methods.RetrievePropertiesExBody)
	if !asked || !ok || body.Res == nil || body.Res.Returnval == nil {
		return answer
	}
	vmDeviceGroups.Lock()
	defer vmDeviceGroups.Unlock()
	for i := range body.Res.Returnval.Objects {
		object := &body.Res.Returnval.Objects[i]
		if groups, held := vmDeviceGroups.byVM[object.Obj]; held {
			object.PropSet = append(object.PropSet, types.DynamicProperty{Name: vmDeviceGroupsPath, Val: groups})
		}
	}
	return answer
}

// announceVSphere8 makes the simulator say it is a vCenter 8.0 U1 (API release 8.0.1.0), as the seeded estate's
// is: a client (pyVmomi) reads vSphere 8's types only from a server that announces them; govmomi 0.24's simulator
// announces 6.5, and pyVmomi then reads a device group as a bare DynamicData. The API it serves stays 0.24's.
func announceVSphere8(model *simulator.Model) {
	about := &model.ServiceContent.About
	about.Version, about.Build, about.ApiVersion = "8.0.1", "21560480", "8.0.1.0"
	about.FullName = "VMware vCenter Server 8.0.1 build-21560480"
}

// withoutDeviceGroups drops the seed's device groups: the estate as a vCenter before 8.0 serves it.
func (estate *seed) withoutDeviceGroups() {
	for i := range estate.Hosts {
		estate.Hosts[i].DeviceGroupSizes = nil
	}
	for i := range estate.Vms {
		estate.Vms[i].DeviceGroup = false
	}
}

// reconfiguredGroups keeps each VM's config.deviceGroups in step with its devices (a registry handler: the
// simulator calls UpdateObject with a VM's new config.hardware.device after each device change, inside the task).
type reconfiguredGroups struct {
	mo.ExtensibleManagedObject
}

func (*reconfiguredGroups) PutObject(mo.Reference)                    {}
func (*reconfiguredGroups) RemoveObject(types.ManagedObjectReference) {}

func (*reconfiguredGroups) UpdateObject(object mo.Reference, changes []types.PropertyChange) {
	vm, ok := object.(*mo.VirtualMachine) // the registry hands its handlers the managed object
	if !ok {
		return
	}
	for _, change := range changes {
		if change.Name == "config.hardware.device" {
			regroup(vm)
		}
	}
}

// regroup makes the VM's groups again from its devices' deviceGroupInfo (the package comment says how).
func regroup(vm *mo.VirtualMachine) {
	vmDeviceGroups.Lock()
	defer vmDeviceGroups.Unlock()
	named := map[int32]string{}
	var next int32 = 1
	if held := vmDeviceGroups.byVM[vm.Self]; held != nil {
		for _, group := range held.DeviceGroup {
			named[group.GroupInstanceKey] = group.DeviceGroupName
			if group.GroupInstanceKey >= next {
				next = group.GroupInstanceKey + 1
			}
		}
	}
	members := map[int32][]*VirtualPCIPassthrough{}
	var order []int32
	fresh := map[int32]int32{} // the client's temporary key → the key given
	for _, device := range vm.Config.Hardware.Device {
		passthrough, ok := device.(*VirtualPCIPassthrough)
		if !ok || passthrough.DeviceGroupInfo == nil {
			continue
		}
		info := passthrough.DeviceGroupInfo
		if info.GroupInstanceKey < 0 {
			if _, given := fresh[info.GroupInstanceKey]; !given {
				fresh[info.GroupInstanceKey] = next
				next++
			}
			info.GroupInstanceKey = fresh[info.GroupInstanceKey]
		}
		if _, seen := members[info.GroupInstanceKey]; !seen {
			order = append(order, info.GroupInstanceKey)
		}
		members[info.GroupInstanceKey] = append(members[info.GroupInstanceKey], passthrough)
	}
	groups := &VirtualMachineVirtualDeviceGroups{}
	for _, key := range order {
		name, known := named[key]
		if !known {
			name = offeredName(vm, members[key])
		}
		groups.DeviceGroup = append(groups.DeviceGroup,
			VirtualMachineVirtualDeviceGroupsVendorDeviceGroup{GroupInstanceKey: key, DeviceGroupName: name})
	}
	if len(groups.DeviceGroup) == 0 {
		delete(vmDeviceGroups.byVM, vm.Self)
		return
	}
	vmDeviceGroups.byVM[vm.Self] = groups
}

// offeredName is the name of the group the VM's host offers of the members' size and vGPU type ("" where none).
func offeredName(vm *mo.VirtualMachine, members []*VirtualPCIPassthrough) string {
	backing, vmiop := members[0].Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo)
	if !vmiop || vm.Runtime.Host == nil {
		return ""
	}
	host, ok := simulator.Map.Get(*vm.Runtime.Host).(*simulator.HostSystem)
	if !ok || host.ConfigManager.AssignableHardwareManager == nil {
		return ""
	}
	manager, ok := simulator.Map.Get(*host.ConfigManager.AssignableHardwareManager).(*assignableHardwareManager)
	if !ok {
		return ""
	}
	return manager.groupNamed(len(members), backing.Vgpu)
}

// serveDeviceGroups installs the wrapped property collector, the request type of RetrieveVendorDeviceGroupInfo,
// our VirtualPCIPassthrough as the decoded type of the WSDL's, and the handler regrouping a VM's devices.
func serveDeviceGroups() {
	types.Add("RetrieveVendorDeviceGroupInfo", reflect.TypeOf((*retrieveVendorDeviceGroupInfoRequest)(nil)).Elem())
	types.Add("VirtualPCIPassthrough", reflect.TypeOf((*VirtualPCIPassthrough)(nil)).Elem())
	handler := &reconfiguredGroups{}
	handler.Self = types.ManagedObjectReference{Type: "GpuadminSeed", Value: "reconfigured-groups"}
	simulator.Map.AddHandler(handler)
	collector := &deviceGroupCollector{}
	collector.Self = simulator.Map.Get(vim25.ServiceInstance).(*simulator.ServiceInstance).Content.PropertyCollector
	simulator.Map.Put(collector)
}
