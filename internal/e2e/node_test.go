package e2e_test

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// node plays, for the pods of one Deployment, a Kubernetes node whose
// kubelet runs containerd: each pod gets a network namespace on a bridge
// of its own, as a CNI bridge plugin would give it; the node routes the
// kubernetes Service's address to the API server, as kube-proxy would;
// and runc runs the pod's one container with the spec hack/oci writes
// from the pod template: what containerd 1.6.20's CRI plugin would give
// runc, with its RuntimeDefault seccomp profile. The kubelet's other
// duties the test does itself: the ServiceAccount token, the readiness
// probe, the Service's endpoints (an EndpointSlice), restarts.
//
// Everything it makes on the machine (bridge, network namespaces, the
// NAT rule, cgroups) is named after a random id, so that tests of other
// clones on the same machine never meet, and removed at the end.
type node struct {
	t          *testing.T
	id         string
	runc       string
	state      string // runc's --root
	specTool   string // hack/oci, built
	manifest   string // the release manifest holding the Deployment
	deployment string // its NAMESPACE/NAME
	image      v1.Image
	kube       kubernetes.Interface
	bridge     string
	subnet     string // 10.244.N
	apiServer  string // HOST:PORT on loopback
	serviceIP  string // the kubernetes Service's address
	next       int    // the last octet of the next pod's address
}

// pod is one running pod of the node.
type pod struct {
	name, ip, netns, container string
	log                        string // the container's output
	done                       chan struct{}
	n                          *node
}

// newNode prepares the node: builds hack/oci, makes the bridge with its
// address and the NAT rule that sends the kubernetes Service's traffic
// to the API server at apiServer (HOST:PORT, on loopback).
func newNode(t *testing.T, root, runc, manifest, deployment string, image v1.Image, kube kubernetes.Interface, apiServer string) *node {
	t.Helper()
	buf := make([]byte, 3)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, id: hex.EncodeToString(buf), runc: runc, state: t.TempDir(), manifest: manifest, deployment: deployment,
		image: image, kube: kube, apiServer: apiServer, next: 10}
	n.specTool = filepath.Join(t.TempDir(), "oci")
	mustExec(t, "build hack/oci", "go", "build", "-C", filepath.Join(root, "hack", "oci"), "-o", n.specTool, ".")
	svc, err := kube.CoreV1().Services("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.serviceIP = svc.Spec.ClusterIP
	n.subnet = freeSubnet(t, buf[0])
	n.bridge = "stbr" + n.id
	t.Cleanup(n.teardown)
	mustExec(t, "make the pods' bridge", "ip", "link", "add", n.bridge, "type", "bridge")
	mustExec(t, "address the bridge", "ip", "addr", "add", n.subnet+".1/24", "dev", n.bridge)
	mustExec(t, "raise the bridge", "ip", "link", "set", n.bridge, "up")
	// kube-proxy's rule for the kubernetes Service, to an API server on
	// loopback: DNAT, and loopback destinations allowed from the bridge.
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+n.bridge+"/route_localnet", []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustExec(t, "route the kubernetes Service", "iptables", n.natRule("-A")...)
	return n
}

func (n *node) natRule(op string) []string {
	return []string{"-t", "nat", op, "PREROUTING", "-i", n.bridge, "-d", n.serviceIP, "-p", "tcp", "--dport", "443",
		"-j", "DNAT", "--to-destination", n.apiServer, "-m", "comment", "--comment", "stencil-e2e-" + n.id}
}

// freeSubnet picks 10.244.N.0/24, N from seed, that no route of the
// machine uses.
func freeSubnet(t *testing.T, seed byte) string {
	out, err := exec.Command("ip", "-4", "route").Output()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 254; i++ {
		s := fmt.Sprintf("10.244.%d", (int(seed)+i)%254+1)
		if !strings.Contains(string(out), s+".") {
			return s
		}
	}
	t.Fatal("no free 10.244.N.0/24")
	return ""
}

// start starts pod name: its network namespace and address, its
// ServiceAccount token, its root file system from the image, the spec,
// and runc running it.
func (n *node) start(name string) *pod {
	t := n.t
	t.Helper()
	ns, dep, _ := strings.Cut(n.deployment, "/")
	p := &pod{name: name, n: n, netns: "stencil-" + n.id + "-" + name, container: "stencil-" + n.id + "-" + name, done: make(chan struct{})}
	p.ip = fmt.Sprintf("%s.%d", n.subnet, n.next)
	veth := fmt.Sprintf("stv%s%d", n.id, n.next)
	n.next++
	mustExec(t, "make the pod's network namespace", "ip", "netns", "add", p.netns)
	mustExec(t, "make the pod's interface", "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", p.netns)
	mustExec(t, "plug it into the bridge", "ip", "link", "set", veth, "master", n.bridge, "up")
	for _, args := range [][]string{
		{"addr", "add", p.ip + "/24", "dev", "eth0"}, {"link", "set", "eth0", "up"}, {"link", "set", "lo", "up"},
		{"route", "add", "default", "via", n.subnet + ".1"},
	} {
		mustExec(t, "configure the pod's network", "ip", append([]string{"-n", p.netns}, args...)...)
	}
	dir := filepath.Join(t.TempDir(), name)
	rootfs := filepath.Join(dir, "rootfs")
	unpack(t, n.image, rootfs)
	raw, err := n.image.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	imageConfig := filepath.Join(dir, "image.json")
	writeFile(t, imageConfig, raw)
	sa := n.serviceAccount(dir, ns, dep)
	spec := mustExec(t, "write the container's spec", n.specTool, "-manifest", n.manifest, "-deployment", n.deployment,
		"-rootfs", rootfs, "-image-config", imageConfig, "-hostname", dep+"-"+name, "-netns", "/var/run/netns/"+p.netns,
		"-cgroup", "/stencil-e2e-"+n.id+"/"+name, "-serviceaccount", sa,
		"-env", "KUBERNETES_SERVICE_HOST="+n.serviceIP, "-env", "KUBERNETES_SERVICE_PORT=443")
	writeFile(t, filepath.Join(dir, "config.json"), []byte(spec))
	p.log = filepath.Join(dir, "container.log")
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(n.runc, "--root", n.state, "run", "--bundle", dir, p.container)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("runc run %s: %v", p.container, err)
	}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p
}

// serviceAccount writes what the kubelet projects for the pod's
// ServiceAccount: a token from the TokenRequest API, the cluster's CA as
// the kube-root-ca.crt ConfigMap publishes it, and the namespace.
func (n *node) serviceAccount(dir, ns, dep string) string {
	t := n.t
	ctx := context.Background()
	d, err := n.kube.AppsV1().Deployments(ns).Get(ctx, dep, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := n.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, d.Spec.Template.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of ServiceAccount %s/%s: %v", ns, d.Spec.Template.Spec.ServiceAccountName, err)
	}
	ca, err := n.kube.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := filepath.Join(dir, "serviceaccount")
	writeFile(t, filepath.Join(sa, "token"), []byte(tok.Status.Token))
	writeFile(t, filepath.Join(sa, "ca.crt"), []byte(ca.Data["ca.crt"]))
	writeFile(t, filepath.Join(sa, "namespace"), []byte(ns))
	return sa
}

// ready is the pod's readiness probe: GET /readyz on port 8081 (the
// Deployment's probes port) answers 200.
func (p *pod) ready() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + p.ip + ":8081/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends the container signal (TERM, as the kubelet stops a pod, or
// KILL) and waits for it to end.
func (p *pod) stop(signal string) {
	p.n.t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	if out, err := exec.Command(p.n.runc, "--root", p.n.state, "kill", p.container, signal).CombinedOutput(); err != nil {
		p.n.t.Logf("runc kill %s %s: %v: %s", p.container, signal, err, out)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.n.t.Errorf("pod %s did not stop within a minute of %s", p.name, signal)
	}
	_ = exec.Command(p.n.runc, "--root", p.n.state, "delete", "--force", p.container).Run()
}

// output is what the container wrote so far.
func (p *pod) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// publish makes the EndpointSlice of Service svc list the pods given as
// its ready endpoints on port, as the EndpointSlice controller does for
// ready pods.
func (n *node) publish(svc, port string, number int32, pods ...*pod) {
	t := n.t
	t.Helper()
	ns, _, _ := strings.Cut(n.deployment, "/")
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc + "-" + n.id, Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "e2e.stencil.dev"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To(number), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, p := range pods {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	ctx := context.Background()
	slices := n.kube.DiscoveryV1().EndpointSlices(ns)
	if old, err := slices.Get(ctx, slice.Name, metav1.GetOptions{}); err == nil {
		slice.ResourceVersion = old.ResourceVersion
		_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// teardown stops every container of the node and removes what it made.
func (n *node) teardown() {
	out, _ := exec.Command(n.runc, "--root", n.state, "list", "-q").Output()
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command(n.runc, "--root", n.state, "kill", id, "KILL").Run()
		_ = exec.Command(n.runc, "--root", n.state, "delete", "--force", id).Run()
	}
	if n.bridge != "" {
		_ = exec.Command("iptables", n.natRule("-D")...).Run()
		_ = exec.Command("ip", "link", "del", n.bridge).Run()
	}
	out, _ = exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "stencil-"+n.id+"-") {
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
}

// unpack writes the image's files under dir with their modes and owners,
// as a snapshotter would.
func unpack(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		mode := os.FileMode(h.Mode) & os.ModePerm
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var f *os.File
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				break
			}
			if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
				_, err = io.Copy(f, tr)
				f.Close()
			}
		default:
			err = fmt.Errorf("entry %s of type %c: not in stencil's image", h.Name, h.Typeflag)
		}
		if err == nil {
			err = os.Chmod(path, mode)
		}
		if err == nil {
			err = os.Lchown(path, h.Uid, h.Gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
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

// mustExec runs a command and returns its standard output; it fails the
// test, saying what it was doing, when the command fails.
func mustExec(t *testing.T, what, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %s %s: %v\n%s", what, name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
