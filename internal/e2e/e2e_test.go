package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/internal/testenv"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the controller's render workers are this test binary
	os.Exit(m.Run())
}

// TestExamples starts the local cluster as `make run` does, applies every
// example Bundle, waits until the controller has published the kinds the
// Bundles declare, applies the example Compositions with the client and the
// articles' instances (examples/instances) with kubectl, and waits until
// each is Ready with all its members Current. Then, with kubectl as a user
// would: kubectl get and explain read the published kinds; an edit of an
// AppService rolls its Deployment out; invalid instances are refused by the
// API server with the field path; deleting an instance or a Composition
// deletes its children. The controller serves its admission webhook as
// `make run` does (testPreview).
func TestExamples(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := testenv.Root()
	cfg, kubeconfig := localCluster(t, root)
	// The controller serves its admission webhook as `make run` runs it.
	serving := loopbackWebhook(t, root, kubeconfig)
	controller, err := testenv.StartWith(ctx, cfg, testenv.ControllerOptions{Serving: &serving})
	if err != nil {
		t.Fatal(err)
	}
	k := controller.Client
	kc := newKubectl(t, kubeconfig)
	tenancy(t, kc, k, root)

	for _, b := range exampleBundles(t, filepath.Join(root, "examples", "bundles")) {
		if err := k.Create(ctx, b); err != nil {
			t.Fatalf("create Bundle %s: %v", b.Name, err)
		}
	}
	instancesDir := filepath.Join(root, "examples", "instances")
	instances := exampleObjects(t, instancesDir)
	for _, inst := range instances {
		published(t, k, inst, 2*time.Minute)
		// Established is not yet admitted: the binding and parameters
		// of stencil's admission policy for the kind reach the API
		// server's policy plugin some time after the Bundle controller
		// wrote them; until then an instance is refused or unchecked.
		testenv.WaitKindChecked(t, k, inst, 3*time.Minute)
	}
	comps := exampleObjects(t, filepath.Join(root, "examples", "compositions"))
	for _, c := range comps {
		if err := k.Create(ctx, c); err != nil {
			t.Fatalf("create Composition %s: %v", c.GetName(), err)
		}
	}
	// As the articles do: kubectl apply of their YAML, unchanged.
	admittingFiles(t, kc, instancesDir, 3*time.Minute)
	kc.mustRun(t, "", "apply", "-f", instancesDir)
	for _, obj := range append(comps, instances...) {
		ready(t, k, obj, 4*time.Minute)
	}

	t.Run("GitOps tools read every parent's health", func(t *testing.T) {
		testGitOpsHealth(t, k, root, append(comps, instances...))
	})

	t.Run("kubectl get and explain read a published kind", func(t *testing.T) {
		out := kc.mustRun(t, "", "get", "appservices", "nginx-app")
		for _, col := range []string{"READY", "STATUS", "SIZE", "IMAGE"} {
			if !strings.Contains(out, col) {
				t.Errorf("kubectl get appservices: no column %s in\n%s", col, out)
			}
		}
		// nginx-app was Ready when the test read it; a pass since (a
		// resync, its Deployment's status moving) may show it otherwise
		// for a moment: kubectl is asked until it shows it Ready.
		testenv.Eventually(t, 0, "kubectl get appservices to show nginx-app Ready", paced(func() (bool, error) {
			out, errOut, err := kc.run("", "get", "appservices", "nginx-app")
			return err == nil && strings.Contains(out, "True"), fmt.Errorf("%v: %s%s", err, out, errOut)
		}))
		out = kc.mustRun(t, "", "get", "ct", "my-new-cron-object") // the CronTab's short name
		if !strings.Contains(out, "* * * * */5") {
			t.Errorf("kubectl get ct: no cronSpec column in\n%s", out)
		}
		// The CRD's OpenAPI is published a moment after it is Established.
		testenv.Eventually(t, 0, "kubectl explain to describe spec.size", paced(func() (bool, error) {
			out, errOut, err := kc.run("", "explain", "appservice.spec.size")
			return err == nil && strings.Contains(out, "Number of pods of the Deployment"), fmt.Errorf("%v: %s%s", err, out, errOut)
		}))
	})

	t.Run("an instance is the ApplySet parent of its children", func(t *testing.T) {
		want := applySetID("nginx-app", "default", "AppService", "app.example.com")
		inst := instanceNamed(t, instances, "nginx-app")
		if err := k.Get(ctx, client.ObjectKeyFromObject(inst), inst); err != nil {
			t.Fatal(err)
		}
		if got := inst.GetLabels()["applyset.kubernetes.io/id"]; got != want {
			t.Errorf("AppService nginx-app: applyset id %q, want %q", got, want)
		}
		dep := &appsv1.Deployment{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "nginx-app"}, dep); err != nil {
			t.Fatal(err)
		}
		if got := dep.Labels["applyset.kubernetes.io/part-of"]; got != want {
			t.Errorf("Deployment nginx-app: part-of %q, want %q", got, want)
		}
	})

	t.Run("Argo CD's tree: Pods under the Deployment under the instance", func(t *testing.T) {
		testTree(t, k, instanceNamed(t, instances, "nginx-app"))
	})

	t.Run("the garbage collector leaves what deletionPolicy Orphan keeps", func(t *testing.T) {
		testGarbageCollectorKeepsOrphans(t, k)
	})

	t.Run("an edit with kubectl apply rolls the Deployment out", func(t *testing.T) {
		edited := editFile(t, filepath.Join(instancesDir, "appservice.yaml"), "size: 2", "size: 3", "image: nginx:1.7.9", "image: nginx:1.27")
		kc.mustRun(t, edited, "apply", "-f", "-")
		dep := &appsv1.Deployment{}
		testenv.Eventually(t, 3*time.Minute, "the new Deployment to be rolled out", func() (bool, error) {
			if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "nginx-app"}, dep); err != nil {
				return false, err
			}
			s := dep.Status
			return dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.27" && s.ObservedGeneration == dep.Generation &&
				s.UpdatedReplicas == 3 && s.AvailableReplicas == 3 && s.Replicas == 3, fmt.Errorf("status %+v", s)
		})
		ready(t, k, instanceNamed(t, instances, "nginx-app"), 3*time.Minute)
	})

	t.Run("the articles' kinds report the articles' status", func(t *testing.T) {
		testArticlesStatus(t, k, kc)
	})

	t.Run("kubectl previews and refuses through the admission webhook", func(t *testing.T) {
		testPreview(t, k, kc, controller, root)
	})

	t.Run("only the API server's dry runs get live data from the webhook", func(t *testing.T) {
		testWebhookAuth(t, k, kc, serving, kubeconfig)
	})

	t.Run("the API server refuses an invalid instance, naming the field", func(t *testing.T) {
		appservice := filepath.Join(instancesDir, "appservice.yaml")
		for i, tc := range []struct {
			name, yaml, want string
		}{
			{"size below its minimum", editFile(t, appservice, "size: 2", "size: -1"), "spec.size"},
			{"size of the wrong type", editFile(t, appservice, "size: 2", "size: two"), "spec.size"},
			{"a required field missing", editFile(t, appservice, "  image: nginx:1.7.9\n", ""), "spec.image"},
			{"a field the kind does not have", editFile(t, appservice, "size: 2", "replicas: 2"), "spec.replicas"},
			{"a CEL rule broken", editFile(t, filepath.Join(instancesDir, "cloudmanager.yaml"), "    rootPass: '123456'\n", ""), "spec.db"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obj := renamed(t, tc.yaml, fmt.Sprintf("invalid-%d", i))
				_, errOut, err := kc.run(obj, "apply", "-f", "-")
				if err == nil {
					t.Fatalf("kubectl apply accepted it")
				}
				if !strings.Contains(errOut, tc.want) {
					t.Errorf("kubectl apply: the error does not name %s:\n%s", tc.want, errOut)
				}
				u := objectOf(t, obj)
				if err := k.Get(ctx, client.ObjectKeyFromObject(u), u); !apierrors.IsNotFound(err) {
					t.Errorf("the refused %s exists (get: %v)", u.GetKind(), err)
				}
			})
		}
	})

	t.Run("deleting an instance with kubectl deletes its children", func(t *testing.T) {
		kc.mustRun(t, "", "delete", "-f", filepath.Join(instancesDir, "foo.yaml"), "--timeout=2m")
		foo := instanceNamed(t, instances, "example-foo")
		testenv.Eventually(t, 0, "the Foo and its Deployment to be gone", func() (bool, error) {
			errF := k.Get(ctx, client.ObjectKeyFromObject(foo), foo.DeepCopy())
			errD := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "example-foo"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(errF) && apierrors.IsNotFound(errD), fmt.Errorf("foo: %v, deployment: %v", errF, errD)
		})
	})

	t.Run("deleting a Composition deletes its members", func(t *testing.T) {
		hello := instanceNamed(t, comps, "hello")
		if err := k.Delete(ctx, hello); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 0, "the Composition and its Deployment to be gone", func() (bool, error) {
			errC := k.Get(ctx, client.ObjectKeyFromObject(hello), hello.DeepCopy())
			errD := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(errC) && apierrors.IsNotFound(errD), fmt.Errorf("composition: %v, deployment: %v", errC, errD)
		})
	})
}

// localCluster starts the local cluster as `make run` does, with
// stencil's CRDs, and stops it when the test ends.
func localCluster(t *testing.T, root string) (*rest.Config, string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "cluster")
	clusterCmd := func(verb string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(root, "hack", "local-cluster.sh"), verb)
		cmd.Env = append(os.Environ(), "STENCIL_CLUSTER_DIR="+state)
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
	kubeconfig := filepath.Join(state, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	return cfg, kubeconfig
}

// tenancy sets namespace default up as a platform team would, and `make
// run` does: the ServiceAccount stencil writes as by default, and its
// RBAC (the controller impersonates it, as installed); then waits until
// the API server admits Compositions of namespace default (testenv.WaitAdmitted:
// the admission policy has the controller's parameters and the webhook
// entries, which fail closed, are served), as long as the local cluster
// may take.
func tenancy(t *testing.T, kc kubectl, k client.Client, root string) {
	t.Helper()
	kc.mustRun(t, "", "apply", "--server-side", "-f", filepath.Join(root, "examples", "tenancy"))
	testenv.WaitAdmitted(t, k, "default", nil, 3*time.Minute)
}

// published waits until the kind of obj is published: its CRD, labelled
// with the Bundle that publishes it and as an ApplySet parent type, is
// Established.
func published(t *testing.T, k client.Client, obj *unstructured.Unstructured, timeout time.Duration) {
	t.Helper()
	gvk := obj.GroupVersionKind()
	testenv.Eventually(t, timeout, "the CRD of "+gvk.Kind+" to be Established", func() (bool, error) {
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := k.List(context.Background(), crds, client.HasLabels{"stencil.dev/bundle"}); err != nil {
			return false, err
		}
		for _, crd := range crds.Items {
			if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
				continue
			}
			if crd.Labels["applyset.kubernetes.io/is-parent-type"] != "true" {
				return false, fmt.Errorf("CRD %s has no label applyset.kubernetes.io/is-parent-type", crd.Name)
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, fmt.Errorf("CRD %s: conditions %+v", crd.Name, crd.Status.Conditions)
		}
		return false, fmt.Errorf("no CRD labelled stencil.dev/bundle for %s", gvk)
	})
}

// ready waits until obj (a Composition or an instance of a published kind:
// they have the same status) is Ready at its generation with every member
// Current.
func ready(t *testing.T, k client.Client, obj *unstructured.Unstructured, timeout time.Duration) {
	t.Helper()
	got := obj.DeepCopy()
	what := obj.GetKind() + " " + obj.GetName()
	testenv.Eventually(t, timeout, what+" to be Ready", func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return false, err
		}
		return isReady(got)
	})
	summary, _, _ := unstructured.NestedString(got.Object, "status", "summary")
	t.Logf("%s: %s", what, summary)
}

// isReady reads a stencil status: Ready=True at the object's generation,
// and at least one member, each Current.
func isReady(u *unstructured.Unstructured) (bool, error) {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	readyTrue := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			readyTrue = true
		}
	}
	if !readyTrue || observed != u.GetGeneration() {
		return false, fmt.Errorf("generation %d, observedGeneration %d, conditions %v", u.GetGeneration(), observed, conds)
	}
	members, _, _ := unstructured.NestedSlice(u.Object, "status", "members")
	if len(members) == 0 {
		return false, fmt.Errorf("no members")
	}
	for _, m := range members {
		mm, _ := m.(map[string]any)
		if mm["status"] != "Current" {
			return false, fmt.Errorf("member %v/%v is %v", mm["kind"], mm["name"], mm["status"])
		}
	}
	return true, nil
}

// applySetID is kubectl's ApplySet id of a parent.
func applySetID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(name + "." + namespace + "." + kind + "." + group))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}
