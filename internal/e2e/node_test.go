package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// realNode is the kubelet node of hack/node.sh in a test's cluster.
type realNode struct {
	name, dir string
}

// requireNode makes sure a node can run here (hack/node.sh deps), and
// skips the test, saying why, where it cannot.
func requireNode(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(testenv.Root(), "hack", "node.sh"), "deps")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		t.Skipf("no kubelet node can run on this machine: %s", strings.TrimSpace(stderr.String()))
	case err != nil:
		t.Fatalf("hack/node.sh deps: %v\n%s", err, stderr.String())
	}
}

// startNode starts the real node in the cluster of kubeconfig, labelled
// and tainted stencil.dev/e2e-node=real, pulling from registry over HTTP,
// and stops it (every pod, the kubelet, containerd) when the test ends.
func startNode(t *testing.T, root, kubeconfig, registry string) *realNode {
	t.Helper()
	n := &realNode{name: "stencil-e2e-node", dir: filepath.Join(t.TempDir(), "node")}
	nodeCmd := func(verb string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(root, "hack", "node.sh"), verb)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "STENCIL_NODE_DIR="+n.dir, "STENCIL_NODE_NAME="+n.name,
			"STENCIL_NODE_LABELS=stencil.dev/e2e-node=real", "STENCIL_NODE_TAINTS=stencil.dev/e2e-node=real:NoSchedule",
			"STENCIL_NODE_HTTP_REGISTRIES="+registry)
		return cmd.CombinedOutput()
	}
	t.Cleanup(func() {
		if out, err := nodeCmd("down"); err != nil {
			t.Errorf("hack/node.sh down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := nodeCmd("up"); err != nil {
		t.Fatalf("hack/node.sh up: %v\n%s\nkubelet: %s", err, out, tail(readFile(filepath.Join(n.dir, "kubelet.log"))))
	}
	t.Logf("node %s Ready in %s", n.name, time.Since(start).Round(time.Second))
	return n
}

// controllerPods are the running pods of stencil's Deployment, by name.
func (n *realNode) controllerPods(t *testing.T, kube kubernetes.Interface) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods("stencil-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=stencil"})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// podLog is what the pod's container wrote, as the kubelet keeps it.
func (n *realNode) podLog(t *testing.T, p corev1.Pod) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(n.dir, "pod-logs", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "*", "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no log of pod %s (%v)", p.Name, err)
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(readFile(f))
	}
	return b.String()
}

// leader waits until a running pod of stencil's holds the controller's
// Lease under another identity than not ("" any), and returns the pod's
// name and the holder's identity (the pod's name and a process's uuid).
// timeout 0 is testenv.Timeout.
func (n *realNode) leader(t *testing.T, kube kubernetes.Interface, not string, timeout time.Duration) (pod, identity string) {
	t.Helper()
	testenv.Eventually(t, timeout, "a pod to lead", func() (bool, error) {
		l, err := kube.CoordinationV1().Leases("stencil-system").Get(context.Background(), leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == not {
			return false, fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		identity = *l.Spec.HolderIdentity
		for _, p := range n.controllerPods(t, kube) {
			if strings.HasPrefix(identity, p.Name+"_") {
				pod = p.Name
				return true, nil
			}
		}
		return false, fmt.Errorf("holder %q is no running pod", identity)
	})
	return pod, identity
}

// kill kills the container of pod (SIGKILL, as a crash or the OOM killer
// would), through the node's containerd; the kubelet restarts it.
func (n *realNode) kill(t *testing.T, kube kubernetes.Interface, pod string) {
	t.Helper()
	p, err := kube.CoreV1().Pods("stencil-system").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("pod %s: %d container statuses", pod, len(p.Status.ContainerStatuses))
	}
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := exec.Command("ctr", "-a", filepath.Join(n.dir, "containerd", "containerd.sock"), "-n", "k8s.io",
		"tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
	if err != nil {
		t.Fatalf("kill the container %s of pod %s: %v\n%s", id, pod, err, out)
	}
}

// confined is the controller's log line saying its render workers hold
// Landlock and seccomp.
var confined = regexp.MustCompile(`render workers are confined.*"landlockABI":[1-9].*"seccomp":true`)

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
