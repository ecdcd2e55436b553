package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// namedSecret renders a Secret and a ConfigMap named by the values.
func namedSecret() map[string]string {
	return map[string]string{"templates/all.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Values.name }}
stringData:
  password: rendered
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-config
data:
  v: "1"
`}
}

// untouched checks that the admin's Secret is as the admin made it: same
// UID, the admin's data, no part-of label, no field of stencil's.
func untouched(t *testing.T, s *corev1.Secret, uid string) {
	t.Helper()
	live := &corev1.Secret{}
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(s), live); err != nil {
		t.Fatalf("the admin's Secret: %v", err)
	}
	if string(live.UID) != uid || string(live.Data["password"]) != "admin-only" || live.Labels[applyset.LabelPartOf] != "" ||
		slices.ContainsFunc(live.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == applyset.FieldManager }) {
		t.Fatalf("the admin's Secret was taken over: uid %s (want %s), labels %v, managers %v, data changed %v",
			live.UID, uid, live.Labels, managers(live.ManagedFields), string(live.Data["password"]) != "admin-only")
	}
}

func managers(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.Manager)
	}
	return out
}

// TestNoAdoptionWithoutConsent (issue 20 item 3): a tenant whose values
// name an existing Secret an admin made gets Stalled (AdoptionRefused,
// naming the Secret and nothing of its content); the Secret keeps its
// data, gets no label and no field of stencil's, and survives a change of
// values and the Composition's deletion.
func TestNoAdoptionWithoutConsent(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-admin"}, Data: map[string][]byte{"password": []byte("admin-only")}}
	mustCreate(t, admin)
	uid := string(admin.UID)
	b := bundle(t, "adopt-refused-"+ns, namedSecret())
	comp := composition(ns, "web", b.Name, `{"name":"db-admin"}`)
	mustCreate(t, comp)

	msg := stalled(t, ns, "web", v1alpha1.ReasonAdoptionRefused).Message
	if !strings.Contains(msg, "Secret/"+ns+"/db-admin") || strings.Contains(msg, "admin-only") || strings.Contains(msg, "rendered") {
		t.Errorf("message %q: want it to name Secret/%s/db-admin and quote no value", msg, ns)
	}
	if want := "compositions.stencil.dev/" + ns + "/web"; !strings.Contains(msg, want) {
		t.Errorf("message %q does not say how to consent (%s)", msg, want)
	}
	untouched(t, admin, uid)

	// The values move on: the Secret was never a member, so nothing prunes it.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"web-db"}`) })
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	untouched(t, admin, uid)

	if err := k.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	gone(t, comp)
	gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-db"}})
	untouched(t, admin, uid)
}

// TestAdoptionConsent: an existing object is adopted (labelled a member,
// applied over, later pruned like any member) when it says so itself (the
// annotation stencil.dev/adopt naming the parent) or when the Bundle's
// author allows its kind (spec.permissions.adopt). A wrong parent in the
// annotation is no consent.
func TestAdoptionConsent(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	adopted := func(name string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		eventually(t, "Secret "+name+" adopted", func() (bool, error) {
			if err := k.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return false, err
			}
			return s.Labels[applyset.LabelPartOf] != "" && string(s.Data["password"]) == "rendered", fmt.Errorf("labels %v", s.Labels)
		})
	}

	// The object's own consent.
	b := bundle(t, "adopt-annotation-"+ns, namedSecret())
	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong",
		Annotations: map[string]string{applyset.AnnotationAdopt: "compositions.stencil.dev/" + ns + "/other"}},
		Data: map[string][]byte{"password": []byte("admin-only")}}
	mustCreate(t, wrong)
	mustCreate(t, composition(ns, "web", b.Name, `{"name":"wrong"}`))
	stalled(t, ns, "web", v1alpha1.ReasonAdoptionRefused)

	consenting := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "consenting",
		Annotations: map[string]string{applyset.AnnotationAdopt: "compositions.stencil.dev/" + ns + "/web"}},
		Data: map[string][]byte{"password": []byte("admin-only")}}
	mustCreate(t, consenting)
	comp := mustGet(t, ns, "web")
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"consenting"}`) })
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	adopted("consenting")

	// The Bundle author's consent, per kind.
	b2 := bundle(t, "adopt-bundle-"+ns, namedSecret(), func(s *v1alpha1.BundleSpec) {
		s.Permissions.Adopt = []v1alpha1.GroupKind{{Group: "", Kind: "Secret"}}
	})
	existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}, Data: map[string][]byte{"password": []byte("admin-only")}}
	mustCreate(t, existing)
	mustCreate(t, composition(ns, "api", b2.Name, `{"name":"existing"}`))
	condition(t, ns, "api", v1alpha1.ConditionReady, metav1.ConditionTrue)
	adopted("existing")
	// Adopted, it is a member: pruned when the render moves on.
	c2 := mustGet(t, ns, "api")
	update(t, c2, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"api-db"}`) })
	gone(t, existing)
}

// TestHookNeverDeletesAnUnrelatedObject: a pre-install hook whose name
// (from values) is that of an existing, unrelated ConfigMap stalls the
// Composition (AdoptionRefused) and leaves the ConfigMap as it is, where
// the hook step used to delete and replace it.
func TestHookNeverDeletesAnUnrelatedObject(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"owner": "admin"}}
	mustCreate(t, other)
	b := bundle(t, "hook-collision-"+ns, map[string]string{"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.fullnameOverride }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
data:
  owner: hook
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-app
data:
  v: "1"
`})
	mustCreate(t, composition(ns, "web", b.Name, `{"fullnameOverride":"settings"}`))
	msg := stalled(t, ns, "web", v1alpha1.ReasonAdoptionRefused).Message
	if !strings.Contains(msg, "ConfigMap/"+ns+"/settings") || strings.Contains(msg, "admin") {
		t.Errorf("message %q: want it to name ConfigMap/%s/settings and no value", msg, ns)
	}
	consistently(t, "the unrelated ConfigMap stays as it is", 3*time.Second, func() (bool, error) {
		live := &corev1.ConfigMap{}
		if err := k.Get(ctx, client.ObjectKeyFromObject(other), live); err != nil {
			return false, err
		}
		if live.UID == other.UID && live.Data["owner"] == "admin" && live.Labels[applyset.LabelPartOf] == "" {
			return true, nil
		}
		return false, fmt.Errorf("uid %s (want %s), data %v, labels %v", live.UID, other.UID, live.Data, live.Labels)
	})
}

// TestInventoryIsTheControllersRecord (issue 20 item 8): a tenant who
// widens the parent's contains-group-kinds annotation to a kind stencil
// never applied gets nothing of that kind listed, pruned or deleted, even
// an object that looks like a member (this set's part-of label, a field
// of stencil's field manager); a Warning event says the entry is ignored.
func TestInventoryIsTheControllersRecord(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "inventory-"+ns, map[string]string{"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
data:
  v: {{ .Values.v | default "1" | quote }}
`})
	comp := composition(ns, "web", b.Name, `{}`)
	mustCreate(t, comp)
	c := condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if c.Status.Inventory == nil || !slices.Equal(c.Status.Inventory.GroupKinds, []string{"ConfigMap"}) {
		t.Errorf("status.inventory = %+v, want the ConfigMap recorded", c.Status.Inventory)
	}

	// An object that looks like a member of the set, of a kind the set never had.
	id := applyset.ID("web", ns, applyset.CompositionGroupKind)
	decoy := &unstructured.Unstructured{}
	decoy.SetAPIVersion("v1")
	decoy.SetKind("Secret")
	decoy.SetNamespace(ns)
	decoy.SetName("admin-token")
	decoy.SetLabels(map[string]string{applyset.LabelPartOf: id})
	decoy.Object["stringData"] = map[string]any{"token": "admin-only"}
	if err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(decoy), client.FieldOwner(applyset.FieldManager)); err != nil {
		t.Fatal(err)
	}
	// The tenant widens the annotation, then changes the values (a pass that prunes).
	update(t, c, func(c *v1alpha1.Composition) {
		c.Annotations[applyset.AnnotationGroupKinds] = "ConfigMap,Secret"
		c.Spec.Values.Raw = []byte(`{"v":"2"}`)
	})
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	live := &corev1.Secret{}
	if err := k.Get(ctx, client.ObjectKeyFromObject(decoy), live); err != nil {
		t.Fatalf("the decoy Secret was pruned: %v", err)
	}
	eventually(t, "a Warning event naming the ignored kind", func() (bool, error) {
		events := &corev1.EventList{}
		if err := k.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "InventoryIgnored" && strings.Contains(e.Message, "Secret") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none InventoryIgnored", len(events.Items))
	})
	c = mustGet(t, ns, "web")
	if got := c.Annotations[applyset.AnnotationGroupKinds]; got != "ConfigMap" {
		t.Errorf("contains-group-kinds = %q, want the hand-added entry dropped", got)
	}

	// Widened again, just before deletion: finalize deletes only what the record names.
	update(t, c, func(c *v1alpha1.Composition) { c.Annotations[applyset.AnnotationGroupKinds] = "ConfigMap,Secret" })
	if err := k.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	if err := k.Get(ctx, client.ObjectKeyFromObject(decoy), live); err != nil {
		t.Fatalf("the decoy Secret was deleted with the Composition: %v", err)
	}
}

// countRequests counts the requests of a client's transport.
type countRequests struct {
	mu   sync.Mutex
	reqs []string
	next http.RoundTripper
}

func (c *countRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req.Method+" "+req.URL.Path)
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// TestCreateIsOneRequest: the Applier creates an object the member cache
// does not hold with one request, the apply (its resourceVersion
// precondition makes it a create only: no read first), for a built-in kind
// and a custom resource; the precondition leaves no trace on the object;
// and the same apply over an existing object of no set is refused
// (AdoptionRefused) and leaves it as it was, where it used to label it a
// member and share its fields silently.
func TestCreateIsOneRequest(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	counter := &countRequests{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	scheme, err := engine.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	writer, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	id := applyset.ID("owner", ns, applyset.CompositionGroupKind)
	schemas, err := applyset.NewSchemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &applyset.Applier{Writer: writer, Reader: emptyReader{}, ID: id, Concurrency: 1, Schemas: schemas}
	objects := map[string]func(name string) *unstructured.Unstructured{
		"ConfigMap": func(name string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"v": "1"}}}
			u.SetNamespace(ns)
			u.SetName(name)
			return u
		},
		"Composition": func(name string) *unstructured.Unstructured {
			// Of a shard no controller serves: nothing else writes it.
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "stencil.dev/v1alpha1", "kind": "Composition", "spec": map[string]any{"bundle": "none", "serviceAccountName": "any"}}}
			u.SetNamespace(ns)
			u.SetName(name)
			u.SetLabels(map[string]string{shard.Label: "nobody"})
			return u
		},
	}
	for kind, mk := range objects {
		// Discovery first: what is counted is the apply's own requests.
		if _, err := writer.RESTMapper().RESTMapping(mk("x").GroupVersionKind().GroupKind()); err != nil {
			t.Fatal(err)
		}
		desired := mk("new")
		desired.SetLabels(map[string]string{applyset.LabelPartOf: id, shard.Label: "nobody"})
		counter.mu.Lock()
		counter.reqs = nil
		counter.mu.Unlock()
		res := a.Apply(ctx, desired)
		counter.mu.Lock()
		reqs := slices.Clone(counter.reqs)
		counter.mu.Unlock()
		if res.Action != applyset.Created || len(reqs) != 1 || !strings.HasPrefix(reqs[0], "PATCH ") {
			t.Errorf("%s: a new object: %s (%v), requests %v; want Created by one PATCH", kind, res.Action, res.Err, reqs)
		}
		live := mk("new")
		if err := k.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
			t.Fatal(err)
		}
		if live.GetResourceVersion() == "1" || strings.Contains(fmt.Sprint(live.GetManagedFields()), "resourceVersion") || live.GetLabels()[applyset.LabelPartOf] != id {
			t.Errorf("%s: created with resourceVersion %s, managed fields %v, labels %v", kind, live.GetResourceVersion(), live.GetManagedFields(), live.GetLabels())
		}

		// An existing object of no set, whose fields would not conflict.
		existing := mk("existing")
		if err := k.Create(ctx, existing, client.FieldOwner("admin")); err != nil {
			t.Fatal(err)
		}
		desired = mk("existing")
		desired.SetLabels(map[string]string{applyset.LabelPartOf: id, shard.Label: "nobody"})
		res = a.Apply(ctx, desired)
		if res.Action != applyset.Failed || res.Reason != v1alpha1.ReasonAdoptionRefused {
			t.Errorf("%s: an existing object of no set: %s (%s, %v); want Failed, AdoptionRefused", kind, res.Action, res.Reason, res.Err)
		}
		after := mk("existing")
		if err := k.Get(ctx, client.ObjectKeyFromObject(after), after); err != nil {
			t.Fatal(err)
		}
		if after.GetResourceVersion() != existing.GetResourceVersion() || after.GetLabels()[applyset.LabelPartOf] != "" {
			t.Errorf("%s: the existing object was written: resourceVersion %s → %s, labels %v", kind, existing.GetResourceVersion(), after.GetResourceVersion(), after.GetLabels())
		}
	}
}

// emptyReader is a member cache that holds nothing.
type emptyReader struct{}

func (emptyReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, key.Name)
}

func (emptyReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestFinalizeActsOnTheRecord (issue 20 item 8): a tenant who widens the
// contains-group-kinds annotation and then deletes the Composition gets
// nothing of the added kind deleted, even an object that looks like a
// member.
func TestFinalizeActsOnTheRecord(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "finalize-record-"+ns, map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Composition.Name }}\n"})
	mustCreate(t, composition(ns, "web", b.Name, `{}`))
	c := condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)

	decoy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount"}}
	decoy.SetNamespace(ns)
	decoy.SetName("deployer")
	decoy.SetLabels(map[string]string{applyset.LabelPartOf: applyset.ID("web", ns, applyset.CompositionGroupKind)})
	if err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(decoy), client.FieldOwner(applyset.FieldManager)); err != nil {
		t.Fatal(err)
	}
	update(t, c, func(c *v1alpha1.Composition) {
		c.Annotations[applyset.AnnotationGroupKinds] = "ConfigMap,ServiceAccount"
	})
	if err := k.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	if err := k.Get(ctx, client.ObjectKeyFromObject(decoy), &corev1.ServiceAccount{}); err != nil {
		t.Fatalf("the ServiceAccount the tenant added to the annotation was deleted with the Composition: %v", err)
	}
}
