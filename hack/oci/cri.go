package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/containerd/pkg/cap"
	customopts "github.com/containerd/containerd/pkg/cri/opts"
	osinterface "github.com/containerd/containerd/pkg/os"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
	runtimespec "github.com/opencontainers/runtime-spec/specs-go"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerSpec is the OCI spec containerd 1.6.20's CRI plugin makes for
// config (its criService.containerSpec and containerSpecOpts, in their
// order, with containerd's defaults: no base runtime spec, no SELinux or
// AppArmor on this node, cgroup v1), in the sandbox options gives.
func containerSpec(ctx context.Context, config *runtime.ContainerConfig, tmpfs []tmpfsMount, image *imagespec.ImageConfig, o options) (*runtimespec.Spec, error) {
	allCaps, err := cap.Current()
	if err != nil {
		return nil, err
	}
	sc := config.GetLinux().GetSecurityContext()
	env := append([]string{"HOSTNAME=" + o.hostname}, image.Env...)
	for _, e := range config.GetEnvs() {
		env = append(env, e.GetKey()+"="+e.GetValue())
	}
	opts := []oci.SpecOpts{
		oci.WithoutRunMount,
		customopts.WithoutDefaultSecuritySettings,
		oci.WithRootFSPath(o.rootfs),
		customopts.WithProcessArgs(config, image),
		oci.WithDefaultPathEnv,
		oci.WithNewPrivileges,
	}
	if dir := config.GetWorkingDir(); dir != "" {
		opts = append(opts, oci.WithProcessCwd(dir))
	} else if image.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(image.WorkingDir))
	}
	opts = append(opts,
		oci.WithEnv(env),
		customopts.WithMounts(osinterface.RealOS{}, config, nil, ""),
		withTmpfs(tmpfs),
		oci.WithMaskedPaths([]string{}), oci.WithReadonlyPaths([]string{}),
		oci.WithMaskedPaths(sc.GetMaskedPaths()), oci.WithReadonlyPaths(sc.GetReadonlyPaths()),
		customopts.WithDevices(osinterface.RealOS{}, config, false),
		customopts.WithCapabilities(sc, allCaps),
		customopts.WithoutAmbientCaps,
	)
	if sc.GetNoNewPrivs() {
		opts = append(opts, oci.WithNoNewPrivileges)
	}
	if sc.GetReadonlyRootfs() {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	opts = append(opts,
		customopts.WithResources(config.GetLinux().GetResources(), true, false),
		oci.WithCgroup(o.cgroup),
		customopts.WithOOMScoreAdj(config, false),
		// The sandbox: the pod's network namespace; the container's own
		// hostname (the pod's), IPC and PID namespaces.
		oci.WithLinuxNamespace(runtimespec.LinuxNamespace{Type: runtimespec.NetworkNamespace, Path: o.netns}),
		oci.WithHostname(o.hostname),
		customopts.WithSupplementalGroups(sc.GetSupplementalGroups()),
	)
	// containerSpecOpts: the user, then the seccomp profile.
	user := image.User
	if u := sc.GetRunAsUser(); u != nil {
		user = strconv.FormatInt(u.GetValue(), 10)
		if g := sc.GetRunAsGroup(); g != nil {
			user += ":" + strconv.FormatInt(g.GetValue(), 10)
		}
	}
	if user != "" {
		opts = append(opts, oci.WithUser(user))
	}
	opts = append(opts, customopts.WithAdditionalGIDs(strconv.FormatInt(sc.GetRunAsUser().GetValue(), 10)))
	switch p := sc.GetSeccomp(); p.GetProfileType() {
	case runtime.SecurityProfile_RuntimeDefault:
		opts = append(opts, seccomp.WithDefaultProfile())
	default:
		return nil, fmt.Errorf("seccomp profile %s: not carried", p.GetProfileType())
	}
	ctx = namespaces.WithNamespace(ctx, "k8s.io")
	return oci.GenerateSpec(ctx, nil, &containers.Container{ID: o.hostname}, opts...)
}

// withTmpfs mounts each emptyDir of medium Memory as a tmpfs any user may
// write (the kubelet makes emptyDirs 0777), at most its size limit.
func withTmpfs(mounts []tmpfsMount) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *runtimespec.Spec) error {
		for _, m := range mounts {
			opts := []string{"nosuid", "nodev", "mode=0777"}
			if m.sizeBytes > 0 {
				opts = append(opts, "size="+strconv.FormatInt(m.sizeBytes, 10))
			}
			s.Mounts = append(s.Mounts, runtimespec.Mount{Destination: m.path, Type: "tmpfs", Source: "tmpfs", Options: opts})
		}
		return nil
	}
}
