package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompositionCRDIsApplySetParentType(t *testing.T) {
	c := newClient(t)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(context.Background(), client.ObjectKey{Name: "compositions.stencil.dev"}, &crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Labels["applyset.kubernetes.io/is-parent-type"]; got != "true" {
		t.Errorf("label applyset.kubernetes.io/is-parent-type = %q, want \"true\"", got)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("Composition scope = %s, want Namespaced", crd.Spec.Scope)
	}
	var bundle apiextensionsv1.CustomResourceDefinition
	if err := c.Get(context.Background(), client.ObjectKey{Name: "bundles.stencil.dev"}, &bundle); err != nil {
		t.Fatal(err)
	}
	if bundle.Spec.Scope != apiextensionsv1.ClusterScoped {
		t.Errorf("Bundle scope = %s, want Cluster", bundle.Spec.Scope)
	}
}

func TestCompositionDefaults(t *testing.T) {
	c := newClient(t)
	ns := testenv.Namespace(t, c)
	comp := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.CompositionSpec{
			Bundle: "appservice",
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2,"image":"nginx","extra":{"nested":[1,"two"]}}`)},
		},
	}
	if err := c.Create(context.Background(), comp); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.Composition
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(comp), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Prune == nil || !*got.Spec.Prune {
		t.Errorf("spec.prune = %v, want defaulted to true", got.Spec.Prune)
	}
	if got.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete {
		t.Errorf("spec.deletionPolicy = %q, want defaulted to Delete", got.Spec.DeletionPolicy)
	}
	// Unknown fields inside values survive: they are the bundle's business.
	if diff := cmp.Diff(`{"extra":{"nested":[1,"two"]},"image":"nginx","replicas":2}`, string(got.Spec.Values.Raw)); diff != "" {
		t.Errorf("spec.values (-want +got):\n%s", diff)
	}
}

func TestBundleRoundTrip(t *testing.T) {
	c := newClient(t)
	b := &v1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: "roundtrip-" + strings.ToLower(t.Name()[:4])},
		Spec: v1alpha1.BundleSpec{
			Files: map[string]string{
				"values.yaml":               "replicas: 1\n",
				"templates/deployment.yaml": "kind: Deployment\n",
			},
			Schema: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"replicas":{"type":"integer","minimum":1,"default":1}}}`)},
			Permissions: v1alpha1.BundlePermissions{
				ClusterScoped: []v1alpha1.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}},
				Namespaces:    []string{"monitoring"},
			},
		},
	}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), b) })
	var got v1alpha1.Bundle
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b.Spec, got.Spec); diff != "" {
		t.Errorf("spec after round trip (-want +got):\n%s", diff)
	}
}

// TestBundleAPIAsWritten: spec.api keeps an empty version and plural (the
// controller defaults them, so a packed Bundle round-trips as written);
// only the CRD's deletion policy is defaulted, to Orphan.
func TestBundleAPIAsWritten(t *testing.T) {
	c := newClient(t)
	b := &v1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: "api-as-written"},
		Spec: v1alpha1.BundleSpec{
			Files: map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"},
			API:   &v1alpha1.BundleAPI{Group: "samplecontroller.example.com", Kind: "Foo", ShortNames: []string{"fo"}},
		},
	}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), b) })
	var got v1alpha1.Bundle
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), &got); err != nil {
		t.Fatal(err)
	}
	want := b.Spec.API.DeepCopy()
	want.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	if diff := cmp.Diff(want, got.Spec.API); diff != "" {
		t.Errorf("spec.api after round trip (-want +got):\n%s", diff)
	}
}

// TestSchemaRejectsInvalid sends objects the Go types cannot express, as
// unstructured, so the API server's own schema validation is what is tested.
func TestSchemaRejectsInvalid(t *testing.T) {
	c := newClient(t)
	ns := testenv.Namespace(t, c)
	composition := func(spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stencil.dev/v1alpha1", "kind": "Composition",
			"metadata": map[string]any{"generateName": "bad-", "namespace": ns},
			"spec":     spec,
		}}
		return u
	}
	bundle := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stencil.dev/v1alpha1", "kind": "Bundle",
			"metadata": map[string]any{"generateName": "bad-"},
			"spec":     spec,
		}}
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string // a piece of the API server's message: the field path
	}{
		// Composition
		{"missing bundle", composition(map[string]any{"values": map[string]any{}}), "spec.bundle: Required value"},
		{"empty bundle", composition(map[string]any{"bundle": ""}), "spec.bundle: Invalid value"},
		{"missing spec", composition(nil), "spec: Required value"},
		{"unknown deletionPolicy", composition(map[string]any{"bundle": "b", "deletionPolicy": "Keep"}), `spec.deletionPolicy: Unsupported value: "Keep"`},
		{"values not an object", composition(map[string]any{"bundle": "b", "values": "replicas=2"}), "spec.values: Invalid value"},
		{"values a list", composition(map[string]any{"bundle": "b", "values": []any{1}}), "spec.values: Invalid value"},
		{"prune not a bool", composition(map[string]any{"bundle": "b", "prune": "yes"}), "spec.prune: Invalid value"},
		{"bundle not a string", composition(map[string]any{"bundle": 7}), "spec.bundle: Invalid value"},
		// A ServiceAccount name is a DNS subdomain: "a:b" would make the
		// user system:serviceaccount:<ns>:a:b, which is no ServiceAccount's.
		{"serviceAccountName with a colon", composition(map[string]any{"bundle": "b", "serviceAccountName": "a:b"}), "spec.serviceAccountName: Invalid value"},
		// Bundle
		{"bundle without files", bundle(map[string]any{}), "exactly one of files (non-empty) and source must be set"},
		{"bundle with no file", bundle(map[string]any{"files": map[string]any{}}), "exactly one of files (non-empty) and source must be set"},
		// Bundle spec.source (issue 22 item 3)
		{"bundle with files and source", bundle(map[string]any{"files": map[string]any{"a": "b"}, "source": map[string]any{"oci": "oci://r.example.com/c:1"}}), "exactly one of files (non-empty) and source must be set"},
		{"source with oci and chartRepository", bundle(map[string]any{"source": map[string]any{"oci": "oci://r.example.com/c:1", "chartRepository": map[string]any{"url": "https://c.example.com", "chart": "c"}}}), "exactly one of oci and chartRepository must be set"},
		{"source with neither", bundle(map[string]any{"source": map[string]any{}}), "exactly one of oci and chartRepository must be set"},
		{"oci without the scheme", bundle(map[string]any{"source": map[string]any{"oci": "r.example.com/c:1"}}), "spec.source.oci: Invalid value"},
		{"chart repository over http", bundle(map[string]any{"source": map[string]any{"chartRepository": map[string]any{"url": "http://c.example.com", "chart": "c"}}}), "a chart repository is reached over https"},
		{"chart repository without chart", bundle(map[string]any{"source": map[string]any{"chartRepository": map[string]any{"url": "https://c.example.com"}}}), "spec.source.chartRepository.chart: Required value"},
		{"verify provider", bundle(map[string]any{"source": map[string]any{"oci": "oci://r.example.com/c:1", "verify": map[string]any{"provider": "gpg", "secretRef": map[string]any{"name": "k"}}}}), `spec.source.verify.provider: Unsupported value: "gpg"`},
		{"file content not a string", bundle(map[string]any{"files": map[string]any{"values.yaml": 3}}), "spec.files.values.yaml: Invalid value"},
		{"schema not an object", bundle(map[string]any{"files": map[string]any{"a": "b"}, "schema": "object"}), "spec.schema: Invalid value"},
		{"permission without kind", bundle(map[string]any{"files": map[string]any{"a": "b"}, "permissions": map[string]any{"clusterScoped": []any{map[string]any{"group": "rbac.authorization.k8s.io"}}}}), "spec.permissions.clusterScoped[0].kind: Required value"},
		// Bundle spec.rollout and spec.revisions (issue 37 items 3 and 5)
		{"canary by the parents' labels, untrusted", bundle(map[string]any{"files": map[string]any{"a": "b"}, "rollout": map[string]any{"strategy": "Waves",
			"canary": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"tier": "internal"}}}}}), "set trustParentLabels to use it"},
		{"failure threshold of none", bundle(map[string]any{"files": map[string]any{"a": "b"}, "rollout": map[string]any{"failureThreshold": 0}}), "spec.rollout.failureThreshold: Invalid value"},
		{"holding", bundle(map[string]any{"files": map[string]any{"a": "b"}, "revisions": map[string]any{"holding": "Always"}}), `spec.revisions.holding: Unsupported value: "Always"`},
		// Bundle spec.api
		{"api without kind", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "app.example.com"}}), "spec.api.kind: Required value"},
		{"api group without a dot", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "example", "kind": "Foo"}}), "spec.api.group: Invalid value"},
		{"api group of stencil", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "apps.stencil.dev", "kind": "Foo"}}), "stencil.dev and its subdomains are stencil's own"},
		{"api kind lower case", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "app.example.com", "kind": "foo"}}), "spec.api.kind: Invalid value"},
		{"api version", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "app.example.com", "kind": "Foo", "version": "1.0"}}), "spec.api.version: Invalid value"},
		{"api deletionPolicy", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "app.example.com", "kind": "Foo", "deletionPolicy": "Keep"}}), `spec.api.deletionPolicy: Unsupported value: "Keep"`},
		{"api short name", bundle(map[string]any{"files": map[string]any{"a": "b"}, "api": map[string]any{"group": "app.example.com", "kind": "Foo", "shortNames": []any{"F"}}}), "spec.api.shortNames[0]: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Create(context.Background(), tt.obj)
			if err == nil {
				t.Cleanup(func() { _ = c.Delete(context.Background(), tt.obj) })
				t.Fatalf("created %s; want rejected with %q", tt.obj.GetName(), tt.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v; want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}
