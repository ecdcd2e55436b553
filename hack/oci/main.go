// Command oci writes the OCI runtime spec (runc's config.json) with which
// a Kubernetes node running containerd would run one container of a
// Deployment, so that a test can run stencil's controller image with runc
// exactly as the release manifest's Deployment asks, on a machine with no
// kubelet (see internal/e2e, TestInstalledController).
//
//	go run . -manifest install.yaml -deployment NAMESPACE/NAME -rootfs DIR -image-config FILE \
//	    -hostname NAME -netns PATH -cgroup PATH [-serviceaccount DIR] [-env K=V]... > config.json
//
// It does in two steps what the node does:
//
//  1. The kubelet's part (kubelet.go): the pod template's container
//     becomes the CRI ContainerConfig a kubelet sends: command and args,
//     env, volume mounts (the ServiceAccount token folder, emptyDirs), the
//     memory limit, and the security context: runAsNonRoot checked
//     against the image's user, allowPrivilegeEscalation as no_new_privs,
//     readOnlyRootFilesystem, capabilities, the seccomp profile, and the
//     kubelet's default masked and read-only /proc paths. A field it does
//     not know how to carry is an error, so the test can never run the
//     controller under less than the manifest asks.
//  2. containerd's part (cri.go): the spec containerd 1.6.20's CRI plugin
//     (Debian bookworm's containerd) builds from that config, made with
//     containerd's own code: its default spec (pkg/oci) and the CRI
//     plugin's spec options (pkg/cri/opts) in the CRI plugin's order, and
//     for RuntimeDefault the seccomp profile containerd ships
//     (contrib/seccomp). Only the sandbox differs: the container gets the
//     network namespace -netns instead of a pause container's, and its
//     own hostname, IPC and PID namespaces.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.manifest, "manifest", "", "the manifest holding the Deployment (e.g. dist/install.yaml)")
	flag.StringVar(&o.deployment, "deployment", "stencil-system/stencil-controller", "NAMESPACE/NAME of the Deployment")
	flag.StringVar(&o.rootfs, "rootfs", "", "absolute path of the image's unpacked root file system")
	flag.StringVar(&o.imageConfig, "image-config", "", "the image's config file (OCI image config JSON)")
	flag.StringVar(&o.hostname, "hostname", "", "the pod's hostname (its name)")
	flag.StringVar(&o.netns, "netns", "", "path of the pod's network namespace")
	flag.StringVar(&o.cgroup, "cgroup", "", "cgroup path of the container (cgroupfs)")
	flag.StringVar(&o.serviceAccount, "serviceaccount", "", "folder holding token, ca.crt and namespace, mounted as the kubelet mounts a ServiceAccount's")
	flag.Func("env", "K=V added to the container's environment, as the kubelet adds the service variables (repeatable)", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want K=V")
		}
		o.env = append(o.env, s)
		return nil
	})
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "oci:", err)
		os.Exit(1)
	}
}

type options struct {
	manifest, deployment, rootfs, imageConfig string
	hostname, netns, cgroup, serviceAccount   string
	env                                       []string
}

func run(o options) error {
	for flag, v := range map[string]string{"-manifest": o.manifest, "-rootfs": o.rootfs, "-image-config": o.imageConfig, "-hostname": o.hostname, "-netns": o.netns, "-cgroup": o.cgroup} {
		if v == "" {
			return fmt.Errorf("%s is required", flag)
		}
	}
	pod, err := podTemplate(o.manifest, o.deployment)
	if err != nil {
		return err
	}
	image, err := readImageConfig(o.imageConfig)
	if err != nil {
		return err
	}
	config, tmpfs, err := containerConfig(pod, image, o)
	if err != nil {
		return err
	}
	spec, err := containerSpec(context.Background(), config, tmpfs, image, o)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(spec)
}
