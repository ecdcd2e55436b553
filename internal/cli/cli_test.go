package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

var (
	env        *testenv.Env
	controller *testenv.Controller
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, func(ctx context.Context, e *testenv.Env) (err error) {
		dir, err := os.MkdirTemp("", "stencil-cli-")
		if err != nil {
			return err
		}
		kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := e.WriteKubeconfig(kubeconfig); err != nil {
			return err
		}
		controller, err = testenv.StartController(ctx, e.Config)
		return err
	}))
}

// stencil runs the CLI in process and returns stdout, stderr and the exit code.
func stencil(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand("v0.0.0-test", strings.NewReader(stdin))
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(&errOut, "error:", err)
	}
	return out.String(), errOut.String(), cli.ExitCode(err)
}

// eventually is testenv.Eventually with its default timeout.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	testenv.Eventually(t, 0, what, cond)
}

// applied waits until the controller has made a whole pass over parent
// (a Composition or an instance of a published kind: its apiVersion,
// kind, namespace and name set) at its generation that applied every one
// of its members: its status lists members members, none NotFound, and
// Ready says either Ready or that a member is progressing (a Deployment,
// which no controller rolls out here). A status of a pass that failed on
// the way (ReconcileFailed: its members read live) is not one: the next
// pass, which applies them, is waited for. parent holds the parent as
// then read.
func applied(t *testing.T, k client.Client, parent *unstructured.Unstructured, members int) {
	t.Helper()
	what := fmt.Sprintf("the controller to apply the %d members of %s %s/%s", members, parent.GetKind(), parent.GetNamespace(), parent.GetName())
	eventually(t, what, func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(parent), parent); err != nil {
			return false, err
		}
		s, err := testenv.StatusOf(parent)
		if err != nil {
			return false, err
		}
		ready := s.Find(v1alpha1.ConditionReady)
		switch {
		case !s.Current():
			return false, fmt.Errorf("status of generation %d, the parent is at %d", s.ObservedGeneration, s.Generation)
		case ready == nil || (ready.Reason != v1alpha1.ReasonReady && ready.Reason != v1alpha1.ReasonProgressing):
			return false, fmt.Errorf("Ready: %+v", ready)
		}
		list, _, _ := unstructured.NestedSlice(parent.Object, "status", "members")
		if len(list) != members {
			return false, fmt.Errorf("%d members: %v", len(list), list)
		}
		for _, m := range list {
			if mm, _ := m.(map[string]any); mm["status"] == "NotFound" {
				return false, fmt.Errorf("member %v/%v not found", mm["kind"], mm["name"])
			}
		}
		return true, nil
	})
}

// parentRef is a reference to the parent apiVersion/kind ns/name, for applied.
func parentRef(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// objectOf parses doc, one object's YAML.
func objectOf(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	objs := renderedObjects(t, doc)
	if len(objs) != 1 {
		t.Fatalf("%d objects in %q, want one", len(objs), doc)
	}
	return objs[0]
}

// composition is a reference to the Composition ns/name, for applied.
func composition(ns, name string) *unstructured.Unstructured {
	return parentRef(v1alpha1.GroupVersion.String(), "Composition", ns, name)
}

const appServiceBundle = `apiVersion: stencil.dev/v1alpha1
kind: Bundle
metadata:
  name: %s
spec:
  files:
    values.yaml: |
      replicas: 1
      image: nginx:1.27
      service: true
    templates/deployment.yaml: |
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: {{ .Composition.Name }}
      spec:
        replicas: {{ .Values.replicas }}
        selector:
          matchLabels: {app: {{ .Composition.Name }}}
        template:
          metadata:
            labels: {app: {{ .Composition.Name }}}
          spec:
            containers:
            - name: app
              image: {{ .Values.image }}
    templates/service.yaml: |
      {{- if .Values.service }}
      apiVersion: v1
      kind: Service
      metadata:
        name: {{ .Composition.Name }}
      spec:
        selector: {app: {{ .Composition.Name }}}
        ports:
        - port: 80
      {{- end }}
`

func compositionYAML(ns, name, bundle, values string) string {
	return fmt.Sprintf("apiVersion: stencil.dev/v1alpha1\nkind: Composition\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  bundle: %s\n  values: %s\n", name, ns, bundle, values)
}

// kubectl runs the installed kubectl against the test API server.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append(args, "--kubeconfig", kubeconfig)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestDiffAfterReconcile: once the controller has applied a Composition,
// stencil diff sees no difference; after a values change it shows exactly
// the changed fields and the member that would be pruned.
func TestDiffAfterReconcile(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	bundle := "diff-" + ns
	kubectl(t, fmt.Sprintf(appServiceBundle, bundle), "apply", "-f", "-")
	comp := compositionYAML(ns, "web", bundle, `{"replicas": 2}`)
	kubectl(t, comp, "apply", "-f", "-")
	web := composition(ns, "web")
	applied(t, k, web, 2)
	if got := web.GetAnnotations()[applyset.AnnotationGroupKinds]; got != "Deployment.apps,Service" {
		t.Fatalf("the applied Composition's %s is %q, want Deployment.apps,Service", applyset.AnnotationGroupKinds, got)
	}

	out, errOut, code := stencil(t, comp, "diff", "-f", "-")
	if code != 0 || out != "" {
		t.Fatalf("diff right after reconcile: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and no output", code, out, errOut)
	}

	changed := compositionYAML(ns, "web", bundle, `{"replicas": 3, "service": false}`)
	out, errOut, code = stencil(t, changed, "diff", "-f", "-")
	if code != 1 {
		t.Fatalf("diff after a values change: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var changes []string
	for _, line := range strings.Split(out, "\n") {
		if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++") && !strings.HasPrefix(line, "---") {
			changes = append(changes, strings.Join(strings.Fields(line), " "))
		}
	}
	want := []string{"- replicas: 2", "+ replicas: 3"}
	if strings.Join(changes, "|") != strings.Join(want, "|") {
		t.Errorf("changed lines = %q, want exactly %q\nfull diff:\n%s", changes, want, out)
	}
	if !strings.Contains(out, "--- live/Deployment/"+ns+"/web") {
		t.Errorf("diff does not name the Deployment:\n%s", out)
	}
	if !strings.Contains(out, "# Service/"+ns+"/web would be pruned") {
		t.Errorf("diff does not list the pruned Service:\n%s", out)
	}
	// A member kept by helm.sh/resource-policy is orphaned, not deleted:
	// diff says so, as prune would do.
	kubectl(t, "", "annotate", "-n", ns, "service/web", "helm.sh/resource-policy=keep")
	out, errOut, code = stencil(t, changed, "diff", "-f", "-")
	if code != 1 || !strings.Contains(out, "# Service/"+ns+"/web would be orphaned (helm.sh/resource-policy: keep)") || strings.Contains(out, "would be pruned") {
		t.Errorf("diff with the Service kept: exit %d, want 1 and the Service orphaned, not pruned\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// diff changed nothing.
	dep := &appsv1.Deployment{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("after diff the Deployment has replicas %v (err %v), want 2", dep.Spec.Replicas, err)
	}
}

// TestRenderPipesIntoKubectl: stencil render piped into kubectl's
// server-side dry run succeeds, and the same render applied for real by
// kubectl, and given to the set (the stencil.dev/adopt annotation: only
// the controller's record proves membership, so objects it did not make
// join a set only with consent), is left alone by the controller: its
// reconcile writes none of their fields but the owner reference to the
// Composition, which a render made before the Composition existed
// cannot hold.
func TestRenderPipesIntoKubectl(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	bundle := "render-" + ns
	kubectl(t, fmt.Sprintf(appServiceBundle, bundle), "apply", "-f", "-")
	comp := compositionYAML(ns, "web", bundle, `{"replicas": 2}`)

	rendered, errOut, code := stencil(t, comp, "render", "-f", "-")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	out := kubectl(t, rendered, "apply", "--server-side", "--field-manager=stencil", "--dry-run=server", "-f", "-")
	if !strings.Contains(out, "deployment.apps/web serverside-applied (server dry run)") {
		t.Errorf("kubectl dry run said:\n%s", out)
	}
	kubectl(t, rendered, "apply", "--server-side", "--field-manager=stencil", "-f", "-")
	kubectl(t, "", "annotate", "-n", ns, "deployment/web", "service/web", "stencil.dev/adopt=compositions.stencil.dev/"+ns+"/web")
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil {
		t.Fatal(err)
	}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, svc); err != nil {
		t.Fatal(err)
	}

	// The render was made before the Composition existed, so with no
	// owner reference to it (the parent has no uid yet): the controller's
	// only write of each member is that reference. The Deployment's
	// generation says its spec was not rewritten, the Service's spec is
	// as kubectl applied it.
	kubectl(t, comp, "apply", "-f", "-")
	web := composition(ns, "web")
	applied(t, k, web, 2)
	eventually(t, "the members' owner references to the Composition", func() (bool, error) {
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, obj); err != nil {
				return false, err
			}
			if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != web.GetUID() {
				return false, fmt.Errorf("%T owner references %+v", obj, refs)
			}
		}
		return true, nil
	})
	nowDep, nowSvc := &appsv1.Deployment{}, &corev1.Service{}
	if err := k.Get(ctx, client.ObjectKeyFromObject(dep), nowDep); err != nil {
		t.Fatal(err)
	}
	if err := k.Get(ctx, client.ObjectKeyFromObject(svc), nowSvc); err != nil {
		t.Fatal(err)
	}
	if nowDep.Generation != dep.Generation {
		t.Errorf("Deployment web's spec was rewritten by the controller (generation %d → %d)", dep.Generation, nowDep.Generation)
	}
	if diff := cmp.Diff(svc.Spec, nowSvc.Spec); diff != "" {
		t.Errorf("Service web's spec was rewritten by the controller (-kubectl's +now):\n%s", diff)
	}
}

// TestRenderErrors: a broken input gives exit 1 and names the problem.
func TestRenderErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ required \"a is required\" .Values.a }}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	comp := compositionYAML("default", "c", "b", `{}`)
	_, errOut, code := stencil(t, comp, "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 1 || !strings.Contains(errOut, "templates/cm.yaml:6") || !strings.Contains(errOut, "a is required") {
		t.Errorf("render of a failing template: exit %d, stderr %q; want exit 1 naming templates/cm.yaml:6", code, errOut)
	}
	out, _, code := stencil(t, compositionYAML("default", "c", "b", `{"a": "x"}`), "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 0 || !strings.Contains(out, "applyset.kubernetes.io/part-of: "+applyset.ID("c", "default", applyset.CompositionGroupKind)) || !strings.Contains(out, "namespace: default") {
		t.Errorf("offline render: exit %d, output:\n%s\nwant the part-of label and the namespace placed", code, out)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := stencil(t, "", "version")
	if code != 0 || strings.TrimSpace(out) != "v0.0.0-test" {
		t.Errorf("version printed %q (exit %d)", out, code)
	}
}

// TestControllerRefusesBadShard: a shard name that cannot be a label value
// and a Lease name, or one that went missing, stops the controller before
// it starts.
func TestControllerRefusesBadShard(t *testing.T) {
	for _, shard := range []string{"--shard=", "--shard=Shard_A"} {
		_, errOut, code := stencil(t, "", "controller", shard, "--metrics-bind-address=0", "--health-probe-bind-address=0")
		if code == 0 || !strings.Contains(errOut, "--shard") {
			t.Errorf("controller %s: exit %d, stderr %q; want an error naming --shard", shard, code, errOut)
		}
	}
}
