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
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/engine"
)

// TestInstalledController installs stencil as its users do, on a real
// node (issue 32). The image is built by hack/image (make image) and
// pushed to an OCI registry (make push; here go-containerregistry's); the
// release manifest of hack/release (make release) names it by digest. The
// local cluster gets, beside kwok's fake node where the example workloads
// run, a real one (hack/node.sh): a kubelet with containerd 1.6.20 and
// runc, which pulls the image and runs the Deployment's two pods with its
// security context and containerd's RuntimeDefault seccomp profile. Then:
//
//   - the render workers confine themselves (Landlock, seccomp) and
//     render: Compositions and an instance of a published kind become
//     Ready, their workloads on kwok's node;
//   - the webhook, with the certificate the controller made for its
//     Service, answers the API server's calls through that Service;
//   - kubectl apply -k of the release's overlay upgrades the previous
//     release (an image and a Composition CRD field older): the pods roll,
//     the webhook's certificate stays, the new field works;
//   - of the two replicas one leads; a stopped leader hands over at once,
//     a killed one's Lease is taken once it expires (the lease duration
//     and client-go's retries).
//
// It needs root and what hack/node.sh installs with apt-get (containerd,
// runc, the CNI plugins, iptables); it skips, saying why, only where they
// cannot be had. It takes about two minutes, plus about three the first
// time to compile the controller with -trimpath and five to build the
// kubelet (kept in STENCIL_CACHE, as the other Kubernetes binaries).
func TestInstalledController(t *testing.T) {
	requireNode(t)
	ctrllog.SetLogger(logr.Discard()) // the test's clients log nothing
	root := testenv.Root()

	// The image, pushed, and the release naming it by digest; the
	// previous release: an image of its own, and no spec.suspend.
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
	if img := controllerImage(t, manifest); !strings.HasPrefix(img, repo+"@sha256:") {
		t.Fatalf("the release names image %s, want %s@sha256:…", img, repo)
	}
	previous := previousRelease(t, root, imageDir, repo)

	// The local cluster: one kwok node for the example workloads, and the
	// real node for stencil's pods (its namespace's annotations place
	// them there; the node's taint keeps every other pod off it).
	kubeconfig := startCluster(t, root, "STENCIL_NODES=1")
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
	n := startNode(t, root, kubeconfig, u.Host)
	kc.mustRun(t, namespaceOnNode, "apply", "--server-side", "--field-manager=e2e-cluster-admin", "-f", "-")

	t.Log("installing the previous release: kubectl apply --server-side -f install.yaml")
	kc.mustRun(t, "", "apply", "--server-side", "-f", previous)
	rollout(t, kc, "the previous release")
	leader, identity := n.leader(t, kube, "", 0)
	t.Logf("pod %s leads", leader)

	t.Run("the render workers confine themselves and render", func(t *testing.T) {
		for _, p := range n.controllerPods(t, kube) {
			if out := n.podLog(t, p); !confined.MatchString(out) {
				t.Errorf("pod %s does not say its render workers are confined (Landlock and seccomp):\n%s", p.Name, tail(out))
			}
			if p.Spec.NodeName != n.name {
				t.Errorf("pod %s runs on %s, not on the real node %s", p.Name, p.Spec.NodeName, n.name)
			}
		}
		applyExamples(t, k, kc, root)
	})

	cert := webhookCert(t, k)
	t.Run("the webhook answers the API server through its Service", func(t *testing.T) {
		dryRunReviewed(t, kc, root)
	})

	t.Run("an upgrade from the previous release keeps the webhook's certificate", func(t *testing.T) {
		suspended := editFile(t, filepath.Join(root, "examples", "compositions", "endpoint.yaml"), "spec:\n", "spec:\n  suspend: true\n")
		if _, errOut, err := kc.run(suspended, "apply", "--server-side", "-f", "-"); err == nil || !strings.Contains(errOut, "suspend") {
			t.Fatalf("the previous release's CRD accepted spec.suspend (%v): %s", err, errOut)
		}
		kc.mustRun(t, "", "apply", "--server-side", "-k", dist)
		if got := webhookCert(t, k); got != cert {
			t.Errorf("kubectl apply of the new release changed the webhook's certificate or its CA in the configurations")
		}
		started := time.Now()
		rollout(t, kc, "the new release")
		t.Logf("the rollout took %s", time.Since(started).Round(time.Second))
		for _, p := range n.controllerPods(t, kube) {
			if img := p.Spec.Containers[0].Image; img != controllerImage(t, manifest) {
				t.Errorf("pod %s runs %s after the upgrade", p.Name, img)
			}
		}
		leader, identity = n.leader(t, kube, "", 0)
		if got := webhookCert(t, k); got != cert {
			t.Errorf("the rollout changed the webhook's certificate")
		}
		dryRunReviewed(t, kc, root)
		kc.mustRun(t, suspended, "apply", "--server-side", "-f", "-")
		condition(t, k, compositionOf(t, suspended), testenv.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reasons: []string{"Suspended"}})
	})

	t.Run("a stopped leader hands over at once", func(t *testing.T) {
		// A leader that stops gives the Lease up before it exits (a write
		// naming no holder), and the other replica's next try takes it;
		// one that did not would be replaced only once its lease expired.
		// Which happened is read from the Lease's writes, from the one
		// the leader last made, whatever the time each took.
		_, writes := watchLease(t, kube)
		stopped := time.Now()
		kc.mustRun(t, "", "-n", "stencil-system", "delete", "pod", leader, "--wait=false") // SIGTERM, as a drain or eviction
		old, oldIdentity := leader, identity
		seen := leaseWrites(t, writes, func(l *coordinationv1.Lease) bool {
			h := holderOf(l)
			return h != "" && h != oldIdentity
		})
		leader, identity = n.leader(t, kube, oldIdentity, 0)
		took := time.Since(stopped)
		// A log, not a verdict: how long it took depends on this
		// machine's load; one jittered retry period is what the code
		// aims at.
		t.Logf("pod %s leads %s after pod %s was deleted (one jittered retry period is %s)", leader, took.Round(100*time.Millisecond), old, retryPeriod*22/10)
		released := false
		for _, l := range seen[:len(seen)-1] {
			released = released || holderOf(l) == ""
		}
		if !released {
			var holders []string
			for _, l := range seen {
				holders = append(holders, fmt.Sprintf("%q", holderOf(l)))
			}
			t.Errorf("pod %s did not give the Lease up as it stopped: its holders went %s, with no release between", old, strings.Join(holders, " → "))
		}
		rollout(t, kc, "the deleted pod's replacement")
	})

	t.Run("a killed leader is replaced once its lease expires", func(t *testing.T) {
		killed := time.Now()
		n.kill(t, kube, leader)
		old, oldIdentity := leader, identity
		// The Lease as the killed process last renewed it (or later: a
		// renewal in flight may still land, after this read).
		last := readLease(t, kube)
		if h := holderOf(last); h != oldIdentity {
			t.Fatalf("right after pod %s's container was killed the Lease is held by %q, not by it (%s)", old, h, oldIdentity)
		}
		// The killed container's restart (the kubelet's) may win the
		// Lease too: a new process either way, and the test says which.
		leader, identity = n.leader(t, kube, oldIdentity, 0)
		took := time.Since(killed)
		who := "the other replica"
		if leader == old {
			who = "the killed pod's restarted container"
		}
		// client-go counts the lease from when the other replica last saw
		// it renewed, and tries every retry period (2 s) with a jitter of
		// up to 1.2 times it: the takeover comes after the lease duration
		// plus up to two such tries (the one that saw the last renewal,
		// the one after the expiry), 23.8 s with the defaults, on an idle
		// machine. A log, not a verdict.
		bound := leaseDuration + 2*retryPeriod*22/10
		t.Logf("%s (pod %s) leads %s after pod %s's container was killed (lease duration %s; on an idle machine within %s)", who, leader, took.Round(100*time.Millisecond), old, leaseDuration, bound)
		// What the code guarantees whatever the load: a Lease another
		// holds is taken only once it has gone unrenewed for its
		// duration, as the taker saw it, by its clock (this machine's, as
		// the killed process's): the new holder's acquireTime is at least
		// the last renewal plus the lease duration.
		now := readLease(t, kube)
		switch {
		case holderOf(now) != identity || now.Spec.AcquireTime == nil || last.Spec.RenewTime == nil || last.Spec.LeaseDurationSeconds == nil:
			t.Errorf("the Lease after the takeover (%+v), or before it (%+v), does not say when", now.Spec, last.Spec)
		default:
			expired := last.Spec.RenewTime.Add(time.Duration(*last.Spec.LeaseDurationSeconds) * time.Second)
			if got := now.Spec.AcquireTime.Time; got.Before(expired) {
				t.Errorf("%s took the Lease at %s, before the killed leader's lease expired at %s", who, got.Format(time.RFC3339Nano), expired.Format(time.RFC3339Nano))
			}
		}
		// The new leader reconciles: the Composition resumes.
		comp := filepath.Join(root, "examples", "compositions", "endpoint.yaml")
		kc.mustRun(t, "", "apply", "--server-side", "-f", comp)
		ready(t, k, objectOf(t, editFile(t, comp)), 3*time.Minute)
		rollout(t, kc, "the killed container, restarted by the kubelet,")
	})
}

// controller-runtime's leader election defaults, which stencil keeps.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

// namespaceOnNode is stencil's namespace as the test's cluster admin
// makes it before installing: its pods go to the real node, tolerating
// its taint (admission plugins PodNodeSelector and PodTolerationRestriction).
// Applied under a field manager of its own: kubectl's applies of the
// manifest would otherwise take its annotations away.
const namespaceOnNode = `apiVersion: v1
kind: Namespace
metadata:
  name: stencil-system
  annotations:
    scheduler.alpha.kubernetes.io/node-selector: stencil.dev/e2e-node=real
    scheduler.alpha.kubernetes.io/defaultTolerations: '[{"key": "stencil.dev/e2e-node", "operator": "Exists", "effect": "NoSchedule"}]'
`

// rollout waits until the controller's Deployment has rolled out: every
// replica updated, ready and available.
func rollout(t *testing.T, kc kubectl, what string) {
	t.Helper()
	if out, errOut, err := kc.run("", "-n", "stencil-system", "rollout", "status", "deployment/stencil-controller", "--timeout=4m"); err != nil {
		// What the pods said, so a failure names its cause.
		pods, _, _ := kc.run("", "-n", "stencil-system", "get", "pods", "-o", "wide")
		logs, _, _ := kc.run("", "-n", "stencil-system", "logs", "deployment/stencil-controller", "--all-containers", "--tail=40")
		events, _, _ := kc.run("", "-n", "stencil-system", "get", "events", "--sort-by=.lastTimestamp")
		t.Fatalf("%s did not roll out: %v\n%s%s\npods:\n%s\nlogs (one pod):\n%s\nevents:\n%s", what, err, out, errOut, pods, logs, events)
	}
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
	s, err := engine.NewScheme()
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

// previousRelease writes the release before this one and returns its
// install.yaml. stencil has published none yet, so the stand-in is this
// release with another image (the same files, labelled previous, pushed
// to repo: the upgrade rolls the pods) and without the Composition CRD's
// spec.suspend, which the upgrade adds to a cluster that holds
// Compositions.
func previousRelease(t *testing.T, root, imageDir, repo string) string {
	t.Helper()
	dir := t.TempDir()
	pushPrevious(t, imageDir, repo, dir)
	dist := filepath.Join(dir, "dist")
	goRun(t, root, "./hack/release", "-image", repo, "-layout", dir, "-out", dist)
	path := filepath.Join(dir, "install.yaml")
	writeFile(t, path, withoutSuspend(t, filepath.Join(dist, "install.yaml")))
	return path
}

// pushPrevious makes the previous release's image: the image of
// imageDir's OCI layout labelled previous, written as the layout
// dir/oci and pushed to repo:previous.
func pushPrevious(t *testing.T, imageDir, repo, dir string) {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(filepath.Join(imageDir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config.DeepCopy()
	c.Labels["org.opencontainers.image.version"] = "previous"
	if img, err = mutate.Config(img, *c); err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "previous"})); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(repo + ":previous")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// withoutSuspend is the release manifest install with the Composition
// CRD's spec.suspend taken out.
func withoutSuspend(t *testing.T, install string) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("# The previous release of the upgrade test: another image, and no spec.suspend in the Composition CRD.\n")
	removed := false
	for _, o := range manifestObjects(t, install) {
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
	return out.Bytes()
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

// certState is what the webhook's certificate is: the Secret's data and
// the CA bundle injected into both webhook configurations.
type certState struct {
	secret, caBundle string
}

func webhookCert(t *testing.T, k client.Client) certState {
	t.Helper()
	ctx := context.Background()
	var st certState
	testenv.Eventually(t, 0, "the webhook's certificate and its CA in both configurations", func() (bool, error) {
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
	testenv.Eventually(t, 0, "the webhook to answer a dry run", paced(func() (bool, error) {
		_, errOut, err := kc.run("", "apply", "--server-side", "--dry-run=server", "-f", comp)
		return err == nil && strings.Contains(errOut, "stencil: not reviewed"), fmt.Errorf("%v: %s", err, errOut)
	}))
}

// applyExamples applies, as the examples' users do, the examples'
// tenancy, the Bundles endpoint, webapp and crontab, the Compositions
// frontend and blog and the CronTab instance, and waits until each is
// Ready; the workloads run on kwok's node.
func applyExamples(t *testing.T, k client.Client, kc kubectl, root string) {
	t.Helper()
	ctx := context.Background()
	kc.mustRun(t, "", "apply", "--server-side", "-f", filepath.Join(root, "examples", "tenancy"))
	for _, b := range exampleBundles(t, filepath.Join(root, "examples", "bundles")) {
		if b.Name == "endpoint" || b.Name == "webapp" || b.Name == "crontab" {
			if err := k.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.WaitAdmitted(t, k, "default", nil, 3*time.Minute)
	frontend := filepath.Join(root, "examples", "compositions", "endpoint.yaml")
	blog := strings.SplitN(editFile(t, filepath.Join(root, "examples", "compositions", "webapp.yaml")), "\n---\n", 2)[0] + "\n"
	kc.mustRun(t, "", "apply", "--server-side", "-f", frontend)
	kc.mustRun(t, blog, "apply", "--server-side", "-f", "-")
	crontab := filepath.Join(root, "examples", "instances", "crontab.yaml")
	inst := objectOf(t, editFile(t, crontab))
	published(t, k, inst, 2*time.Minute)
	testenv.WaitKindChecked(t, k, inst, 3*time.Minute)
	testenv.Eventually(t, 0, "kubectl apply of the CronTab to be admitted", paced(func() (bool, error) {
		_, errOut, err := kc.run("", "apply", "-f", crontab)
		return err == nil, fmt.Errorf("%v: %s", err, errOut)
	}))
	for _, obj := range []*unstructured.Unstructured{objectOf(t, editFile(t, frontend)), objectOf(t, blog), inst} {
		ready(t, k, obj, 3*time.Minute)
	}
	pods := &corev1.PodList{}
	if err := k.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") {
			t.Errorf("the example's pod %s runs on %q, not on kwok's node", p.Name, p.Spec.NodeName)
		}
	}
}

// leaseName is the controller's Lease (shard.LeaderElectionID of no shard).
const leaseName = "stencil.stencil.dev"

// readLease reads the controller's Lease.
func readLease(t *testing.T, kube kubernetes.Interface) *coordinationv1.Lease {
	t.Helper()
	l, err := kube.CoordinationV1().Leases("stencil-system").Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the Lease: %v", err)
	}
	return l
}

// holderOf is who holds l, "" when no one does (a leader that stopped
// gave it up).
func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// watchLease reads the controller's Lease and watches its writes from
// then on, until the test ends.
func watchLease(t *testing.T, kube kubernetes.Interface) (*coordinationv1.Lease, watch.Interface) {
	t.Helper()
	l := readLease(t, kube)
	w, err := kube.CoordinationV1().Leases("stencil-system").Watch(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", leaseName).String(), ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatalf("watch the Lease: %v", err)
	}
	t.Cleanup(w.Stop)
	return l, w
}

// leaseWrites returns the Leases w reports, in order, up to the first
// done says ends them; it fails t when none does within testenv.Timeout.
func leaseWrites(t *testing.T, w watch.Interface, done func(*coordinationv1.Lease) bool) []*coordinationv1.Lease {
	t.Helper()
	timer := time.NewTimer(testenv.Timeout)
	defer timer.Stop()
	var out []*coordinationv1.Lease
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of the Lease ended after %d writes", len(out))
			}
			l, isLease := e.Object.(*coordinationv1.Lease)
			if !isLease {
				t.Fatalf("the watch of the Lease: %s %v", e.Type, e.Object)
			}
			out = append(out, l)
			if done(l) {
				return out
			}
		case <-timer.C:
			t.Fatalf("after %s and %d writes of the Lease, none is the one awaited", testenv.Timeout, len(out))
		}
	}
}

// compositionOf is the Composition of a document.
func compositionOf(t *testing.T, doc string) *v1alpha1.Composition {
	t.Helper()
	u := objectOf(t, doc)
	c := &v1alpha1.Composition{}
	c.Namespace, c.Name = u.GetNamespace(), u.GetName()
	return c
}

// tail is the end of a log, for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
