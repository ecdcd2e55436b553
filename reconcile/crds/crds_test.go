package crds_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// crdWrites are the controller's writes of the CustomResourceDefinition
// name since request number since: its creates (a POST names no object)
// and the writes that name it. The controller writes other CRDs
// meanwhile (the published kinds of other tests' Bundles, applied again
// on every pass of theirs, deleted with them), which are not this test's.
func crdWrites(c *testenv.Controller, since int, name string) []string {
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	var out []string
	for _, r := range c.Requests()[since:] {
		method, uri, _ := strings.Cut(r, " ")
		path, _, _ := strings.Cut(uri, "?")
		if method != "GET" && (path == crds && method == "POST" || path == crds+"/"+name) {
			out = append(out, r)
		}
	}
	return out
}

// TestChartCRDsFolder (issue 30 item 3): the CRDs of a chart's crds/
// folder are created before anything else, as the parent's
// ServiceAccount, and a custom resource of their kind the templates
// render is applied once they are Established; they are never members
// (no part-of label) and are left in place when the set is deleted.
// A second set of the chart finds the CRD and writes none. A chart that
// changes its CRD leaves the live one under Create and updates it under
// CreateReplace. A Bundle whose permissions do not allow CRDs is refused
// naming crds/; an account that may not create CRDs stalls Forbidden
// with nothing applied.
func TestChartCRDsFolder(t *testing.T) {
	ctx := context.Background()
	ns, ns2 := testenv.Namespace(t, env.Client), testenv.Namespace(t, env.Client)
	group := "c" + ns + ".example.com"
	name := "widgets." + group
	t.Cleanup(func() { _ = env.Delete(context.Background(), suite.CRDObject(name)) })
	allowCRDs := func(s *v1alpha1.BundleSpec) {
		s.Permissions.ClusterScoped = []v1alpha1.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}}
	}
	files := map[string]string{
		"Chart.yaml":           "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"crds/widget.yaml":     suite.WidgetCRD(group, ""),
		"templates/w.yaml":     "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n",
		"templates/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
	}

	t.Run("refused without the permission", func(t *testing.T) {
		b := env.Bundle(t, "crds-refused-"+ns, files)
		env.MustCreate(t, suite.Composition(ns, "refused", b.Name, ""))
		env.Stalled(t, ns, "refused", v1alpha1.ReasonRefused, "crds/", "apiextensions.k8s.io/CustomResourceDefinition")
		if err := env.Get(ctx, client.ObjectKeyFromObject(suite.CRDObject(name)), suite.CRDObject(name)); err == nil {
			t.Errorf("CRD %s was created for a refused Bundle", name)
		}
	})

	b := env.Bundle(t, "crds-"+ns, files, allowCRDs)
	since := len(env.Controller.Requests())
	env.MustCreate(t, suite.Composition(ns, "first", b.Name, ""))
	env.Condition(t, ns, "first", v1alpha1.ConditionReady, metav1.ConditionTrue)
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(group + "/v1")
	w.SetKind("Widget")
	w.SetNamespace(ns)
	w.SetName("w")
	env.Exists(t, w)
	live := suite.CRDObject(name)
	if err := env.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	if id := live.GetLabels()[applyset.LabelPartOf]; id != "" {
		t.Errorf("the crds/ CRD is labelled a member of %s", id)
	}
	if w := crdWrites(env.Controller, since, name); len(w) != 1 || !strings.HasPrefix(w[0], "POST ") {
		t.Errorf("CRD writes %v, want one create", w)
	}

	t.Run("a second set writes no CRD", func(t *testing.T) {
		since := len(env.Controller.Requests())
		env.MustCreate(t, suite.Composition(ns2, "second", b.Name, ""))
		env.Condition(t, ns2, "second", v1alpha1.ConditionReady, metav1.ConditionTrue)
		if w := crdWrites(env.Controller, since, name); len(w) != 0 {
			t.Errorf("CRD writes %v, want none: the CRD exists", w)
		}
	})

	t.Run("Create leaves a changed CRD, CreateReplace updates it", func(t *testing.T) {
		changed := suite.WidgetCRD(group, "{name: Size, type: integer, jsonPath: .spec.size}")
		edit := func(policy v1alpha1.CRDPolicy) {
			testenv.Update(t, env.Client, b, func() {
				b.Spec.Files["crds/widget.yaml"] = changed
				b.Spec.CRDs = policy
			})
		}
		// onRevision waits until both sets' passes rendered the Bundle's
		// current revision: each installs the chart's CRDs, and a pass that
		// read the CRD before another's write lands writes it too.
		onRevision := func() {
			rev := bundleRevision(t, b.Name)
			for _, p := range []client.ObjectKey{suite.Key(ns, "first"), suite.Key(ns2, "second")} {
				testenv.Eventually(t, 0, p.Name+" to render the new revision", func() (bool, error) {
					c := &v1alpha1.Composition{}
					err := env.Get(ctx, p, c)
					return err == nil && c.Status.BundleRevision == rev, err
				})
			}
		}
		columns := func() int {
			u := suite.CRDObject(name)
			if err := env.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				t.Fatal(err)
			}
			versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
			cols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
			return len(cols)
		}
		edit(v1alpha1.CRDsCreate)
		onRevision()
		if n := columns(); n != 0 {
			t.Errorf("under Create the live CRD has %d printer columns, want it left as created (0)", n)
		}
		edit(v1alpha1.CRDsCreateReplace)
		testenv.Eventually(t, 0, "the CRD to be updated", func() (bool, error) { return columns() == 1, nil })
		onRevision()
		env.Condition(t, ns, "first", v1alpha1.ConditionReady, metav1.ConditionTrue)
		env.Controller.Settle(t, ns)
		// A pass of the set with the CRD as the chart has it: a change of
		// its labels renders it again (the generation stays: wait for the
		// render, then for the pass to end).
		since, renders := len(env.Controller.Requests()), env.Controller.Renders(ns, "first")
		env.UpdateComposition(t, suite.Composition(ns, "first", "", ""), func(c *v1alpha1.Composition) { c.Labels = map[string]string{"touch": "1"} })
		testenv.Eventually(t, 0, "a pass of first after its labels changed", func() (bool, error) {
			return env.Controller.Renders(ns, "first") > renders, nil
		})
		env.Condition(t, ns, "first", v1alpha1.ConditionReady, metav1.ConditionTrue)
		env.Controller.Settle(t, ns)
		if w := crdWrites(env.Controller, since, name); len(w) != 0 {
			t.Errorf("CRD writes %v on a pass with the CRD as the chart has it, want none", w)
		}
	})

	t.Run("deleting the sets leaves the CRD", func(t *testing.T) {
		for _, c := range []*v1alpha1.Composition{suite.Composition(ns, "first", "", ""), suite.Composition(ns2, "second", "", "")} {
			if err := env.Delete(ctx, c); err != nil {
				t.Fatal(err)
			}
			env.Gone(t, c)
		}
		env.Gone(t, w)
		testenv.Consistently(t, time.Second, "the CRD to stay", func() (bool, error) {
			return env.Get(ctx, client.ObjectKeyFromObject(live), suite.CRDObject(name)) == nil, nil
		})
	})

	t.Run("an account that may not create CRDs", func(t *testing.T) {
		const shardName = "crds"
		env.StartWith(t, testenv.ControllerOptions{Shard: shardName})
		tenant := testenv.Namespace(t, env.Client)
		env.TenantAccount(t, tenant)
		other := "d" + tenant + ".example.com"
		t.Cleanup(func() { _ = env.Delete(context.Background(), suite.CRDObject("widgets."+other)) })
		tb := env.Bundle(t, "crds-tenant-"+tenant, map[string]string{
			"crds/widget.yaml":     suite.WidgetCRD(other, ""),
			"templates/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
		}, allowCRDs)
		c := suite.Composition(tenant, "app", tb.Name, "")
		c.Labels = map[string]string{shard.Label: shardName}
		env.MustCreate(t, c)
		env.Stalled(t, tenant, "app", v1alpha1.ReasonForbidden, "ServiceAccount "+tenant+"/stencil may not create customresourcedefinitions")
		if err := env.Get(ctx, suite.Key(tenant, "plain"), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}); err == nil {
			t.Errorf("ConfigMap plain was applied although the CRD could not be created")
		}
	})
}

// bundleRevision is the revision Bundle name reports in its status.
func bundleRevision(t *testing.T, name string) string {
	t.Helper()
	b := &v1alpha1.Bundle{}
	testenv.Eventually(t, 0, "Bundle "+name+" to report its revision", func() (bool, error) {
		if err := env.Get(context.Background(), client.ObjectKey{Name: name}, b); err != nil {
			return false, err
		}
		return b.Status.Revision != "" && b.Status.ObservedGeneration == b.Generation, nil
	})
	return b.Status.Revision
}
