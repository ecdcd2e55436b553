package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile"
)

// TestInstalledController installs stencil as its users do and runs the
// controller as a node would (issue 32): the image built by hack/image
// (make image) and pushed to an OCI registry (make push; here
// go-containerregistry's), the release manifest of hack/release (make
// release) applied with kubectl to the local cluster, and the
// Deployment's two pods run by runc from the image the manifest names, by
// digest, with the Deployment's security context and containerd's
// RuntimeDefault seccomp profile (node_test.go). Then:
//
//   - the render workers confine themselves (Landlock, seccomp) and
//     render: a Composition and an instance of a published kind become
//     Ready;
//   - the webhook, with the certificate the controller made for its
//     Service, answers the API server's calls through that Service;
//   - an upgrade from the previous release manifest (a field added to the
//     Composition CRD) with kubectl apply -k of the release's overlay keeps
//     the webhook's certificate through a rolling restart;
//   - of two replicas one leads; one stopped hands over at once, one
//     killed is replaced within the lease duration.
//
// It needs root (network namespaces, cgroups, runc), and runc and
// iptables, which hack/oci-runtime.sh installs with apt-get when missing;
// it skips, saying why, only where they cannot be had. It takes about two
// minutes, plus a cold compile of the controller with -trimpath (about
// three) the first time.
func TestInstalledController(t *testing.T) {
	runc := requireRuntime(t)
	ctrllog.SetLogger(logr.Discard()) // the test's clients log nothing
	root := testenv.Root()
	ctx := context.Background()

	// The image, pushed; the release manifest naming it by digest.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	u, _ := url.Parse(reg.URL)
	repo := u.Host + "/stencil"
	imageDir, dist := t.TempDir(), filepath.Join(t.TempDir(), "dist")
	start := time.Now()
	t.Log(strings.TrimSpace(goRun(t, root, "./hack/image", "build", "-out", imageDir)))
	t.Logf("make image took %s", time.Since(start).Round(time.Second))
	t.Log(strings.TrimSpace(goRun(t, root, "./hack/image", "push", "-layout", imageDir, "-image", repo)))
	goRun(t, root, "./hack/release", "-image", repo, "-layout", imageDir, "-out", dist)
	manifest := filepath.Join(dist, "install.yaml")
	imageRef := controllerImage(t, manifest)
	if !strings.HasPrefix(imageRef, repo+"@sha256:") {
		t.Fatalf("the release names image %s, want %s@sha256:…", imageRef, repo)
	}
	ref, err := name.ParseReference(imageRef)
	if err != nil {
		t.Fatal(err)
	}
	image, err := remote.Image(ref) // by digest, as containerd pulls it
	if err != nil {
		t.Fatalf("pull %s: %v", imageRef, err)
	}
	previous := previousRelease(t, manifest)

	// The local cluster, with no kwok node: the Deployment's pods stay
	// Pending, and this test's node runs them.
	kubeconfig := startCluster(t, root, "STENCIL_NODES=0")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WarningHandlerWithContext = rest.NoWarnings{} // kubectl shows the webhook's warnings
	kube := kubernetes.NewForConfigOrDie(cfg)
	k, err := client.New(cfg, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	kc := newKubectl(t, kubeconfig)

	t.Log("installing the previous release: kubectl apply --server-side -f install.yaml")
	kc.mustRun(t, "", "apply", "--server-side", "-f", previous)
	kc.mustRun(t, "", "wait", "--for=condition=Established", "crd/compositions.stencil.dev", "crd/bundles.stencil.dev", "--timeout=60s")
	n := newNode(t, root, runc, manifest, "stencil-system/stencil-controller", image, kube, strings.TrimPrefix(cfg.Host, "https://"))
	pods := map[string]*pod{"a": n.start("a"), "b": n.start("b")}
	serve(t, n, pods["a"], pods["b"])
	leader := leading(t, kube, pods, "", time.Minute)
	t.Logf("pod %s leads", leader)

	t.Run("the render workers confine themselves and render", func(t *testing.T) {
		for _, p := range pods {
			if out := p.output(); !confined.MatchString(out) {
				t.Errorf("pod %s does not say its render workers are confined (Landlock and seccomp):\n%s", p.name, tail(out))
			}
		}
		applyExamples(t, k, kc, root)
	})

	cert := webhookCert(t, k)
	t.Run("the webhook answers the API server through its Service", func(t *testing.T) {
		dryRunReviewed(t, kc, root)
		if cert.caBundle == "" {
			t.Errorf("no CA injected into the webhook configurations")
		}
	})

	t.Run("an upgrade from the previous release keeps the webhook's certificate", func(t *testing.T) {
		suspended := editFile(t, filepath.Join(root, "examples", "compositions", "endpoint.yaml"), "spec:\n", "spec:\n  suspend: true\n")
		if _, errOut, err := kc.run(suspended, "apply", "--server-side", "-f", "-"); err == nil || !strings.Contains(errOut, "suspend") {
			t.Fatalf("the previous release's CRD accepted spec.suspend (%v): %s", err, errOut)
		}
		kc.mustRun(t, "", "apply", "--server-side", "-k", dist)
		if got := webhookCert(t, k); got != cert {
			t.Errorf("kubectl apply of the new release changed the webhook's certificate or CA bundle")
		}
		dryRunReviewed(t, kc, root)
		// The rollout the new Deployment starts: a new pod, ready, then
		// an old one stopped, twice.
		for _, roll := range [][2]string{{"c", followerOf(leader)}, {"d", leader}} {
			pods[roll[0]] = n.start(roll[0])
			old := pods[roll[1]]
			delete(pods, roll[1])
			serve(t, n, values(pods)...)
			stopped := time.Now()
			old.stop("TERM")
			if roll[1] == leader {
				leader = leading(t, kube, pods, leader, 30*time.Second)
				took := time.Since(stopped)
				t.Logf("the stopped leader handed over to pod %s in %s", leader, took.Round(100*time.Millisecond))
				// It gave the Lease up as it stopped: the next try takes it.
				if bound := retryPeriod * 22 / 10; took > bound+time.Second {
					t.Errorf("the handover took %s, want one jittered retry period (%s): did the leader not release the Lease?", took, bound)
				}
			}
		}
		if got := webhookCert(t, k); got != cert {
			t.Errorf("the rollout changed the webhook's certificate")
		}
		dryRunReviewed(t, kc, root)
		// The new field, once the new pods run: a controller that was
		// watching before the CRD changed may be sent an object pruned by
		// the old schema (the API server's watch of the old storage).
		kc.mustRun(t, suspended, "apply", "--server-side", "-f", "-")
		comp := objectOf(t, suspended)
		eventually(t, time.Minute, "the Composition to be Suspended", func() (bool, error) {
			if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(comp.Object, "status", "conditions")
			return strings.Contains(fmt.Sprint(conds), "reason:Suspended"), fmt.Errorf("conditions %v", conds)
		})
	})

	t.Run("the other replica leads within the lease duration when the leader is killed", func(t *testing.T) {
		lease := &coordinationv1.Lease{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "stencil-system", Name: "stencil.stencil.dev"}, lease); err != nil {
			t.Fatal(err)
		}
		duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		killed := time.Now()
		pods[leader].stop("KILL")
		old := leader
		delete(pods, old)
		// client-go counts the lease from when the other replica last saw
		// it renewed, and tries every retry period (2 s) with a jitter of
		// up to 1.2 times it: the takeover comes within the lease duration
		// plus two such tries (the one that saw the last renewal, the one
		// after the expiry), 23.8 s at most with the defaults.
		bound := duration + 2*retryPeriod*22/10
		leader = leading(t, kube, pods, old, bound+10*time.Second)
		took := time.Since(killed)
		t.Logf("pod %s leads %s after pod %s was killed (lease duration %s)", leader, took.Round(100*time.Millisecond), old, duration)
		if took > bound+time.Second {
			t.Errorf("took %s, want at most the lease duration %s and two jittered retry periods (%s)", took, duration, bound)
		}
		// The new leader reconciles: the Composition resumes.
		kc.mustRun(t, "", "apply", "--server-side", "-f", filepath.Join(root, "examples", "compositions", "endpoint.yaml"))
		ready(t, k, objectOf(t, editFile(t, filepath.Join(root, "examples", "compositions", "endpoint.yaml"))), 2*time.Minute)
	})
}

// retryPeriod is controller-runtime's default leader election retry
// period, which stencil keeps.
const retryPeriod = 2 * time.Second

// confined is the controller's log line saying its render workers hold
// Landlock and seccomp.
var confined = regexp.MustCompile(`render workers are confined.*"landlockABI":[1-9].*"seccomp":true`)

// requireRuntime returns runc, installed by hack/oci-runtime.sh if need
// be; it skips the test where that cannot be.
func requireRuntime(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runc, network namespaces and cgroups (CI runs as root)")
	}
	cmd := exec.Command(filepath.Join(testenv.Root(), "hack", "oci-runtime.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		t.Skipf("no OCI runtime on this machine, and none can be installed: %s", strings.TrimSpace(stderr.String()))
	case err != nil:
		t.Fatalf("hack/oci-runtime.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// goRun runs a command of stencil's module (go run PACKAGE ARGS) in root
// and returns its output.
func goRun(t *testing.T, root string, pkg string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", pkg}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run %s %s: %v\n%s", pkg, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// startCluster starts a local cluster of its own (hack/local-cluster.sh)
// with env, and returns its kubeconfig.
func startCluster(t *testing.T, root string, env ...string) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "cluster")
	clusterCmd := func(verb string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(root, "hack", "local-cluster.sh"), verb)
		cmd.Env = append(append(os.Environ(), "STENCIL_CLUSTER_DIR="+state), env...)
		return cmd.CombinedOutput()
	}
	if out, err := clusterCmd("up"); err != nil {
		t.Fatalf("hack/local-cluster.sh up: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := clusterCmd("down"); err != nil {
			t.Errorf("hack/local-cluster.sh down: %v\n%s", err, out)
		}
	})
	return filepath.Join(state, "kubeconfig")
}

func mustScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := reconcile.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// controllerImage is the image of the Deployment of the release manifest.
func controllerImage(t *testing.T, manifest string) string {
	t.Helper()
	for _, o := range manifestObjects(t, manifest) {
		if o.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if len(containers) == 1 {
				return fmt.Sprint(containers[0].(map[string]any)["image"])
			}
		}
	}
	t.Fatalf("%s: no Deployment of one container", manifest)
	return ""
}

// previousRelease writes the manifest of the release before this one,
// and returns its path. stencil has published no release yet, so the
// stand-in is this one with one field less in the Composition CRD
// (spec.suspend), which an upgrade must add to a cluster that already
// runs the controller and holds Compositions.
func previousRelease(t *testing.T, manifest string) string {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("# The previous release of the upgrade test: this one without the Composition CRD's spec.suspend.\n")
	removed := false
	for _, o := range manifestObjects(t, manifest) {
		if o.GetKind() == "CustomResourceDefinition" && o.GetName() == "compositions.stencil.dev" {
			versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
			for _, v := range versions {
				path := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "suspend"}
				if _, found, _ := unstructured.NestedFieldNoCopy(v.(map[string]any), path...); found {
					unstructured.RemoveNestedField(v.(map[string]any), path...)
					removed = true
				}
			}
			if err := unstructured.SetNestedSlice(o.Object, versions, "spec", "versions"); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(raw)
	}
	if !removed {
		t.Fatal("the Composition CRD has no spec.suspend to take out")
	}
	path := filepath.Join(t.TempDir(), "install.yaml")
	writeFile(t, path, out.Bytes())
	return path
}

func manifestObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// serve waits until each pod is ready (its readiness probe), then makes
// them the webhook Service's endpoints.
func serve(t *testing.T, n *node, pods ...*pod) {
	t.Helper()
	for _, p := range pods {
		eventually(t, 2*time.Minute, "pod "+p.name+" to be ready", func() (bool, error) {
			select {
			case <-p.done:
				t.Fatalf("pod %s ended:\n%s", p.name, tail(p.output()))
			default:
			}
			return p.ready(), fmt.Errorf("GET http://%s:8081/readyz: not 200", p.ip)
		})
	}
	n.publish("stencil-webhook", "webhook", 9443, pods...)
}

// leading waits until one of pods, other than not, holds the controller's
// Lease, and returns its name.
func leading(t *testing.T, kube kubernetes.Interface, pods map[string]*pod, not string, timeout time.Duration) string {
	t.Helper()
	var holder string
	eventually(t, timeout, "a pod to lead", func() (bool, error) {
		l, err := kube.CoordinationV1().Leases("stencil-system").Get(context.Background(), "stencil.stencil.dev", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		for name := range pods {
			if name != not && strings.HasPrefix(holder, "stencil-controller-"+name+"_") {
				holder = name
				return true, nil
			}
		}
		return false, fmt.Errorf("holder %q", holder)
	})
	return holder
}

// followerOf is the other of the first two pods.
func followerOf(leader string) string {
	if leader == "a" {
		return "b"
	}
	return "a"
}

func values(pods map[string]*pod) []*pod {
	var out []*pod
	for _, p := range pods {
		out = append(out, p)
	}
	return out
}

// certState is what the webhook's certificate is: the Secret's data and
// the CA bundle injected into both webhook configurations.
type certState struct {
	secret, caBundle string
}

func webhookCert(t *testing.T, k client.Client) certState {
	t.Helper()
	ctx := context.Background()
	var st certState
	eventually(t, 2*time.Minute, "the webhook's certificate and its CA in both configurations", func() (bool, error) {
		s := &corev1.Secret{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "stencil-system", Name: "stencil-webhook-cert"}, s); err != nil {
			return false, err
		}
		st.secret = fmt.Sprint(s.Data)
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := k.Get(ctx, client.ObjectKey{Name: "stencil-validating"}, v); err != nil {
			return false, err
		}
		if err := k.Get(ctx, client.ObjectKey{Name: "stencil-mutating"}, m); err != nil {
			return false, err
		}
		bundles := map[string]bool{}
		for _, w := range v.Webhooks {
			bundles[string(w.ClientConfig.CABundle)] = true
		}
		for _, w := range m.Webhooks {
			bundles[string(w.ClientConfig.CABundle)] = true
		}
		if len(bundles) != 1 || bundles[""] {
			return false, fmt.Errorf("%d CA bundles among the webhook entries", len(bundles))
		}
		for b := range bundles {
			st.caBundle = b
		}
		return len(s.Data["tls.crt"]) > 0, fmt.Errorf("Secret keys %d", len(s.Data))
	})
	return st
}

// dryRunReviewed: kubectl's server dry run of a Composition reaches the
// webhook through its Service, which answers (with no client CA
// configured, as in the manifest, it says it did not review).
func dryRunReviewed(t *testing.T, kc kubectl, root string) {
	t.Helper()
	comp := filepath.Join(root, "examples", "compositions", "endpoint.yaml")
	eventually(t, time.Minute, "the webhook to answer a dry run", func() (bool, error) {
		_, errOut, err := kc.run("", "apply", "--server-side", "--dry-run=server", "-f", comp)
		return err == nil && strings.Contains(errOut, "stencil: not reviewed"), fmt.Errorf("%v: %s", err, errOut)
	})
}

// applyExamples applies, as the examples' users do, the examples'
// tenancy, the Bundles endpoint and crontab, the Composition frontend
// and the CronTab instance, and waits for both to be Ready.
func applyExamples(t *testing.T, k client.Client, kc kubectl, root string) {
	t.Helper()
	ctx := context.Background()
	kc.mustRun(t, "", "apply", "--server-side", "-f", filepath.Join(root, "examples", "tenancy"))
	for _, b := range exampleBundles(t, filepath.Join(root, "examples", "bundles")) {
		if b.Name == "endpoint" || b.Name == "crontab" {
			if err := k.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	admitting(t, k, 2*time.Minute)
	comp := filepath.Join(root, "examples", "compositions", "endpoint.yaml")
	kc.mustRun(t, "", "apply", "--server-side", "-f", comp)
	crontab := filepath.Join(root, "examples", "instances", "crontab.yaml")
	inst := objectOf(t, editFile(t, crontab))
	published(t, k, inst, 2*time.Minute)
	eventually(t, time.Minute, "kubectl apply of the CronTab to be admitted", func() (bool, error) {
		_, errOut, err := kc.run("", "apply", "-f", crontab)
		return err == nil, fmt.Errorf("%v: %s", err, errOut)
	})
	for _, obj := range []*unstructured.Unstructured{objectOf(t, editFile(t, comp)), inst} {
		ready(t, k, obj, 2*time.Minute)
	}
}

// tail is the end of a container's output, for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
