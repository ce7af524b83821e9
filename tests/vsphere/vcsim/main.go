// vcsim-gpu: VMware's vCenter simulator (govmomi's simulator.VPX(), real VMware code) with GPU hosts seeded by
// gpuadmin's tests. Test code, never shipped.
//
// The simulator's own model is emptied (no hosts, clusters, VMs nor datastores of its making); this program
// then builds the estate of the seed file (tests/vsphere/seed.yaml) through the vSphere API, as any client would
// (CreateClusterEx, AddHost_Task, CreateLocalDatastore, CreateVM_Task, PowerOnVM_Task), and gives each host what
// the simulator's ESXi template lacks and no API call can set: its ESXi version, its NVIDIA GPUs (PCI devices,
// graphics devices, passthrough state) and the vGPU types it offers. That seeding is ours; everything a client
// sees of it afterwards (sessions, the property collector, tasks, ReconfigVM, vMotion) is the simulator's.
//
// It listens on 127.0.0.1:PORT over TLS (a self-signed certificate, which a verifying client refuses), accepts
// one user: -user and the password in $VCSIM_PASSWORD (never on the command line, where ps shows it), prints one
// JSON line {"url": ...} on stdout once the estate is seeded, and serves until stdin closes or a signal.
//
// Built with Debian's golang-go and golang-github-vmware-govmomi-dev (+ golang-gopkg-yaml.v3-dev), offline,
// GO111MODULE=off with GOPATH at /usr/share/gocode (tests/vsphere/vcsim.py).
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
	"gopkg.in/yaml.v3"
)

type seedGpu struct {
	DeviceID  int    `yaml:"device_id"`
	Name      string `yaml:"name"`
	MemoryMiB int64  `yaml:"memory_mib"`
	Count     int    `yaml:"count"`
}

type seedHost struct {
	Name        string   `yaml:"name"`
	Cluster     string   `yaml:"cluster"`
	Esxi        string   `yaml:"esxi"`
	Build       string   `yaml:"build"`
	Cpus        int16    `yaml:"cpus"`
	MemoryGiB   int64    `yaml:"memory_gib"`
	Gpu         seedGpu  `yaml:"gpu"`
	Passthrough []int    `yaml:"passthrough"`
	NVSwitches  int      `yaml:"nvswitches"`
	VgpuTypes   []string `yaml:"vgpu_types"`
	VmotionMb   []int32  `yaml:"vmotion_mb"` // the link speeds of its vMotion uplinks (network.go)
	// the sizes of the NVLink device groups the host offers, one of each size per vGPU type (devicegroups.go)
	DeviceGroupSizes []int `yaml:"device_group_sizes"`
}

type seedVgpus struct {
	Type string `yaml:"type"`
	Gpus []int  `yaml:"gpus"`
}

type seedVM struct {
	Name        string     `yaml:"name"`
	Host        string     `yaml:"host"`
	Hw          int        `yaml:"hw"`
	Power       string     `yaml:"power"`
	Vgpus       *seedVgpus `yaml:"vgpus"`
	Passthrough []int      `yaml:"passthrough"`
	DeviceGroup bool       `yaml:"device_group"` // its vGPUs are one vendor device group (devicegroups.go)
	// the group's name where not NVIDIA's for its vGPUs (a test's hostile name)
	DeviceGroupName string `yaml:"device_group_name"`
}

type seed struct {
	Datacenter string     `yaml:"datacenter"`
	Clusters   []string   `yaml:"clusters"`
	Hosts      []seedHost `yaml:"hosts"`
	Vms        []seedVM   `yaml:"vms"`
}

const nvidiaVendor = 0x10de
const nvswitchDevice = 0x1af1 // GA100 NVSwitch (pci.ids), the HGX A100 board's switch: a PCI bridge (class 0x0680)

// pciID is the seed's PCI address of a host's GPU `index`: buses 0x17, 0x27, ... in index order.
func pciID(index int) string {
	return fmt.Sprintf("0000:%02x:00.0", 0x17+0x10*index)
}

func main() {
	seedFile := flag.String("seed", "", "the seed file (YAML)")
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: any free one)")
	user := flag.String("user", "administrator@vsphere.local", "the one user the simulator accepts")
	withoutGroups := flag.Bool("without-device-groups", false,
		"serve no vSphere 8 device groups, as govmomi 0.24's simulator and a vCenter before 8.0 (devicegroups.go)")
	flag.Parse()
	password := os.Getenv("VCSIM_PASSWORD")
	if *seedFile == "" || password == "" {
		fmt.Fprintln(os.Stderr, "usage: vcsim-gpu -seed FILE [-port N] [-user U], the password in $VCSIM_PASSWORD")
		os.Exit(2)
	}
	var estate seed
	raw, err := ioutil.ReadFile(*seedFile)
	if err == nil {
		err = yaml.Unmarshal(raw, &estate)
	}
	if err != nil {
		fail("seed", err)
	}

	model := simulator.VPX()
	model.Host, model.Cluster, model.ClusterHost, model.Machine, model.Datastore, model.Portgroup = 0, 0, 0, 0, 0, 0
	defer model.Remove()
	if !*withoutGroups {
		announceVSphere8(model)
	}
	if err := model.Create(); err != nil {
		fail("create", err)
	}
	if !*withoutGroups {
		serveDeviceGroups()
	} else {
		estate.withoutDeviceGroups()
	}
	model.Service.TLS = new(tls.Config)
	model.Service.Listen = &url.URL{Host: fmt.Sprintf("127.0.0.1:%d", *port), User: url.UserPassword(*user, password)}
	server := model.Service.NewServer()
	defer server.Close()

	ctx := context.Background()
	client, err := govmomi.NewClient(ctx, server.URL, true)
	if err != nil {
		fail("login", err)
	}
	dir, err := ioutil.TempDir("", "vcsim-gpu-ds-")
	if err != nil {
		fail("datastore", err)
	}
	defer os.RemoveAll(dir)
	if err := build(ctx, client, &estate, dir); err != nil {
		fail("seed", err)
	}
	simulator.Map.AddHandler(newGraphicsSeed()) // graphics.go: graphicsInfo follows the VMs from here on
	_ = client.Logout(ctx)

	address := *server.URL
	address.User = nil
	line, _ := json.Marshal(map[string]string{"url": address.String()})
	fmt.Println(string(line))

	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		_, _ = io.Copy(ioutil.Discard, os.Stdin) // the parent went away: so does the simulator
		done <- syscall.SIGTERM
	}()
	<-done
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "vcsim-gpu: %s: %v\n", what, err)
	os.Exit(1)
}

func build(ctx context.Context, client *govmomi.Client, estate *seed, dir string) error {
	finder := find.NewFinder(client.Client, false)
	dc, err := finder.DefaultDatacenter(ctx)
	if err != nil {
		return err
	}
	if estate.Datacenter != "" {
		task, err := dc.Rename(ctx, estate.Datacenter)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return err
		}
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return err
	}
	clusters := map[string]*object.ClusterComputeResource{}
	for _, name := range estate.Clusters {
		cluster, err := folders.HostFolder.CreateCluster(ctx, name, types.ClusterConfigSpecEx{})
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		clusters[name] = cluster
	}
	hosts := map[string]*object.HostSystem{}
	for i := range estate.Hosts {
		spec := &estate.Hosts[i]
		cluster, ok := clusters[spec.Cluster]
		if !ok {
			return fmt.Errorf("host %s: no cluster %q", spec.Name, spec.Cluster)
		}
		task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: spec.Name}, true, nil, nil)
		if err != nil {
			return err
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("host %s: %w", spec.Name, err)
		}
		host := object.NewHostSystem(client.Client, info.Result.(types.ManagedObjectReference))
		hosts[spec.Name] = host
		dss, err := host.ConfigManager().DatastoreSystem(ctx)
		if err != nil {
			return err
		}
		// one datastore shared by every host (the same directory): a vMotion moves a VM, not its disks
		if _, err := dss.CreateLocalDatastore(ctx, "gpu-ds", dir); err != nil {
			return fmt.Errorf("host %s datastore: %w", spec.Name, err)
		}
		seedHardware(simulator.Map.Get(host.Reference()).(*simulator.HostSystem), spec)
		seedHostNetworkAndGraphics(simulator.Map.Get(host.Reference()).(*simulator.HostSystem), spec)
		seedOfferedDeviceGroups(simulator.Map.Get(host.Reference()).(*simulator.HostSystem), spec)
	}
	seedPassthroughTargets(clusters) // passthrough.go
	specs := map[string]*seedHost{}
	for i := range estate.Hosts {
		specs[estate.Hosts[i].Name] = &estate.Hosts[i]
	}
	for i := range estate.Vms {
		vm := &estate.Vms[i]
		host, ok := hosts[vm.Host]
		if !ok {
			return fmt.Errorf("vm %s: no host %q", vm.Name, vm.Host)
		}
		if err := createVM(ctx, client, folders, host, specs[vm.Host], vm); err != nil {
			return fmt.Errorf("vm %s: %w", vm.Name, err)
		}
	}
	return nil
}

// seedHardware gives a simulated host what its ESXi template lacks: the ESXi version, CPUs and memory of the
// seed, and its GPUs as PCI devices, graphics devices and passthrough state, and the vGPU types it offers.
func seedHardware(host *simulator.HostSystem, spec *seedHost) {
	about := host.Config.Product
	about.Version = spec.Esxi
	about.Build = spec.Build
	about.FullName = fmt.Sprintf("VMware ESXi %s build-%s", spec.Esxi, spec.Build)
	host.Config.Product = about
	summaryAbout := about
	host.Summary.Config.Product = &summaryAbout

	hardware := *host.Summary.Hardware
	hardware.NumCpuCores = spec.Cpus
	hardware.NumCpuThreads = spec.Cpus
	hardware.MemorySize = spec.MemoryGiB << 30
	host.Summary.Hardware = &hardware
	host.Hardware.MemorySize = hardware.MemorySize
	host.Hardware.CpuInfo.NumCpuCores = spec.Cpus
	host.Hardware.CpuInfo.NumCpuThreads = spec.Cpus

	passthrough := map[int]bool{}
	for _, index := range spec.Passthrough {
		passthrough[index] = true
	}
	devices := append([]types.HostPciDevice(nil), host.Hardware.PciDevice...)
	var graphics []types.HostGraphicsInfo
	var passthru []types.BaseHostPciPassthruInfo
	for index := 0; index < spec.Gpu.Count; index++ {
		id := pciID(index)
		devices = append(devices, types.HostPciDevice{
			Id: id, ClassId: 0x0302, Bus: byte(0x17 + 0x10*index), VendorId: nvidiaVendor,
			DeviceId: int16(spec.Gpu.DeviceID), VendorName: "NVIDIA Corporation", DeviceName: spec.Gpu.Name,
			SubVendorId: nvidiaVendor,
		})
		kind := "sharedDirect"
		if passthrough[index] {
			kind = "direct"
		}
		graphics = append(graphics, types.HostGraphicsInfo{
			DeviceName: spec.Gpu.Name, VendorName: "NVIDIA Corporation", PciId: id, GraphicsType: kind,
			MemorySizeInKB: spec.Gpu.MemoryMiB * 1024,
		})
		passthru = append(passthru, &types.HostPciPassthruInfo{
			Id: id, DependentDevice: id, PassthruEnabled: passthrough[index], PassthruCapable: true,
			PassthruActive: passthrough[index],
		})
	}
	for index := 0; index < spec.NVSwitches; index++ {
		devices = append(devices, types.HostPciDevice{
			Id: fmt.Sprintf("0000:%02x:00.0", 0xc0+index), ClassId: 0x0680, Bus: byte(0xc0 + index),
			VendorId: nvidiaVendor, DeviceId: nvswitchDevice, VendorName: "NVIDIA Corporation",
			DeviceName: "GA100 [A100 NVSwitch]", SubVendorId: nvidiaVendor,
		})
	}
	host.Hardware.PciDevice = devices
	host.Config.GraphicsInfo = graphics
	host.Config.PciPassthruInfo = passthru
	host.Config.SharedPassthruGpuTypes = append([]string(nil), spec.VgpuTypes...)
}

func createVM(ctx context.Context, client *govmomi.Client, folders *object.DatacenterFolders,
	host *object.HostSystem, hostSpec *seedHost, vm *seedVM) error {
	pool, err := host.ResourcePool(ctx)
	if err != nil {
		return err
	}
	var changes []types.BaseVirtualDeviceConfigSpec
	add := func(backing types.BaseVirtualDeviceBackingInfo) {
		changes = append(changes, &types.VirtualDeviceConfigSpec{
			Operation: types.VirtualDeviceConfigSpecOperationAdd,
			Device:    &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Backing: backing}},
		})
	}
	var gpus []int
	if vm.Vgpus != nil {
		for _, index := range vm.Vgpus.Gpus {
			add(&types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: vm.Vgpus.Type})
			gpus = append(gpus, index)
		}
	}
	for _, index := range vm.Passthrough {
		add(&types.VirtualPCIPassthroughDeviceBackingInfo{
			VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{DeviceName: hostSpec.Gpu.Name},
			Id:                             pciID(index),
			DeviceId:                       fmt.Sprintf("%x", hostSpec.Gpu.DeviceID),
			SystemId:                       "seed-" + hostSpec.Name,
			VendorId:                       nvidiaVendor,
		})
		gpus = append(gpus, index)
	}
	spec := types.VirtualMachineConfigSpec{
		Name:         vm.Name,
		GuestId:      string(types.VirtualMachineGuestOsIdentifierOtherGuest64),
		Version:      fmt.Sprintf("vmx-%d", vm.Hw),
		Files:        &types.VirtualMachineFileInfo{VmPathName: "[gpu-ds]"},
		NumCPUs:      8,
		MemoryMB:     32768,
		DeviceChange: changes,
	}
	task, err := folders.VmFolder.CreateVM(ctx, spec, pool, host)
	if err != nil {
		return err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return err
	}
	ref := info.Result.(types.ManagedObjectReference)
	if vm.DeviceGroup && vm.Vgpus != nil {
		seedVMDeviceGroup(simulator.Map.Get(ref).(*simulator.VirtualMachine), vm.Vgpus.Type, vm.DeviceGroupName)
	}
	if !strings.EqualFold(vm.Power, "off") {
		task, err := object.NewVirtualMachine(client.Client, ref).PowerOn(ctx)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return err
		}
	}
	if strings.EqualFold(vm.Power, "off") {
		return nil // a VM that is off holds no GPU: ESXi names only running VMs on a graphics device
	}
	// which GPU each vGPU and passthrough device sits on: the host's graphics devices name their VMs
	simHost := simulator.Map.Get(host.Reference()).(*simulator.HostSystem)
	for _, index := range gpus {
		info := &simHost.Config.GraphicsInfo[index]
		if len(info.Vm) == 0 || info.Vm[len(info.Vm)-1] != ref {
			info.Vm = append(info.Vm, ref)
		}
	}
	return nil
}
