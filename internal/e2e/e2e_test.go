package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the controller's render workers are this test binary
	os.Exit(m.Run())
}

// TestExamples starts the local cluster as `make run` does, applies every
// example, and waits until every Composition is Ready with all its members
// Current; then it changes one Composition's values and sees the rollout,
// and deletes one and sees its members gone.
func TestExamples(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := testenv.Root()
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
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	controller, err := testenv.StartController(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := controller.Client

	for _, b := range exampleBundles(t, filepath.Join(root, "examples", "bundles")) {
		if err := k.Create(ctx, b); err != nil {
			t.Fatalf("create Bundle %s: %v", b.Name, err)
		}
	}
	comps := exampleCompositions(t, filepath.Join(root, "examples", "compositions"))
	for _, c := range comps {
		if err := k.Create(ctx, c); err != nil {
			t.Fatalf("create Composition %s: %v", c.Name, err)
		}
	}
	for _, c := range comps {
		ready(t, k, c, 4*time.Minute)
	}

	t.Run("a values change rolls the Deployment out", func(t *testing.T) {
		shop := &v1alpha1.Composition{}
		eventually(t, time.Minute, "update of Composition shop", func() (bool, error) {
			if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, shop); err != nil {
				return false, err
			}
			shop.Spec.Values.Raw = []byte(`{"replicas":3,"image":"nginx:1.28","ports":[{"name":"http","port":80,"targetPort":80}]}`)
			return k.Update(ctx, shop) == nil, nil
		})
		dep := &appsv1.Deployment{}
		eventually(t, 3*time.Minute, "the new Deployment to be rolled out", func() (bool, error) {
			if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, dep); err != nil {
				return false, err
			}
			s := dep.Status
			return dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28" && s.ObservedGeneration == dep.Generation &&
				s.UpdatedReplicas == 3 && s.AvailableReplicas == 3 && s.Replicas == 3, fmt.Errorf("status %+v", s)
		})
		ready(t, k, shop, 2*time.Minute)
	})

	t.Run("deleting a Composition deletes its members", func(t *testing.T) {
		foo := &v1alpha1.Composition{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "example-foo"}, foo); err != nil {
			t.Fatal(err)
		}
		if err := k.Delete(ctx, foo); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the Composition and its Deployment to be gone", func() (bool, error) {
			errC := k.Get(ctx, client.ObjectKeyFromObject(foo), &v1alpha1.Composition{})
			errD := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "example-foo"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(errC) && apierrors.IsNotFound(errD), fmt.Errorf("composition: %v, deployment: %v", errC, errD)
		})
	})
}

// ready waits until the Composition is Ready at its generation with every
// member Current.
func ready(t *testing.T, k client.Client, c *v1alpha1.Composition, timeout time.Duration) {
	t.Helper()
	got := &v1alpha1.Composition{}
	eventually(t, timeout, "Composition "+c.Name+" to be Ready", func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(c), got); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		if cond == nil || cond.Status != metav1.ConditionTrue || got.Status.ObservedGeneration != got.Generation {
			return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		for _, m := range got.Status.Members {
			if m.Status != "Current" {
				return false, fmt.Errorf("member %s/%s is %s", m.Kind, m.Name, m.Status)
			}
		}
		return len(got.Status.Members) > 0, nil
	})
	t.Logf("Composition %s: %s", c.Name, got.Status.Summary)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	}); err != nil {
		t.Fatalf("timed out waiting for %s (last: %v)", what, last)
	}
}

// exampleBundles loads every bundle folder as `stencil bundle pack` does.
func exampleBundles(t *testing.T, dir string) []*v1alpha1.Bundle {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1alpha1.Bundle
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := templates.Load(os.DirFS(filepath.Join(dir, e.Name())), templates.LoadOptions{Name: e.Name()})
		if err != nil {
			t.Fatalf("load bundle %s: %v", e.Name(), err)
		}
		out = append(out, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: e.Name()}, Spec: b.Spec()})
	}
	return out
}

// exampleCompositions reads every Composition of the example files.
func exampleCompositions(t *testing.T, dir string) []*v1alpha1.Composition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example Compositions in %s (%v)", dir, err)
	}
	var out []*v1alpha1.Composition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(doc)) == "" {
				continue
			}
			c := &v1alpha1.Composition{}
			if err := yaml.UnmarshalStrict(doc, c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, c)
		}
	}
	return out
}
