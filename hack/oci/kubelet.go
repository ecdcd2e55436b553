package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"
)

// serviceAccountMount is where the kubelet mounts a pod's ServiceAccount
// token, CA and namespace.
const serviceAccountMount = "/var/run/secrets/kubernetes.io/serviceaccount"

// The kubelet's default masked and read-only paths (ProcMount Default):
// Kubernetes 1.36's pkg/securitycontext (the per-CPU thermal_throttle
// folders it also masks where they exist are left out).
var (
	kubeletMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap"}
	kubeletReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// tmpfsMount is an emptyDir with medium Memory: a tmpfs the kubelet
// mounts on the node and binds into the container; here runc mounts it.
type tmpfsMount struct {
	path      string
	sizeBytes int64
}

// podTemplate reads the pod template of Deployment ref (NAMESPACE/NAME)
// from manifest, refusing any field this program does not know.
func podTemplate(manifest, ref string) (*corev1.PodTemplateSpec, error) {
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	d := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := d.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no Deployment %s", manifest, ref)
		}
		if err != nil {
			return nil, err
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind != "Deployment" || meta.Metadata.Namespace+"/"+meta.Metadata.Name != ref {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &dep); err != nil {
			return nil, fmt.Errorf("Deployment %s: %w", ref, err)
		}
		return &dep.Spec.Template, nil
	}
}

func readImageConfig(file string) (*imagespec.ImageConfig, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var img imagespec.Image
	if err := json.Unmarshal(raw, &img); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &img.Config, nil
}

// containerConfig is the CRI ContainerConfig a kubelet sends for the pod's
// one container, and the emptyDirs it mounts.
func containerConfig(pod *corev1.PodTemplateSpec, image *imagespec.ImageConfig, o options) (*runtime.ContainerConfig, []tmpfsMount, error) {
	spec := pod.Spec
	if len(spec.Containers) != 1 || len(spec.InitContainers) > 0 || len(spec.EphemeralContainers) > 0 {
		return nil, nil, fmt.Errorf("want a pod of one container, got %d (and %d init containers)", len(spec.Containers), len(spec.InitContainers))
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC || spec.ShareProcessNamespace != nil || spec.HostUsers != nil {
		return nil, nil, errors.New("the pod shares a namespace of the node or the pod: not carried")
	}
	c := spec.Containers[0]
	sc, err := securityContext(spec.SecurityContext, c.SecurityContext, image)
	if err != nil {
		return nil, nil, err
	}
	env := append([]*runtime.KeyValue(nil), keyValues(o.env)...)
	if len(c.EnvFrom) > 0 {
		return nil, nil, errors.New("envFrom: not carried")
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, nil, fmt.Errorf("env %s: valueFrom not carried", e.Name)
		}
		env = append(env, &runtime.KeyValue{Key: e.Name, Value: e.Value})
	}
	mounts, tmpfs, err := volumeMounts(spec, c, o)
	if err != nil {
		return nil, nil, err
	}
	resources, err := resourcesOf(c)
	if err != nil {
		return nil, nil, err
	}
	return &runtime.ContainerConfig{
		Metadata:   &runtime.ContainerMetadata{Name: c.Name},
		Image:      &runtime.ImageSpec{Image: c.Image},
		Command:    c.Command,
		Args:       c.Args,
		WorkingDir: c.WorkingDir,
		Envs:       env,
		Mounts:     mounts,
		Linux:      &runtime.LinuxContainerConfig{Resources: resources, SecurityContext: sc},
	}, tmpfs, nil
}

// securityContext is the CRI security context of a container, as the
// kubelet builds it from the pod's and the container's.
func securityContext(pod *corev1.PodSecurityContext, c *corev1.SecurityContext, image *imagespec.ImageConfig) (*runtime.LinuxContainerSecurityContext, error) {
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	if c == nil {
		c = &corev1.SecurityContext{}
	}
	if pod.SELinuxOptions != nil || pod.WindowsOptions != nil || pod.FSGroup != nil || len(pod.SupplementalGroups) > 0 || len(pod.Sysctls) > 0 || pod.AppArmorProfile != nil ||
		c.SELinuxOptions != nil || c.WindowsOptions != nil || c.AppArmorProfile != nil || c.Privileged != nil && *c.Privileged ||
		c.ProcMount != nil && *c.ProcMount != corev1.DefaultProcMount {
		return nil, errors.New("the security context sets SELinux, AppArmor, Windows, fsGroup, supplemental groups, sysctls, privileged or procMount: not carried")
	}
	sc := &runtime.LinuxContainerSecurityContext{
		ReadonlyRootfs: c.ReadOnlyRootFilesystem != nil && *c.ReadOnlyRootFilesystem,
		// The kubelet sets no_new_privs when privilege escalation is refused.
		NoNewPrivs:    c.AllowPrivilegeEscalation != nil && !*c.AllowPrivilegeEscalation,
		MaskedPaths:   kubeletMaskedPaths,
		ReadonlyPaths: kubeletReadonlyPaths,
	}
	runAsUser, runAsGroup, nonRoot := pod.RunAsUser, pod.RunAsGroup, pod.RunAsNonRoot
	if c.RunAsUser != nil {
		runAsUser = c.RunAsUser
	}
	if c.RunAsGroup != nil {
		runAsGroup = c.RunAsGroup
	}
	if c.RunAsNonRoot != nil {
		nonRoot = c.RunAsNonRoot
	}
	if runAsUser != nil {
		sc.RunAsUser = &runtime.Int64Value{Value: *runAsUser}
	}
	if runAsGroup != nil {
		sc.RunAsGroup = &runtime.Int64Value{Value: *runAsGroup}
	}
	if nonRoot != nil && *nonRoot {
		if err := verifyNonRoot(runAsUser, image.User); err != nil {
			return nil, err
		}
	}
	if caps := c.Capabilities; caps != nil {
		sc.Capabilities = &runtime.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	profile := pod.SeccompProfile
	if c.SeccompProfile != nil {
		profile = c.SeccompProfile
	}
	switch {
	case profile == nil:
		// The kubelet's default (SeccompDefault, on since 1.27, as config.yaml sets it here).
		sc.Seccomp = &runtime.SecurityProfile{ProfileType: runtime.SecurityProfile_RuntimeDefault}
	case profile.Type == corev1.SeccompProfileTypeRuntimeDefault:
		sc.Seccomp = &runtime.SecurityProfile{ProfileType: runtime.SecurityProfile_RuntimeDefault}
	default:
		return nil, fmt.Errorf("seccomp profile %s: not carried", profile.Type)
	}
	return sc, nil
}

// verifyNonRoot is the kubelet's runAsNonRoot check: the user the
// container runs as is given by number, and is not root.
func verifyNonRoot(runAsUser *int64, imageUser string) error {
	if runAsUser != nil {
		if *runAsUser == 0 {
			return errors.New("runAsNonRoot and runAsUser is 0")
		}
		return nil
	}
	uid, err := strconv.ParseInt(strings.Split(imageUser, ":")[0], 10, 64)
	if err != nil {
		return fmt.Errorf("runAsNonRoot and the image's user %q is not numeric: the kubelet cannot verify it", imageUser)
	}
	if uid == 0 {
		return errors.New("runAsNonRoot and the image will run as root")
	}
	return nil
}

// volumeMounts are the CRI mounts of the container and the emptyDirs
// (medium Memory) it mounts: the ServiceAccount token the kubelet
// projects, then the container's volumeMounts.
func volumeMounts(spec corev1.PodSpec, c corev1.Container, o options) ([]*runtime.Mount, []tmpfsMount, error) {
	var mounts []*runtime.Mount
	if o.serviceAccount != "" && (spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken) {
		mounts = append(mounts, &runtime.Mount{ContainerPath: serviceAccountMount, HostPath: o.serviceAccount, Readonly: true})
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	var tmpfs []tmpfsMount
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("volumeMount %s: no such volume", m.Name)
		case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory && m.SubPath == "":
			t := tmpfsMount{path: m.MountPath}
			if v.EmptyDir.SizeLimit != nil {
				t.sizeBytes = v.EmptyDir.SizeLimit.Value()
			}
			tmpfs = append(tmpfs, t)
		default:
			return nil, nil, fmt.Errorf("volume %s: only emptyDir (medium Memory) is carried", m.Name)
		}
	}
	return mounts, tmpfs, nil
}

// resourcesOf are the container's cgroup resources as the kubelet sets
// them: CPU shares from the request, the memory limit, and the OOM score
// of a Burstable container.
func resourcesOf(c corev1.Container) (*runtime.LinuxContainerResources, error) {
	r := &runtime.LinuxContainerResources{CpuPeriod: 100000, CpuShares: 2}
	if cpu, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		r.CpuShares = max(cpu.MilliValue()*1024/1000, 2)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		return nil, errors.New("a CPU limit: not carried")
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = mem.Value()
	}
	if req, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		capacity, err := memTotal()
		if err != nil {
			return nil, err
		}
		// Burstable: 1000 - 1000*request/capacity, within [2, 999].
		r.OomScoreAdj = min(max(1000-1000*req.Value()/capacity, 2), 999)
	}
	return r, nil
}

// memTotal is the node's memory, as the kubelet's capacity.
func memTotal() (int64, error) {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

func keyValues(kvs []string) []*runtime.KeyValue {
	var out []*runtime.KeyValue
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, &runtime.KeyValue{Key: k, Value: v})
	}
	return out
}
