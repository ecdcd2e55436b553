package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/admission/serving"
)

// loopbackWebhook installs the webhook configuration as `make run` does
// (hack/webhook-loopback.sh) and returns the webhook options `make run`
// gives the controller (--webhook-host=localhost, a free port, its own
// cert folder; the rest the flags' defaults): the controller makes the
// certificate for localhost, injects its CA and points the configuration
// at itself.
func loopbackWebhook(t *testing.T, root, kubeconfig string) serving.ServingOptions {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "webhook-loopback.sh"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/webhook-loopback.sh: %v\n%s", err, out)
	}
	o := serving.DefaultServingOptions()
	o.Host, o.Port, o.CertDir = "localhost", testenv.FreePort(t), t.TempDir()
	o.Namespace = serving.DefaultWebhookNamespace // as the flag's default outside a pod
	// As hack/run.sh: trust the local API server's webhook client certificate.
	o.ClientCAFile = filepath.Join(filepath.Dir(kubeconfig), "pki", "webhook-client-ca.crt")
	o.ClientNames = []string{"kube-apiserver-webhook-client"} // hack/local-cluster.sh's
	return o
}

// testPreview: with the webhook served, `kubectl apply --server-side
// --dry-run=server` of an edited example Composition prints, as warnings,
// what its children would become and changes nothing; an invalid
// Composition is refused by kubectl apply with the field path; the same
// edit applied for real rolls the Deployment out. A published kind's
// instance is previewed too, through the entry the controller keeps.
func testPreview(t *testing.T, k client.Client, kc kubectl, controller *testenv.Controller, root string) {
	select {
	case <-controller.WebhookReady:
	case <-time.After(testenv.Timeout):
		t.Fatalf("the webhook is not ready after %s", testenv.Timeout)
	}
	// The Composition blog, the first of examples/compositions/webapp.yaml,
	// with its values edited.
	webapp := editFile(t, filepath.Join(root, "examples", "compositions", "webapp.yaml"))
	blogDoc := strings.SplitN(webapp, "\n---\n", 2)[0] + "\n"
	blog := func(values string) string {
		const config = "    config:\n      LOG_LEVEL: debug\n"
		if !strings.Contains(blogDoc, config) {
			t.Fatalf("no %q in Composition blog:\n%s", config, blogDoc)
		}
		return strings.Replace(blogDoc, config, values, 1)
	}
	edited := blog("    replicaCount: 3\n    config:\n      LOG_LEVEL: debug\n")
	deployment := func() *appsv1.Deployment {
		d := &appsv1.Deployment{}
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "blog-webapp"}, d); err != nil {
			t.Fatal(err)
		}
		return d
	}

	t.Run("a server dry run prints the children's changes and changes nothing", func(t *testing.T) {
		before := deployment()
		if got := *before.Spec.Replicas; got != 2 {
			t.Fatalf("Deployment blog-webapp has %d replicas before the dry run, want 2", got)
		}
		want := "Warning: stencil: Deployment/blog-webapp: spec.replicas 2 → 3"
		// The API server picks the injected CA up from its watch of the
		// configuration a moment after the controller is ready; and the
		// webhook fails open: a review past its deadline (or the API
		// server's) is allowed without the preview. It is asked again.
		var errOut string
		testenv.Eventually(t, 0, "the dry run to warn "+want, paced(func() (bool, error) {
			var out string
			var err error
			out, errOut, err = kc.run(edited, "apply", "--server-side", "--dry-run=server", "-f", "-")
			if err != nil {
				return false, fmt.Errorf("%v: %s%s", err, out, errOut)
			}
			return strings.Contains(errOut, want), fmt.Errorf("stderr:\n%s", errOut)
		}))
		t.Logf("kubectl apply --server-side --dry-run=server, stderr:\n%s", errOut)
		after, comp := deployment(), objectOf(t, edited)
		if *after.Spec.Replicas != 2 || after.Generation != before.Generation {
			t.Errorf("the dry run changed Deployment blog-webapp: replicas %d, generation %d → %d", *after.Spec.Replicas, before.Generation, after.Generation)
		}
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(comp), comp); err != nil {
			t.Fatal(err)
		}
		if v, found, _ := unstructured.NestedFieldNoCopy(comp.Object, "spec", "values", "replicaCount"); found {
			t.Errorf("the dry run changed Composition blog: spec.values.replicaCount %v", v)
		}
	})

	t.Run("a published kind's server dry run goes through the controller's entry", func(t *testing.T) {
		// The AppService as the earlier edit left it (size 3, nginx:1.27),
		// now with size 5, applied as the article does (client side).
		edited := editFile(t, filepath.Join(root, "examples", "instances", "appservice.yaml"), "size: 2", "size: 5", "image: nginx:1.7.9", "image: nginx:1.27")
		want := "Warning: stencil: Deployment/nginx-app: spec.replicas 3 → 5"
		testenv.Eventually(t, 0, "the dry run to warn "+want, paced(func() (bool, error) {
			out, errOut, err := kc.run(edited, "apply", "--dry-run=server", "-f", "-")
			if err != nil {
				return false, fmt.Errorf("%v: %s%s", err, out, errOut)
			}
			return strings.Contains(errOut, want), fmt.Errorf("stderr:\n%s", errOut)
		}))
	})

	t.Run("kubectl apply refuses invalid values, naming the field", func(t *testing.T) {
		invalid := blog("    replicaCount: 0\n    config:\n      LOG_LEVEL: debug\n")
		// The webhook fails open (failurePolicy Ignore, and a review past
		// its own deadline is allowed with a warning): on a busy machine
		// an apply may be admitted unreviewed, and the controller then
		// reports what the review would have refused. Blog is then put
		// back as it was and the apply tried again, until a review
		// refuses it.
		var errOut string
		for attempt := 1; ; attempt++ {
			var out string
			var err error
			out, errOut, err = kc.run(invalid, "apply", "--server-side", "-f", "-")
			if err != nil {
				break
			}
			t.Logf("attempt %d: kubectl apply of replicaCount: 0 was admitted unreviewed: %s%s", attempt, out, errOut)
			stalled := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "blog"}}
			testenv.WaitFor(t, k, stalled, 3*time.Minute, testenv.Condition{Type: v1alpha1.ConditionStalled,
				Reasons: []string{v1alpha1.ReasonRenderFailed}, Message: func(m string) bool { return strings.Contains(m, "replicaCount") }})
			if attempt == 5 {
				t.Fatalf("kubectl apply of replicaCount: 0 was admitted unreviewed %d times", attempt)
			}
			kc.mustRun(t, blogDoc, "apply", "--server-side", "-f", "-")
			ready(t, k, objectOf(t, blogDoc), 3*time.Minute)
		}
		if !strings.Contains(errOut, "values.replicaCount") || !strings.Contains(errOut, "denied the request") {
			t.Errorf("kubectl apply: the refusal does not name values.replicaCount:\n%s", errOut)
		}
		t.Logf("kubectl apply of replicaCount: 0:\n%s", errOut)
		if got := *deployment().Spec.Replicas; got != 2 {
			t.Errorf("after the refusal Deployment blog-webapp has %d replicas, want 2", got)
		}
	})

	t.Run("a valid apply still rolls the change out", func(t *testing.T) {
		kc.mustRun(t, edited, "apply", "--server-side", "-f", "-")
		testenv.Eventually(t, 3*time.Minute, "Deployment blog-webapp to run 3 replicas", func() (bool, error) {
			d := deployment()
			s := d.Status
			return *d.Spec.Replicas == 3 && s.ObservedGeneration == d.Generation && s.AvailableReplicas == 3, fmt.Errorf("replicas %d, status %+v", *d.Spec.Replicas, s)
		})
		ready(t, k, objectOf(t, edited), 3*time.Minute)
	})
}
