package nochange

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func mustYAML(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const desiredDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {}
      tolerations: []
      containers:
      - name: app
        image: nginx
        args: [--port=80]
        resources: {requests: {cpu: "0.5", memory: 1}}
        ports: [{containerPort: 80}]
`

// created returns desired as the API server stores it after stencil's
// apply created it: the local apply onto an empty object, normalised, plus
// what the server adds (identity, defaults, status).
func created(t testing.TB, s *Schemas, desired *unstructured.Unstructured, defaults func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	tk, err := s.forKind(context.Background(), desired.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	empty := &unstructured.Unstructured{}
	empty.SetGroupVersionKind(desired.GroupVersionKind())
	empty.SetName(desired.GetName())
	empty.SetNamespace(desired.GetNamespace())
	out, err := tk.manager.Apply(empty, applyBody(desired), s.fieldManager, true)
	if err != nil {
		t.Fatal(err)
	}
	live := out.(*unstructured.Unstructured)
	if err := normalise(s.scheme, live, tk.builtin); err != nil {
		t.Fatal(err)
	}
	live.SetUID("u1")
	live.SetResourceVersion("7")
	live.SetGeneration(1)
	live.SetCreationTimestamp(metav1.Now())
	if defaults != nil {
		defaults(live)
	}
	return live
}

func deploymentDefaults(u *unstructured.Unstructured) {
	_ = unstructured.SetNestedField(u.Object, int64(600), "spec", "progressDeadlineSeconds")
	c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	c[0].(map[string]any)["imagePullPolicy"] = "Always"
	c[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": int64(80), "protocol": "TCP"}}
	_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
	_ = unstructured.SetNestedField(u.Object, map[string]any{"replicas": int64(2)}, "status")
}

// otherManager records that manager updated (not applied) the fields of
// u at path, as kubectl edit or a controller would.
func otherManager(t testing.TB, u *unstructured.Unstructured, manager, fields string) {
	t.Helper()
	u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: u.GetAPIVersion(),
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields),
	}))
}

func TestUpToDate(t *testing.T) {
	s, err := NewSchemas(nil, "stencil")
	if err != nil {
		t.Fatal(err)
	}
	desired := mustYAML(t, desiredDeployment)
	tests := []struct {
		name   string
		live   func(*unstructured.Unstructured)
		write  bool
		change []string
	}{
		// Server defaults (imagePullPolicy, a port's protocol), status, and
		// the forms of desired the server normalises ("0.5" is 500m,
		// memory: 1 is "1", nodeSelector: {} and tolerations: [] vanish)
		// make no difference.
		{name: "live as stencil left it", live: func(*unstructured.Unstructured) {}},
		{name: "label added by another manager", live: func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"app": "web", "extra": "x"})
			otherManager(t, u, "kubectl-label", `{"f:metadata":{"f:labels":{"f:extra":{}}}}`)
		}},
		{name: "scaled by another manager", live: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}, write: true, change: []string{"spec.replicas"}},
		{name: "element added to an atomic list", live: func(u *unstructured.Unstructured) {
			c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c[0].(map[string]any)["args"] = []any{"--port=80", "--debug"}
			_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
		}, write: true, change: []string{"spec.template.spec.containers[name=app].args"}},
		{name: "container added by another manager", live: func(u *unstructured.Unstructured) {
			c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c = append(c, map[string]any{"name": "sidecar", "image": "busybox"})
			_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
			otherManager(t, u, "injector", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)
		}},
		{name: "field stencil applied is gone", live: func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "metadata", "labels")
		}, write: true, change: []string{"metadata.labels.app"}},
		{name: "stencil's field set lacks a field", live: func(u *unstructured.Unstructured) {
			mf := u.GetManagedFields()
			mf[0].FieldsV1.SetRawString(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)
			u.SetManagedFields(mf)
		}, write: true},
		{name: "not applied by stencil", live: func(u *unstructured.Unstructured) {
			mf := u.GetManagedFields()
			mf[0].Manager = "kubectl"
			u.SetManagedFields(mf)
		}, write: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := created(t, s, desired, deploymentDefaults)
			tt.live(live)
			live.SetResourceVersion(strconv.Itoa(100 + i)) // each edit is a new version
			d := s.upToDate(context.Background(), desired, live)
			if d.write != tt.write {
				t.Fatalf("write = %v (%s, %v), want %v", d.write, d.why, d.changed, tt.write)
			}
			if diff := cmp.Diff(tt.change, d.changed); tt.change != nil && diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpToDateSecret: a Secret rendered with stringData matches the live
// Secret that holds it as data; a changed value does not, and its path
// names the key but not the value.
func TestUpToDateSecret(t *testing.T) {
	s, err := NewSchemas(nil, "stencil")
	if err != nil {
		t.Fatal(err)
	}
	desired := mustYAML(t, `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: ns}
type: Opaque
stringData: {password: hunter2}
`)
	live := created(t, s, desired, nil)
	if d := s.upToDate(context.Background(), desired, live); d.write {
		t.Fatalf("an unchanged Secret with stringData would be written: %s %v", d.why, d.changed)
	}
	changed := desired.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "hunter3", "stringData", "password")
	d := s.upToDate(context.Background(), changed, live)
	if !d.write {
		t.Fatal("a changed stringData value would not be written")
	}
	for _, p := range d.changed {
		if p != "data.password" {
			t.Errorf("changed path %q, want data.password", p)
		}
	}
}

// TestUpToDateUndecided: a kind with no schema is written.
func TestUpToDateUndecided(t *testing.T) {
	s, err := NewSchemas(nil, "stencil")
	if err != nil {
		t.Fatal(err)
	}
	cr := mustYAML(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: ns}, spec: {size: 1}}`)
	live := cr.DeepCopy()
	live.SetResourceVersion("3")
	if d := s.upToDate(context.Background(), cr, live); !d.write || d.why == "" {
		t.Errorf("a kind without a schema: %+v, want a write with a reason", d)
	}
}

// TestUpToDateRemembers: a "no write" decision holds while the live
// resourceVersion and the desired object stay the same, and only then.
func TestUpToDateRemembers(t *testing.T) {
	s, err := NewSchemas(nil, "stencil")
	if err != nil {
		t.Fatal(err)
	}
	desired := mustYAML(t, desiredDeployment)
	live := created(t, s, desired, deploymentDefaults)
	if d := s.upToDate(context.Background(), desired, live); d.write {
		t.Fatalf("write: %s %v", d.why, d.changed)
	}
	// The same version of live, changed behind the memory's back, is
	// still answered from memory: that is what the memory is for.
	stale := live.DeepCopy()
	_ = unstructured.SetNestedField(stale.Object, int64(9), "spec", "replicas")
	if d := s.upToDate(context.Background(), desired, stale); d.write {
		t.Errorf("the same resourceVersion was decided again")
	}
	stale.SetResourceVersion("8")
	if d := s.upToDate(context.Background(), desired, stale); !d.write {
		t.Errorf("a new resourceVersion was answered from memory")
	}
	other := desired.DeepCopy()
	_ = unstructured.SetNestedField(other.Object, int64(9), "spec", "replicas")
	if d := s.upToDate(context.Background(), other, live); !d.write {
		t.Errorf("a new desired object was answered from memory")
	}
}

// BenchmarkUpToDate is the cost of one no-op decision for a typical
// Deployment: computed (local apply, normalisation, comparison), and
// remembered (the live object's resourceVersion and the desired object
// unchanged since the last decision).
func BenchmarkUpToDate(b *testing.B) {
	s, err := NewSchemas(nil, "stencil")
	if err != nil {
		b.Fatal(err)
	}
	desired := mustYAML(b, desiredDeployment)
	live := created(b, s, desired, deploymentDefaults)
	ctx := context.Background()
	b.Run("computed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d := s.decide(ctx, desired, live); d.write {
				b.Fatalf("write: %s %v", d.why, d.changed)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d := s.upToDate(ctx, desired, live); d.write {
				b.Fatalf("write: %s %v", d.why, d.changed)
			}
		}
	})
}

// TestAppliedSparesTheLocalApply: the object the server stored for
// stencil's apply of a desired object is up to date with it while it stays
// at that resourceVersion; another version, another desired object or a
// stored object without identity bring the local apply back (here it
// cannot decide at all: the kind has no schema, so it says write).
func TestAppliedSparesTheLocalApply(t *testing.T) {
	s, err := NewSchemas(nil, "stencil")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	desired := mustYAML(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: ns}
spec: {size: 2}
`)
	stored := desired.DeepCopy()
	stored.SetUID("u1")
	stored.SetResourceVersion("5")
	if d := s.Decide(ctx, nil, desired, stored); !d.Write {
		t.Fatalf("a kind without a schema before Applied: got no write, want write")
	}
	s.Applied(desired, stored)
	if d := s.Decide(ctx, nil, desired, stored); d.Write {
		t.Errorf("the object stored for this desired object: got write (%s), want no write", d.Why)
	}
	moved := stored.DeepCopy()
	moved.SetResourceVersion("6")
	if d := s.Decide(ctx, nil, desired, moved); !d.Write {
		t.Errorf("the object at another resourceVersion: got no write, want write")
	}
	other := desired.DeepCopy()
	_ = unstructured.SetNestedField(other.Object, int64(3), "spec", "size")
	if d := s.Decide(ctx, nil, other, stored); !d.Write {
		t.Errorf("another desired object: got no write, want write")
	}

	anonymous := desired.DeepCopy()
	anonymous.SetName("nameless")
	anonymous.SetResourceVersion("9")
	s.Applied(anonymous, anonymous) // no UID: nothing recorded
	withUID := anonymous.DeepCopy()
	withUID.SetUID("u2")
	if d := s.Decide(ctx, nil, anonymous, withUID); !d.Write {
		t.Errorf("after Applied of an object without a UID: got no write, want write")
	}
	var none *Schemas
	none.Applied(desired, stored) // must not panic
}
