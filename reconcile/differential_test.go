package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// examples loads every example bundle with its example Composition: those
// of examples/compositions, and for each instance of a published kind in
// examples/instances a Composition of the bundle that publishes the kind,
// with the instance's spec as values (the pipeline is one; the bundle's
// api is left out, so the tests' Bundles publish nothing).
func examples(t *testing.T) map[string]struct {
	bundle *templates.Bundle
	comp   *v1alpha1.Composition
} {
	t.Helper()
	root := filepath.Join(testenv.Root(), "examples")
	out := map[string]struct {
		bundle *templates.Bundle
		comp   *v1alpha1.Composition
	}{}
	load := func(name string) *templates.Bundle {
		b, err := templates.Load(os.DirFS(filepath.Join(root, "bundles", name)), templates.LoadOptions{Name: name})
		if err != nil {
			t.Fatalf("load bundle %s: %v", name, err)
		}
		return b
	}
	compositions, err := filepath.Glob(filepath.Join(root, "compositions", "*.yaml"))
	if err != nil || len(compositions) == 0 {
		t.Fatalf("no example Compositions (%v)", err)
	}
	for _, f := range compositions {
		comp := &v1alpha1.Composition{}
		if err := yaml.UnmarshalStrict(readFile(t, f), comp); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = struct {
			bundle *templates.Bundle
			comp   *v1alpha1.Composition
		}{load(comp.Spec.Bundle), comp}
	}
	publishers := map[schema.GroupVersionKind]string{}
	dirs, err := os.ReadDir(filepath.Join(root, "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if api := load(d.Name()).Spec().API; api != nil {
			publishers[publish.GVK(publish.Defaulted(*api))] = d.Name()
		}
	}
	instances, err := filepath.Glob(filepath.Join(root, "instances", "*.yaml"))
	if err != nil || len(instances) == 0 {
		t.Fatalf("no example instances (%v)", err)
	}
	for _, f := range instances {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(readFile(t, f), &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name, ok := publishers[u.GroupVersionKind()]
		if !ok {
			t.Fatalf("%s: no example bundle publishes %s", f, u.GroupVersionKind())
		}
		b := load(name)
		spec := b.Spec()
		spec.API = nil
		unpublished, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
		if err != nil {
			t.Fatalf("bundle %s without its api: %v", name, err)
		}
		comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}, Spec: v1alpha1.CompositionSpec{Bundle: name}}
		if v, ok := u.Object["spec"]; ok {
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			comp.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = struct {
			bundle *templates.Bundle
			comp   *v1alpha1.Composition
		}{unpublished, comp}
	}
	for _, ex := range out {
		freeNodePorts(t, ex.comp)
	}
	return out
}

// freeNodePorts gives every nodePort of comp's values a port no Service of
// the cluster holds: a nodePort is cluster-wide, and the Services of the
// tests that applied the same example before may still be on their way
// out with their namespaces (the API server refuses a port held). The
// tests of a package run one at a time, so the port stays free until used.
func freeNodePorts(t *testing.T, comp *v1alpha1.Composition) {
	t.Helper()
	if comp.Spec.Values == nil || !strings.Contains(string(comp.Spec.Values.Raw), `"nodePort"`) {
		return
	}
	svcs := &corev1.ServiceList{}
	if err := k.List(context.Background(), svcs); err != nil {
		t.Fatal(err)
	}
	held := map[int64]bool{}
	for _, s := range svcs.Items {
		for _, p := range s.Spec.Ports {
			held[int64(p.NodePort)] = true
		}
	}
	var values any
	if err := json.Unmarshal(comp.Spec.Values.Raw, &values); err != nil {
		t.Fatal(err)
	}
	next := int64(30000 + rand.Intn(2000))
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for key, e := range v {
				if _, ok := e.(float64); ok && key == "nodePort" {
					for held[next] {
						next++
					}
					v[key], held[next] = next, true
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(values)
	raw, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	comp.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// differential compares stencil's local decision with the API server's
// answer for one desired object and its live object: a server-side
// dry-run apply (force, field manager stencil) whose result differs from
// live (resourceVersion and managedFields timestamps aside) means the
// apply must be sent.
type differential struct {
	t      *testing.T
	decide reconcile.LocalDecision
	// writes and skips count the decisions checked, to show the cases
	// exercise both answers; asked counts those settled by a dry-run.
	writes, skips, asked int
}

func newDifferential(t *testing.T) *differential {
	t.Helper()
	decide, err := reconcile.NewLocalDecision(env.Config, k)
	if err != nil {
		t.Fatal(err)
	}
	return &differential{t: t, decide: decide}
}

// apply makes the real apply stencil makes.
func (d *differential) apply(u *unstructured.Unstructured) {
	d.t.Helper()
	if err := k.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
		client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		d.t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func (d *differential) live(u *unstructured.Unstructured) *unstructured.Unstructured {
	d.t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(u), live); err != nil {
		d.t.Fatalf("get %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return live
}

// check asserts that the local decision for desired over the current live
// object is the server's, and returns it.
func (d *differential) check(what string, desired *unstructured.Unstructured) bool {
	d.t.Helper()
	live := d.live(desired)
	local, changed, asked := d.decide(context.Background(), desired, live)
	if asked {
		d.asked++
	}
	dry := desired.DeepCopy()
	if err := k.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(applyset.FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		d.t.Fatalf("%s: dry-run apply: %v", what, err)
	}
	server, diff := differs(live, dry)
	if local != server {
		d.t.Errorf("%s: stencil decides write=%v (changed %v), the server's dry-run apply says %v:\n%s", what, local, changed, server, diff)
	}
	if server {
		d.writes++
	} else {
		d.skips++
	}
	return server
}

// differs reports whether the dry-run result differs from live, ignoring
// resourceVersion and managedFields timestamps. The API server orders
// managedFields entries by their timestamps, and stamps the applying
// manager's entry anew even when nothing changes, so the entries are
// compared in a fixed order.
func differs(live, dry *unstructured.Unstructured) (bool, string) {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		c.SetResourceVersion("")
		mf := c.GetManagedFields()
		for i := range mf {
			mf[i].Time = nil
		}
		slices.SortFunc(mf, func(a, b metav1.ManagedFieldsEntry) int {
			return strings.Compare(a.Manager+"/"+string(a.Operation)+"/"+a.Subresource+"/"+a.APIVersion,
				b.Manager+"/"+string(b.Operation)+"/"+b.Subresource+"/"+b.APIVersion)
		})
		c.SetManagedFields(mf)
		return c.Object
	}
	a, b := strip(live), strip(dry)
	if equality.Semantic.DeepEqual(a, b) {
		return false, ""
	}
	ja, _ := json.MarshalIndent(a, "", " ")
	jb, _ := json.MarshalIndent(b, "", " ")
	return true, "live:\n" + string(ja) + "\ndry-run:\n" + string(jb)
}

// TestDifferentialExamples: for every object every example Composition
// renders, stencil's decision after the apply that created it, and after
// generic out-of-band edits, is the API server's.
func TestDifferentialExamples(t *testing.T) {
	ctx := context.Background()
	d := newDifferential(t)
	for name, ex := range examples(t) {
		t.Run(name, func(t *testing.T) {
			d.t = t
			ns := testenv.Namespace(t, k)
			comp := ex.comp.DeepCopy()
			comp.Namespace = ns
			plan, err := plan.NewPlan(ctx, testenv.InProcess{}, ex.bundle, plan.RenderInput(comp, nil, nil), cluster.NewAPIs(k.RESTMapper(), k))
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			// Free what is cluster-wide (a Service's fixed nodePort) for
			// the tests that apply the same examples later.
			t.Cleanup(func() {
				for _, u := range plan.Objects {
					_ = k.Delete(context.Background(), u.DeepCopy())
				}
			})
			for _, u := range plan.Objects {
				what := u.GetKind() + "/" + u.GetName()
				d.apply(u)
				if d.check(what+" as applied", u) {
					t.Errorf("%s: the server would change it right after it was applied", what)
				}
				// Another manager adds a label: nothing of stencil's changes.
				patch := fmt.Sprintf(`{"metadata":{"labels":{"touched-%s":"yes"}}}`, strings.ToLower(u.GetKind()))
				env.MergePatch(t, u, patch, "kubectl-label")
				d.check(what+" labelled by another manager", u)
				// kubectl edit changes a label stencil sets.
				env.MergePatch(t, u, fmt.Sprintf(`{"metadata":{"labels":{%q:"edited"}}}`, applyset.LabelPartOf), "kubectl-edit")
				d.check(what+" with stencil's label edited", u)
				d.apply(u)
				// kubectl edit removes it.
				env.MergePatch(t, u, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, applyset.LabelPartOf), "kubectl-edit")
				d.check(what+" with stencil's label removed", u)
				d.apply(u)
			}
		})
	}
	if d.writes == 0 || d.skips == 0 {
		t.Errorf("the cases exercised %d writes and %d skips: both answers must be seen", d.writes, d.skips)
	}
	t.Logf("%d decisions to write, %d to skip, %d left to the server (a dry-run, or its remembered verdict)", d.writes, d.skips, d.asked)
}

// ssa applies a partial object as another field manager, forcing.
func ssa(t *testing.T, u *unstructured.Unstructured, manager, body string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(body), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	obj.SetNamespace(u.GetNamespace())
	obj.SetName(u.GetName())
	if err := k.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("apply %s as %s: %v", u.GetName(), manager, err)
	}
}

// edit reads the object, changes it and writes it back with Update as
// manager, as kubectl edit does (again on a conflict).
func edit(t *testing.T, u *unstructured.Unstructured, manager string, change func(map[string]any)) {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	live.SetNamespace(u.GetNamespace())
	live.SetName(u.GetName())
	testenv.Update(t, k, live, func() { change(live.Object) }, client.FieldOwner(manager))
}

func field(obj map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	return v
}

// container returns the first container of a pod template.
func container(obj map[string]any) map[string]any {
	cs, _ := field(obj, "spec", "template", "spec", "containers").([]any)
	return cs[0].(map[string]any)
}

const diffDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}]
      containers:
      - name: app
        image: nginx:1.27
        args: [--port=80]
        env: [{name: MODE, value: prod}]
        resources: {requests: {cpu: "0.5", memory: 64Mi}, limits: {cpu: 1, memory: "128Mi"}}
        ports: [{containerPort: 80}]
`

const diffService = `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`

const diffSecret = `
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: Opaque
stringData: {password: hunter2}
`

const diffConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: conf, finalizers: [example.com/keep]}
data: {a: "1", b: "2"}
`

const diffCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.diff.stencil.dev}
spec:
  group: diff.stencil.dev
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              mode: {type: string, default: fast}
              size: {type: integer, default: 1}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: atomic}
              labels: {type: array, items: {type: string}, x-kubernetes-list-type: set}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    protocol: {type: string, default: TCP}
                    name: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

const diffGadget = `
apiVersion: diff.stencil.dev/v1
kind: Gadget
metadata: {name: g}
spec:
  tags: [a]
  labels: [x]
  ports: [{port: 80, name: http}]
`

const diffHPA = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 4
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`

// diffCase is one out-of-band edit (or one form of the desired object):
// desired is applied, then edit runs as another actor, then the decision
// for next(desired) is checked against the server's dry-run.
type diffCase struct {
	name    string
	desired string
	edit    func(t *testing.T, u *unstructured.Unstructured)
	next    func(desired map[string]any)
	// write is the server's answer the case is written for.
	write bool
}

func diffCases() []diffCase {
	dep, svc, sec, cm, gad := diffDeployment, diffService, diffSecret, diffConfigMap, diffGadget
	return []diffCase{
		// Deployment.
		{name: "deployment as applied", desired: dep},
		{name: "label added by another manager (apply)", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "other", `{metadata: {labels: {team: a}}}`)
		}},
		{name: "annotation added by kubectl edit", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "x", "metadata", "annotations", "note") })
		}},
		{name: "stencil's label value edited", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "back", "metadata", "labels", "tier") })
		}},
		{name: "stencil's label removed by kubectl edit", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { unstructured.RemoveNestedField(o, "metadata", "labels", "tier") })
		}},
		{name: "scaled through the scale subresource", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			scale := &unstructured.Unstructured{}
			scale.SetGroupVersionKind(u.GroupVersionKind())
			scale.SetNamespace(u.GetNamespace())
			scale.SetName(u.GetName())
			if err := k.SubResource("scale").Patch(context.Background(), scale, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)), client.FieldOwner("kubectl-scale")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "replicas set by an autoscaler's update", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "hpa", func(o map[string]any) { _ = unstructured.SetNestedField(o, int64(4), "spec", "replicas") })
		}},
		{name: "image taken over by another manager", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "other", `{spec: {template: {spec: {containers: [{name: app, image: "nginx:1.28"}]}}}}`)
		}},
		{name: "same image co-owned by another manager", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "other", `{spec: {template: {spec: {containers: [{name: app, image: "nginx:1.27"}]}}}}`)
		}},
		{name: "defaulted imagePullPolicy changed by another manager", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { container(o)["imagePullPolicy"] = "Always" })
		}},
		{name: "element added to an atomic list (args)", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { container(o)["args"] = []any{"--port=80", "--debug"} })
		}},
		{name: "element added to an atomic list (tolerations)", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				tl, _ := field(o, "spec", "template", "spec", "tolerations").([]any)
				_ = unstructured.SetNestedSlice(o, append(tl, map[string]any{"operator": "Exists"}), "spec", "template", "spec", "tolerations")
			})
		}},
		{name: "container added to a map list by another manager", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "injector", `{spec: {template: {spec: {containers: [{name: sidecar, image: busybox}]}}}}`)
		}},
		{name: "env var added to a map list by kubectl edit", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				c := container(o)
				c["env"] = append(c["env"].([]any), map[string]any{"name": "DEBUG", "value": "1"})
			})
		}},
		{name: "env var stencil set removed", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { delete(container(o), "env") })
		}},
		{name: "port added by another manager", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "other", `{spec: {template: {spec: {containers: [{name: app, ports: [{containerPort: 9090}]}]}}}}`)
		}},
		{name: "cpu request rewritten in another form of the same quantity", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				_ = unstructured.SetNestedField(container(o), "0.50", "resources", "requests", "cpu")
			})
		}},
		{name: "cpu request changed", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				_ = unstructured.SetNestedField(container(o), "750m", "resources", "requests", "cpu")
			})
		}},
		{name: "desired quantities as numbers and in other units", desired: dep, next: func(o map[string]any) {
			c := container(o)
			_ = unstructured.SetNestedField(c, "500m", "resources", "requests", "cpu")
			_ = unstructured.SetNestedField(c, "1000m", "resources", "limits", "cpu")
		}},
		{name: "desired nodeSelector {} and tolerations []", desired: strings.Replace(dep,
			"      tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}]",
			"      nodeSelector: {}\n      tolerations: []", 1)},
		{name: "desired carries a status (ignored on the main resource)", desired: dep + "status: {replicas: 9}\n"},
		{name: "desired replicas changed", desired: dep, write: true, next: func(o map[string]any) {
			_ = unstructured.SetNestedField(o, int64(3), "spec", "replicas")
		}},
		{name: "desired label dropped", desired: dep, write: true, next: func(o map[string]any) {
			unstructured.RemoveNestedField(o, "metadata", "labels", "tier")
		}},
		{name: "desired imagePullPolicy set to the server's default", desired: dep, write: true, next: func(o map[string]any) {
			container(o)["imagePullPolicy"] = "IfNotPresent"
		}},
		{name: "label set then dropped by another manager (apply)", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "other", `{metadata: {labels: {team: a}}}`)
			ssa(t, u, "other", `{metadata: {}}`)
		}},
		{name: "replicas co-owned at the same value by another manager", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "autoscaler", `{spec: {replicas: 2}}`)
		}},
		{name: "replicas taken over at another value by another manager", desired: dep, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			ssa(t, u, "autoscaler", `{spec: {replicas: 7}}`)
		}},
		{name: "defaulted field removed by kubectl edit (defaulted again)", desired: dep, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { unstructured.RemoveNestedField(o, "spec", "progressDeadlineSeconds") })
		}},
		{name: "desired env vars reordered", desired: dep, write: true, next: func(o map[string]any) {
			container(o)["env"] = []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "MODE", "value": "prod"}}
		}},
		// Service.
		{name: "service port without protocol (a defaulted key)", desired: svc},
		{name: "service type changed by kubectl edit (server allocates a nodePort)", desired: svc, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "NodePort", "spec", "type") })
		}},
		{name: "service port added by kubectl edit", desired: svc, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				ps := field(o, "spec", "ports").([]any)
				_ = unstructured.SetNestedSlice(o, append(ps, map[string]any{"name": "metrics", "port": int64(9090)}), "spec", "ports")
			})
		}},
		{name: "service targetPort edited", desired: svc, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				ps := field(o, "spec", "ports").([]any)
				ps[0].(map[string]any)["targetPort"] = int64(9000)
			})
		}},
		{name: "key added to an atomic map (selector)", desired: svc, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "x", "spec", "selector", "extra") })
		}},
		{name: "desired targetPort by name", desired: svc, write: true, next: func(o map[string]any) {
			ps := field(o, "spec", "ports").([]any)
			ps[0].(map[string]any)["targetPort"] = "web"
		}},
		// A kind served in two versions, edited through the other one.
		{name: "annotation added through another version (autoscaling/v1)", desired: diffHPA, edit: func(t *testing.T, u *unstructured.Unstructured) {
			v1 := u.DeepCopy()
			v1.SetAPIVersion("autoscaling/v1")
			env.MergePatch(t, v1, `{"metadata":{"annotations":{"note":"x"}}}`, "kubectl-annotate")
		}},
		{name: "maxReplicas edited through another version (autoscaling/v1)", desired: diffHPA, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			v1 := u.DeepCopy()
			v1.SetAPIVersion("autoscaling/v1")
			env.MergePatch(t, v1, `{"spec":{"maxReplicas":9}}`, "kubectl-edit")
		}},
		// Secret.
		{name: "secret with stringData", desired: sec},
		{name: "secret value edited", desired: sec, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "b3RoZXI=", "data", "password") })
		}},
		{name: "secret key added by another manager", desired: sec, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "eA==", "data", "extra") })
		}},
		{name: "desired data instead of stringData, same value", desired: sec, write: true, next: func(o map[string]any) {
			delete(o, "stringData")
			o["data"] = map[string]any{"password": "aHVudGVyMg=="}
		}},
		{name: "desired stringData changed", desired: sec, write: true, next: func(o map[string]any) {
			o["stringData"] = map[string]any{"password": "hunter3"}
		}},
		// ConfigMap.
		{name: "configmap key added by kubectl edit", desired: cm, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, "3", "data", "c") })
		}},
		{name: "configmap key stencil set removed", desired: cm, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { unstructured.RemoveNestedField(o, "data", "b") })
		}},
		{name: "element added to a set list (finalizers)", desired: cm, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				_ = unstructured.SetNestedStringSlice(o, []string{"example.com/keep", "example.com/other"}, "metadata", "finalizers")
			})
		}},
		{name: "element of a set list stencil set removed", desired: cm, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { unstructured.RemoveNestedField(o, "metadata", "finalizers") })
		}},
		// A custom kind with schema defaults.
		{name: "custom resource with schema defaults", desired: gad},
		{name: "defaulted field set by another manager", desired: gad, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedField(o, int64(5), "spec", "size") })
		}},
		{name: "custom atomic list element added", desired: gad, write: true, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedStringSlice(o, []string{"a", "b"}, "spec", "tags") })
		}},
		{name: "custom set list element added", desired: gad, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) { _ = unstructured.SetNestedStringSlice(o, []string{"x", "y"}, "spec", "labels") })
		}},
		{name: "custom map list element added", desired: gad, edit: func(t *testing.T, u *unstructured.Unstructured) {
			edit(t, u, "kubectl-edit", func(o map[string]any) {
				ps := field(o, "spec", "ports").([]any)
				_ = unstructured.SetNestedSlice(o, append(ps, map[string]any{"port": int64(81), "protocol": "UDP"}), "spec", "ports")
			})
		}},
		{name: "custom status written", desired: gad, edit: func(t *testing.T, u *unstructured.Unstructured) {
			st := u.DeepCopy()
			_ = unstructured.SetNestedField(st.Object, "ok", "status", "phase")
			if err := k.Status().Patch(context.Background(), st, client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"ok"}}`)), client.FieldOwner("gadget-controller")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "desired carries a status (reset by the status subresource)", desired: gad + "status: {phase: rendered}\n"},
		{name: "desired sets a defaulted field to its default", desired: gad, write: true, next: func(o map[string]any) {
			_ = unstructured.SetNestedField(o, "fast", "spec", "mode")
		}},
	}
}

// TestDifferentialEdits: for each out-of-band edit, stencil's decision is
// the server's dry-run apply's.
func TestDifferentialEdits(t *testing.T) {
	ns := testenv.Namespace(t, k)
	d := newDifferential(t)
	crd := suite.MustYAML(t, diffCRD)
	d.apply(crd) // kept: the environment ends with the package's tests
	eventually(t, "the Gadget kind to be served", func() (bool, error) {
		_, err := k.RESTMapper().RESTMapping(schema.GroupKind{Group: "diff.stencil.dev", Kind: "Gadget"})
		return err == nil, err
	})
	// The CRD's OpenAPI v3 is published shortly after it is Established:
	// the decision is made once it is.
	disco, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Gadget schema to be published", func() (bool, error) {
		paths, err := disco.OpenAPIV3().Paths()
		if err != nil {
			return false, err
		}
		gv, ok := paths["apis/diff.stencil.dev/v1"]
		if !ok {
			return false, nil
		}
		doc, err := gv.Schema("application/json")
		return err == nil && strings.Contains(string(doc), `"kind": "Gadget"`) || strings.Contains(string(doc), `"kind":"Gadget"`), err
	})
	d = newDifferential(t)
	cases := diffCases()
	if len(cases) < 30 {
		t.Fatalf("%d cases, want at least 30", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			u := suite.MustYAML(t, tc.desired)
			u.SetNamespace(ns)
			u.SetName(fmt.Sprintf("%s-%d", u.GetName(), i))
			d.apply(u)
			if len(u.GetFinalizers()) > 0 {
				t.Cleanup(func() {
					edit(t, u, "cleanup", func(o map[string]any) { unstructured.RemoveNestedField(o, "metadata", "finalizers") })
				})
			}
			if d.check("as applied", u) {
				t.Errorf("the server would change %s right after it was applied", u.GetName())
			}
			if tc.edit != nil {
				tc.edit(t, u)
			}
			next := u.DeepCopy()
			if tc.next != nil {
				tc.next(next.Object)
			}
			if got := d.check(tc.name, next); got != tc.write {
				t.Errorf("the server says write=%v, the case is written for %v", got, tc.write)
			}
		})
	}
	t.Logf("%d decisions to write, %d to skip, %d left to the server (a dry-run, or its remembered verdict)", d.writes, d.skips, d.asked)
}
