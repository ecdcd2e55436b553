package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// TestRenderInput: the render input keeps what the Composition asks for
// and drops what tools write on it; the UID and .Release.IsUpgrade come
// from the live Composition alone (IsUpgrade from the controller's record
// of its members, status.inventory), with one rule.
func TestRenderInput(t *testing.T) {
	file := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "shop", UID: "uid-from-the-file",
			Labels: map[string]string{"tier": "web", applyset.LabelApplySetID: "applyset-x-v1"},
			Annotations: map[string]string{
				"owner":                       "ops",
				applyset.AnnotationTooling:    "stencil/v1",
				applyset.AnnotationGroupKinds: "ConfigMap",
				applyset.AnnotationNamespaces: "other",
				"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{"values":{"password":"x"}}}`,
			},
		},
		Spec:   v1alpha1.CompositionSpec{Bundle: "b"},
		Status: v1alpha1.CompositionStatus{BundleRevision: "sha256:1"},
	}
	caps := cluster.OfflineCapabilities()
	wantMeta := templates.CompositionInfo{APIVersion: "stencil.dev/v1alpha1", Kind: "Composition", Name: "shop", Namespace: "team-a",
		Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"owner": "ops"}}

	// No live Composition (offline, or not created yet): no UID and an
	// install, whatever uid and status the file carries.
	in := plan.RenderInput(file, nil, caps)
	if diff := cmp.Diff(wantMeta, in.Composition); diff != "" {
		t.Errorf("offline .Composition (-want +got):\n%s", diff)
	}
	if in.IsUpgrade || in.Capabilities != caps {
		t.Errorf("offline: IsUpgrade %t, capabilities %p; want an install with the given capabilities", in.IsUpgrade, in.Capabilities)
	}
	if !strings.Contains(string(file.UID), "file") || file.Labels[applyset.LabelApplySetID] == "" {
		t.Errorf("RenderInput changed the Composition it was given")
	}

	// Live: the Composition exists, its ApplySet records no member yet.
	fresh := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{UID: "uid-live", Annotations: map[string]string{applyset.AnnotationGroupKinds: ""}}}
	in = plan.RenderInput(file, plan.Live(fresh), caps)
	wantLive := wantMeta
	wantLive.UID = "uid-live"
	if diff := cmp.Diff(wantLive, in.Composition); diff != "" || in.IsUpgrade {
		t.Errorf("live, nothing applied: IsUpgrade %t, .Composition (-want +got):\n%s", in.IsUpgrade, diff)
	}
	// Live, with members the controller recorded: an upgrade, whatever
	// the annotations say (anyone who may update the Composition may
	// edit them unchecked: issue 37).
	applied := fresh.DeepCopy()
	applied.Status.Inventory = &v1alpha1.InventoryStatus{GroupKinds: []string{"ConfigMap", "Deployment.apps"}}
	if in = plan.RenderInput(file, plan.Live(applied), caps); !in.IsUpgrade || in.Composition.UID != "uid-live" {
		t.Errorf("live with members: IsUpgrade %t, UID %q; want an upgrade of uid-live", in.IsUpgrade, in.Composition.UID)
	}
	claimed := fresh.DeepCopy()
	claimed.Annotations[applyset.AnnotationGroupKinds] = "ConfigMap,Deployment.apps"
	claimed.Status.Inventory = &v1alpha1.InventoryStatus{}
	if in = plan.RenderInput(file, plan.Live(claimed), caps); in.IsUpgrade {
		t.Error("annotations naming members the record does not made an upgrade")
	}
	// No labels or annotations at all, or only stencil's: empty maps.
	bare := plan.RenderInput(&v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{applyset.LabelApplySetID: "x"}}}, nil, caps)
	if bare.Composition.Labels == nil || len(bare.Composition.Labels) != 0 || bare.Composition.Annotations == nil {
		t.Errorf("bare Composition: labels %#v, annotations %#v; want empty maps", bare.Composition.Labels, bare.Composition.Annotations)
	}
	// Only the live record counts: the status of the file does not.
	if in = plan.RenderInput(file, plan.Live(&v1alpha1.Composition{Status: file.Status}), caps); in.IsUpgrade {
		t.Error("a status bundleRevision made an upgrade; only the live ApplySet's members may")
	}
}

// TestPlanOffline: a plan made without a cluster places an APIService and
// other cluster-scoped built-in kinds, and refuses an object rendered
// twice once namespaces are placed.
func TestPlanOffline(t *testing.T) {
	files := map[string]string{
		"templates/apiservice.yaml": "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1beta1.metrics.k8s.io\n  namespace: ignored\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n",
		"templates/priority.yaml":   "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n",
		"templates/vap.yaml":        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: p\nspec:\n  validations: [{expression: 'true'}]\n",
		"templates/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	}
	perms := v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{
		{Group: "apiregistration.k8s.io", Kind: "APIService"}, {Group: "scheduling.k8s.io", Kind: "PriorityClass"},
		{Group: "admissionregistration.k8s.io", Kind: "*"},
	}}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.BundleSpec{Files: files, Permissions: perms}})
	if err != nil {
		t.Fatal(err)
	}
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Spec: v1alpha1.CompositionSpec{Bundle: "b"}}
	in := plan.RenderInput(comp, nil, cluster.OfflineCapabilities())
	p, err := plan.NewPlan(context.Background(), testenv.InProcess{}, b, in, cluster.OfflineAPIs())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range p.Objects {
		got[o.GetKind()] = o.GetNamespace()
	}
	want := map[string]string{"APIService": "", "PriorityClass": "", "ValidatingAdmissionPolicy": "", "ConfigMap": "default"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kind → namespace (-want +got):\n%s", diff)
	}

	// ConfigMap x with and without the Composition's namespace is one object.
	files["templates/cm2.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n"
	b, err = templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.BundleSpec{Files: files, Permissions: perms}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = plan.NewPlan(context.Background(), testenv.InProcess{}, b, in, cluster.OfflineAPIs())
	var renderErr *templates.RenderError
	if !errors.As(err, &renderErr) || !strings.Contains(err.Error(), "ConfigMap") || !strings.Contains(err.Error(), "rendered twice") {
		t.Errorf("ConfigMap x with and without namespace default: err %v, want a RenderError saying it is rendered twice", err)
	}
}

// TestPlanOfflineKindScope: offline, a kind's scope is the built-in
// list's (issue 20 item 4): a rendered CRD is believed for a new kind
// only, also in a group of Kubernetes' own that only CRDs serve (issue
// 40); a CRD that would shadow a built-in kind, sits in a built-in group
// or stencil's, or carries a Bundle's opt-in label in a group of
// Kubernetes' own is a KindConflict, and a kind the CRD declares
// cluster-scoped rendered in two namespaces is one object rendered twice.
func TestPlanOfflineKindScope(t *testing.T) {
	crd := func(group, kind, plural, scope string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + plural + "." + group +
			"\nspec:\n  group: " + group + "\n  names: {kind: " + kind + ", plural: " + plural + "}\n  scope: " + scope +
			"\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n"
	}
	perms := v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, {Group: "example.com", Kind: "Widget"},
	}, Namespaces: []string{"*"}}
	tests := []struct {
		name     string
		files    map[string]string
		conflict string // the kind a KindConflict names; "" for none
		err      string // what another error says
		want     map[string]string
	}{
		{name: "a new namespaced kind", files: map[string]string{
			"templates/crd.yaml": crd("example.com", "Gadget", "gadgets", "Namespaced"),
			"templates/g.yaml":   "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n",
		}, want: map[string]string{"CustomResourceDefinition": "", "Gadget": "default"}},
		{name: "a new cluster-scoped kind", files: map[string]string{
			"templates/crd.yaml": crd("example.com", "Widget", "widgets", "Cluster"),
			"templates/w.yaml":   "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: ignored\n",
		}, want: map[string]string{"CustomResourceDefinition": "", "Widget": ""}},
		{name: "a decoy of a built-in cluster-scoped kind", files: map[string]string{
			"templates/crd.yaml": crd("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", "Namespaced"),
			"templates/crb.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: x\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n",
		}, conflict: "ClusterRoleBinding.rbac.authorization.k8s.io"},
		{name: "a built-in kind outside k8s.io", files: map[string]string{
			"templates/crd.yaml": crd("apps", "Deployment", "deployments", "Cluster"),
		}, conflict: "Deployment.apps"},
		{name: "a new kind in a group of Kubernetes' own", files: map[string]string{
			"templates/crd.yaml": crd("externaldns.k8s.io", "DNSEndpoint", "dnsendpoints", "Namespaced"),
			"templates/e.yaml":   "apiVersion: externaldns.k8s.io/v1\nkind: DNSEndpoint\nmetadata:\n  name: e\n",
		}, want: map[string]string{"CustomResourceDefinition": "", "DNSEndpoint": "default"}},
		{name: "a Bundle's opt-in label in a group of Kubernetes' own", files: map[string]string{
			"templates/crd.yaml": strings.Replace(crd("sample.k8s.io", "Foo", "foos", "Namespaced"), "metadata:\n", "metadata:\n  labels: {stencil.dev/bundle: b}\n", 1),
		}, conflict: "labelled stencil.dev/bundle: b"},
		{name: "a new kind in a built-in group", files: map[string]string{
			"templates/crd.yaml": crd("apps", "Gizmo", "gizmos", "Namespaced"),
		}, conflict: "Gizmo.apps"},
		{name: "a new kind in a built-in group of Kubernetes' own", files: map[string]string{
			"templates/crd.yaml": crd("networking.k8s.io", "Gizmo", "gizmos", "Namespaced"),
		}, conflict: "group networking.k8s.io is served by the API server itself"},
		{name: "a new kind in stencil's group", files: map[string]string{
			"templates/crd.yaml": crd("stencil.dev", "Gizmo", "gizmos", "Namespaced"),
		}, conflict: "group stencil.dev is stencil's own"},
		{name: "a cluster-scoped kind in two namespaces", files: map[string]string{
			"templates/crd.yaml": crd("example.com", "Widget", "widgets", "Cluster"),
			"templates/a.yaml":   "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: a\n",
			"templates/b.yaml":   "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: b\n",
		}, err: `rendered twice (in namespaces "a" and "b" of a cluster-scoped kind)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.BundleSpec{Files: tt.files, Permissions: perms}})
			if err != nil {
				t.Fatal(err)
			}
			comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Spec: v1alpha1.CompositionSpec{Bundle: "b"}}
			p, err := plan.NewPlan(context.Background(), testenv.InProcess{}, b, plan.RenderInput(comp, nil, cluster.OfflineCapabilities()), cluster.OfflineAPIs())
			var refused *plan.RefusedError
			switch {
			case tt.conflict != "":
				if !errors.As(err, &refused) || refused.ConditionReason() != v1alpha1.ReasonKindConflict || !strings.Contains(err.Error(), tt.conflict) || !strings.Contains(err.Error(), "CustomResourceDefinition/") {
					t.Errorf("err %v, want a KindConflict naming the CRD and %s", err, tt.conflict)
				}
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err %v, want one saying %s", err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				got := map[string]string{}
				for _, o := range p.Objects {
					got[o.GetKind()] = o.GetNamespace()
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("kind → namespace (-want +got):\n%s", diff)
				}
			}
		})
	}
}
