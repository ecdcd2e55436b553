package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestRenderErrorPrunesNothing breaks the render in two ways (values the
// schema rejects, a template that fails) and checks that the Composition
// stalls with the field path or file:line while every member stays.
func TestRenderErrorPrunesNothing(t *testing.T) {
	ns := testenv.Namespace(t, k)
	files := suite.TwoConfigMaps()
	files["templates/fail.yaml"] = "{{- if .Values.boom }}{{ fail \"boom requested\" }}{{ end }}\n"
	b := bundle(t, "renderfail-"+ns, files, withSchema(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"second":{"type":"boolean"},"boom":{"type":"boolean"}}}`))
	comp := composition(ns, "app", b.Name, `{}`)
	mustCreate(t, comp)
	keep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}}
	second := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}}
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	tests := []struct {
		name   string
		values string
		want   string
	}{
		// Invalid values and no second ConfigMap: a prune would delete it.
		{"invalid values", `{"second":false,"name":""}`, "values.name"},
		{"template fail", `{"second":false,"boom":true}`, "templates/fail.yaml:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(tt.values) })
			// Stalled, with the Ready message naming what is wrong: the
			// stall of this generation's render, waited for as such.
			compositionWith(t, ns, "app", testenv.Condition{Type: v1alpha1.ConditionStalled},
				testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Message: testenv.Says(tt.want)})
			consistently(t, "both ConfigMaps to stay", 2*time.Second, func() (bool, error) {
				if err := k.Get(context.Background(), client.ObjectKeyFromObject(keep), keep); err != nil {
					return false, err
				}
				err := k.Get(context.Background(), client.ObjectKeyFromObject(second), second)
				return err == nil, err
			})
		})
	}
	// Fixing the input recovers, and only now is "second" pruned.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"second":false}`) })
	gone(t, second)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// TestPruneSparesWhatStencilDoesNotManage: an object carrying the set's
// part-of label but written by another manager, and one annotated
// stencil.dev/prune: disabled, both survive a prune.
func TestPruneSparesWhatStencilDoesNotManage(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "foreign-"+ns, suite.TwoConfigMaps())
	comp := composition(ns, "app", b.Name, `{}`)
	mustCreate(t, comp)
	second := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}}
	exists(t, second)
	id := second.Labels[applyset.LabelPartOf]

	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foreign", Labels: map[string]string{applyset.LabelPartOf: id}}}
	if err := k.Create(ctx, foreign, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	// "keep" is renamed away (so it leaves the render) but opted out of pruning.
	keep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}}
	exists(t, keep)
	testenv.Update(t, k, keep, func() { keep.Annotations = map[string]string{applyset.AnnotationPrune: "disabled"} })

	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"second":false,"name":"renamed"}`) })
	gone(t, second)
	exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "renamed"}})
	for _, cm := range []*corev1.ConfigMap{foreign, keep} {
		if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Errorf("ConfigMap %s was deleted: %v", cm.Name, err)
		}
	}
}

// TestConfinement: objects in another namespace or of a cluster-scoped kind
// are refused (Stalled, nothing applied) unless the Bundle permits them,
// including one smuggled in through a value.
func TestConfinement(t *testing.T) {
	ns := testenv.Namespace(t, k)
	other := testenv.Namespace(t, k)
	clusterRole := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + ns + "-reader\nrules: []\n"
	tests := []struct {
		name   string
		files  map[string]string
		values string
		perms  v1alpha1.BundlePermissions
		want   string // the refusal, or "" when the render is allowed
	}{
		{"other namespace", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: " + other + "\n"},
			"", v1alpha1.BundlePermissions{}, `namespace "` + other + `" is not the Composition's`},
		{"cluster-scoped kind", map[string]string{"templates/cr.yaml": clusterRole}, "", v1alpha1.BundlePermissions{}, "ClusterRole.rbac.authorization.k8s.io is cluster-scoped"},
		{"smuggled through a value", map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  note: {{ .Values.note }}\n"},
			`{"note":"hi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwn-` + ns + `\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]"}`,
			v1alpha1.BundlePermissions{}, "ClusterRoleBinding"},
		{"permitted cluster-scoped kind", map[string]string{"templates/cr.yaml": clusterRole}, "",
			v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}}}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "c" + string(rune('a'+i))
			b := bundle(t, "confine-"+name+"-"+ns, tt.files, func(s *v1alpha1.BundleSpec) { s.Permissions = tt.perms })
			mustCreate(t, composition(ns, name, b.Name, tt.values))
			if tt.want == "" {
				condition(t, ns, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
				cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-reader"}}
				exists(t, cr)
				t.Cleanup(func() { _ = k.Delete(context.Background(), cr) })
				return
			}
			// The refusal, not the stall of a controller whose cache has
			// not yet seen the Bundle just made (BundleNotFound).
			compositionWith(t, ns, name, testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonRefused}},
				testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Message: testenv.Says(tt.want, "refused")})
			for _, obj := range []client.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}},
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pwn-" + ns}},
				&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-reader"}},
			} {
				if err := k.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
					t.Errorf("%T %s exists after a refusal (err %v): nothing may be applied", obj, obj.GetName(), err)
				}
			}
		})
	}
}

// TestImpersonation: with spec.serviceAccountName, applies are made as that
// ServiceAccount, so its RBAC bounds them; a permission it lacks is
// reported up front (Stalled, Forbidden) and nothing is applied.
func TestImpersonation(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})
	b := bundle(t, "impersonate-"+ns, suite.TwoConfigMaps())
	comp := composition(ns, "app", b.Name, `{}`)
	comp.Spec.ServiceAccountName = "tenant"
	mustCreate(t, comp)

	// Forbidden, naming the permission: not the stall of a controller
	// whose cache has not yet seen the Bundle just made (BundleNotFound).
	compositionWith(t, ns, "app", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonForbidden},
		Message: testenv.Says("ServiceAccount " + ns + "/tenant may not create configmaps")})
	if err := k.Get(ctx, key(ns, "keep"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap created without the ServiceAccount's permission (err %v)", err)
	}

	mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}})
	mustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}}})
	// The API server's authorizer grants the Role some time after it is
	// made: until then the check the controller makes (a
	// SubjectAccessReview) still denies it, and the pass stalls again for a
	// minute (ForbiddenRecheck).
	eventually(t, "the ServiceAccount's grant to apply", func() (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":tenant",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: ns},
		}}
		if err := k.Create(ctx, review); err != nil {
			return false, err
		}
		return review.Status.Allowed, fmt.Errorf("denied: %s", review.Status.Reason)
	})
	// RBAC changes raise no event: the next input change (or, at the
	// latest, a minute) brings the check again, and now it passes.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"kept"}`) })
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	cm := &corev1.ConfigMap{}
	if err := k.Get(ctx, key(ns, "kept"), cm); err != nil {
		t.Fatal(err)
	}
	var applier string
	for _, mf := range cm.ManagedFields {
		if mf.Manager == applyset.FieldManager {
			applier = string(mf.Operation)
		}
	}
	if applier != "Apply" {
		t.Errorf("ConfigMap managed fields %+v, want an Apply by %s", cm.ManagedFields, applyset.FieldManager)
	}
}

// TestPruneFalseKeepsOrphans: with spec.prune false, a member no longer
// rendered stays, and stays recorded in the set.
func TestPruneFalseKeepsOrphans(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "noprune-"+ns, suite.TwoConfigMaps())
	comp := composition(ns, "app", b.Name, `{}`)
	no := false
	comp.Spec.Prune = &no
	mustCreate(t, comp)
	second := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}}
	exists(t, second)
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"second":false}`) })
	got := condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if len(got.Status.Members) != 1 {
		t.Errorf("status lists %d members, want the 1 still rendered", len(got.Status.Members))
	}
	consistently(t, "the orphan to stay", 2*time.Second, func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(second), second)
		return err == nil && second.Labels[applyset.LabelPartOf] != "", err
	})
}

// TestSecretDataStaysSecret: a Secret the API server rejects fails the
// apply, and neither the status nor the events quote its data.
func TestSecretDataStaysSecret(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	const secret = "hunter2-not-base64!"
	b := bundle(t, "secret-"+ns, map[string]string{
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  password: " + secret + "\n",
	})
	mustCreate(t, composition(ns, "app", b.Name, ""))
	got := compositionWith(t, ns, "app", testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Message: testenv.Says("Secret/" + ns + "/s")})
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, "hunter2") {
			t.Errorf("condition %s quotes the Secret's data: %q", c.Type, c.Message)
		}
	}
	// Events are written apart from the status: wait for the failed
	// apply's own (its note names the Secret), not for the first event
	// of the namespace (a stall while the controller's cache had not yet
	// seen the Bundle, say).
	var events eventsv1.EventList
	eventually(t, "the event of the failed apply", func() (bool, error) {
		if err := k.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "Secret/"+ns+"/s")
		}), fmt.Errorf("%d events, none a Warning naming Secret/%s/s", len(events.Items), ns)
	})
	for _, e := range events.Items {
		if strings.Contains(e.Note, "hunter2") {
			t.Errorf("event %s quotes the Secret's data: %q", e.Reason, e.Note)
		}
	}
}

// TestResourcePolicyKeep: an object annotated helm.sh/resource-policy:
// keep is orphaned, not deleted, when it is no longer rendered and when
// the Composition is deleted; its neighbours are pruned and deleted.
func TestResourcePolicyKeep(t *testing.T) {
	ns := testenv.Namespace(t, k)
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	b := bundle(t, "keep-"+ns, map[string]string{
		"values.yaml": "first: true\n",
		"templates/cms.yaml": `{{- if .Values.first }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept-first
  annotations:
    helm.sh/resource-policy: keep
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain-first
{{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations:
    helm.sh/resource-policy: keep
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
`,
	})
	comp := composition(ns, "app", b.Name, "")
	mustCreate(t, comp)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"first":false}`)} })
	gone(t, configMap("plain-first"))
	keptFirst := configMap("kept-first")
	eventually(t, "kept-first orphaned", func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(keptFirst), keptFirst); err != nil {
			return false, err
		}
		_, member := keptFirst.Labels[applyset.LabelPartOf]
		return !member, nil
	})

	if err := k.Delete(context.Background(), comp); err != nil {
		t.Fatal(err)
	}
	gone(t, comp)
	gone(t, configMap("plain"))
	for _, name := range []string{"kept", "kept-first"} {
		cm := configMap(name)
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatalf("ConfigMap %s with resource-policy keep: %v", name, err)
		}
		if _, member := cm.Labels[applyset.LabelPartOf]; member {
			t.Errorf("ConfigMap %s still labelled as a member after its Composition was deleted", name)
		}
	}
}
