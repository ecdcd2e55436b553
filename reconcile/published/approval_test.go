package published_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/crds"
	"github.com/stencil-dev/stencil/templates"
)

// optInCRD is what a cluster admin creates to let Bundle bundle publish
// kind Gadget in group, one of Kubernetes' own: a CRD approved as the API
// server requires there, labelled for the Bundle, serving nothing until
// the Bundle's own schema replaces its spec (as examples/bundles/foo's
// README shows for sample-controller's Foo).
func optInCRD(t *testing.T, group, bundle string) *unstructured.Unstructured {
	t.Helper()
	return suite.MustYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.`+group+`
  annotations:
    api-approved.kubernetes.io: "unapproved, served by stencil Bundle `+bundle+`"
  labels:
    stencil.dev/bundle: `+bundle+`
spec:
  group: `+group+`
  names: {kind: Gadget, plural: gadgets, shortNames: [adm]}
  scope: Namespaced
  versions:
  - name: v1
    served: false
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
}

// TestKubernetesGroupsNeedTheAdmin (issue 29 item 7): a kind in a group
// of Kubernetes' own (here <ns>.k8s.io) is refused by default, as before:
// the Bundle says how a cluster admin opts in, and no CRD is made. A
// Bundle author cannot opt in alone: not by annotating the Bundle, nor by
// rendering the approved, labelled CRD from a template (a KindConflict
// naming the label, though a render may make CRDs in such groups: issue
// 40), nor with an approval stencil itself wrote, as a member or as a
// chart's crds/ CRD. Once the admin made the CRD, approved
// and labelled, the kind is served; the Bundle's schema takes the CRD's
// whole spec over (a short name only the admin's CRD had goes, the
// version it created unserved is served), and the admin's annotation and
// label stay. On the code before, a Bundle in such a group could not be
// written at all.
func TestKubernetesGroupsNeedTheAdmin(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	group := ns + ".k8s.io"
	name := "gadgets." + group
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	t.Cleanup(func() { _ = env.Delete(context.Background(), crd) })
	env.GrantKind(t, group, "gadgets")
	b := env.Bundle(t, "k8s-"+ns, suite.GadgetFiles(""), suite.Publishing(group))

	t.Run("refused without the admin", func(t *testing.T) {
		// The Bundle's own word is not the admin's.
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"api-approved.kubernetes.io":"https://github.com/kubernetes/enhancements/pull/1111"}}}`))
		if err := env.Patch(ctx, b, patch); err != nil {
			t.Fatal(err)
		}
		c := env.BundleReady(t, b.Name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
		for _, want := range []string{"Kubernetes' own", name, publish.AnnotationAPIApproved, publish.LabelBundle + ": " + b.Name} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("KindConflict message %q does not say %q", c.Message, want)
			}
		}
		env.StillAbsent(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})

	t.Run("a template cannot make the admin's CRD", func(t *testing.T) {
		rendered := strings.Replace(suite.CRDYAML(group, "Gadget", "gadgets", "Namespaced"), "  annotations:\n",
			"  labels:\n    stencil.dev/bundle: k8s-"+ns+"\n  annotations:\n", 1)
		b := env.Bundle(t, "k8s-render-"+ns, map[string]string{"templates/crd.yaml": rendered}, suite.OnlyCRDs)
		env.MustCreate(t, suite.Composition(ns, "render", b.Name, ""))
		msg := env.Stalled(t, ns, "render", v1alpha1.ReasonKindConflict).Message
		if !strings.Contains(msg, "CustomResourceDefinition/"+name) || !strings.Contains(msg, "Kubernetes' own") || !strings.Contains(msg, "labelled stencil.dev/bundle: k8s-"+ns) {
			t.Errorf("KindConflict message %q does not name the CRD and why", msg)
		}
		env.StillAbsent(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
		env.BundleReady(t, "k8s-"+ns, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
	})

	t.Run("an approval stencil wrote is not the admin's", func(t *testing.T) {
		// As stencil wrote them before issue 20 (made by stencil's own
		// field manager, approval included), and as a chart's crds/ CRD
		// is made (crds.FieldManager).
		for _, manager := range []string{applyset.FieldManager, crds.FieldManager} {
			mine := optInCRD(t, group, "k8s-"+ns)
			if err := env.Apply(ctx, client.ApplyConfigurationFromUnstructured(mine), client.FieldOwner(manager)); err != nil {
				t.Fatal(err)
			}
			bundleSays(t, "k8s-"+ns, v1alpha1.ReasonKindConflict, "annotation from stencil, not from a cluster admin")
			if err := env.Delete(ctx, crd); err != nil {
				t.Fatal(err)
			}
			env.Gone(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
			// Refused again for want of a CRD, before the next is made.
			bundleSays(t, "k8s-"+ns, v1alpha1.ReasonKindConflict, "stencil makes no CustomResourceDefinition there")
		}
	})

	t.Run("served once the admin opted in", func(t *testing.T) {
		if err := env.Create(ctx, optInCRD(t, group, "k8s-"+ns), client.FieldOwner("kubectl-create")); err != nil {
			t.Fatal(err)
		}
		env.BundleReady(t, "k8s-"+ns, metav1.ConditionTrue, v1alpha1.ReasonReady)
		testenv.Eventually(t, 0, "the Bundle's spec on the admin's CRD", func() (bool, error) {
			err := env.Get(ctx, client.ObjectKey{Name: name}, crd)
			v := crd.Spec.Versions
			return err == nil && len(v) == 1 && v[0].Served && len(crd.Spec.Names.ShortNames) == 0, err
		})
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		if root.XPreserveUnknownFields != nil || root.Properties["spec"].Properties["size"].Type != "integer" {
			t.Errorf("the CRD's schema is not the Bundle's alone: preserve unknown fields %v, spec %+v", root.XPreserveUnknownFields, root.Properties["spec"])
		}
		if !strings.HasPrefix(crd.Annotations[publish.AnnotationAPIApproved], "unapproved, served by") || crd.Labels[publish.LabelBundle] != "k8s-"+ns {
			t.Errorf("the admin's opt-in was not kept: annotations %v, labels %v", crd.Annotations, crd.Labels)
		}
		// The Bundle claimed the admin's CRD as it was: its binding and
		// parameters were written moments ago, with no margin before
		// the kind is served.
		env.GadgetChecked(t, group, ns)
		env.MustCreate(t, suite.Gadget(group, ns, "g", `{"size":2}`))
		env.InstanceReady(t, group, ns, "g", metav1.ConditionTrue)
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		if err := env.Get(ctx, suite.Key(ns, "g-conf"), cm); err != nil {
			t.Fatalf("the instance's ConfigMap: %v", err)
		}
		if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["size"] != "2" {
			t.Errorf("the instance's ConfigMap: %v", data)
		}
	})
}

// sampleControllersFoo is sample-controller's artifacts/examples/
// example-foo.yaml, unchanged: its group is samplecontroller.k8s.io.
const sampleControllersFoo = `apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata:
  name: example-foo
spec:
  deploymentName: example-foo
  replicas: 1
`

// TestSampleControllersOwnFoo (issue 29 item 7): examples/bundles/foo
// with its api.group set to sample-controller's own
// samplecontroller.k8s.io, and the CRD a cluster admin makes to opt the
// group in (as the bundle's README shows), serves sample-controller's
// example-foo.yaml unchanged: its Deployment is made, and its status
// gets the Deployment's available replicas.
func TestSampleControllersOwnFoo(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	const group, name = "samplecontroller.k8s.io", "foos.samplecontroller.k8s.io"
	dir := filepath.Join(testenv.Root(), "examples", "bundles", "foo")
	loaded, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "foo"})
	if err != nil {
		t.Fatal(err)
	}
	spec := loaded.Spec()
	spec.API.Group = group
	b := env.Bundle(t, "foo-"+ns, spec.Files, func(s *v1alpha1.BundleSpec) { *s = spec })
	env.GrantKind(t, group, "foos")

	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	admins := fencedAfter(t, string(readme), "kind: CustomResourceDefinition")
	admins = strings.ReplaceAll(admins, "stencil.dev/bundle: foo", "stencil.dev/bundle: "+b.Name)
	crd := suite.MustYAML(t, admins)
	if crd.GetName() != name {
		t.Fatalf("the README's CRD is %s, want %s", crd.GetName(), name)
	}
	if err := env.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Delete(context.Background(), crd) })
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)

	foo := suite.MustYAML(t, sampleControllersFoo)
	foo.SetNamespace(ns)
	// The Bundle took the admin's CRD over as it was: the kind is served,
	// its binding and parameters written, moments ago.
	testenv.WaitKindChecked(t, env.Client, foo, 0)
	env.MustCreate(t, foo)
	testenv.Eventually(t, 0, "the Foo's Deployment, its pods available", func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := env.Get(ctx, suite.Key(ns, "example-foo"), d); err != nil {
			return false, err
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == 1, env.MarkWorkloadsReady(ctx, ns)
	})
	testenv.Eventually(t, 0, "the Foo's status.availableReplicas", func() (bool, error) {
		u := foo.DeepCopy()
		if err := env.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		n, ok, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
		return ok && n == 1, nil
	})
}

// bundleSays waits until the Bundle's Ready is False at its generation
// with reason and a message that says want.
func bundleSays(t *testing.T, name, reason, want string) {
	t.Helper()
	testenv.WaitFor(t, env.Client, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}, 0, testenv.Condition{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reasons: []string{reason},
		Message: func(m string) bool { return strings.Contains(m, want) },
	})
}

// fencedAfter returns the fenced block of markdown that holds line.
func fencedAfter(t *testing.T, markdown, line string) string {
	t.Helper()
	blocks := strings.Split(markdown, "```")
	i := slices.IndexFunc(blocks, func(b string) bool { return strings.Contains(b, line) })
	if i < 0 || i%2 == 0 {
		t.Fatalf("no fenced block holds %q", line)
	}
	_, body, _ := strings.Cut(blocks[i], "\n") // after the info string
	return body
}
