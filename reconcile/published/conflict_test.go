package published_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
)

// unserved checks, for a while, that the Gadget instance name of group
// gets no members and no status: no controller serves its kind. The kind's
// CRD is not the Bundle's, so stencil's admission policy does not bind it:
// the create waits only for the API server to serve it (its discovery lists
// a CRD some time after it is Established).
func unserved(t *testing.T, group, ns, name string) {
	t.Helper()
	testenv.WaitCreatable(t, env.Client, suite.Gadget(group, ns, testenv.AdmissionProbe, `{"size":1}`), 0)
	env.MustCreate(t, suite.Gadget(group, ns, name, `{"size":1}`))
	testenv.Consistently(t, 3*time.Second, "no controller to serve Gadget "+name, func() (bool, error) {
		u := suite.Gadget(group, ns, name, "")
		if err := env.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		_, hasStatus := u.Object["status"]
		err := env.Get(context.Background(), suite.Key(ns, name+"-conf"), &corev1.ConfigMap{})
		return !hasStatus && apierrors.IsNotFound(err), nil
	})
}

// unchanged checks, for a while, that the CRD named name keeps
// resourceVersion rv: stencil never writes it.
func unchanged(t *testing.T, name, rv string) {
	t.Helper()
	testenv.Consistently(t, 2*time.Second, "CustomResourceDefinition "+name+" to be left as it is", func() (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := env.Get(context.Background(), client.ObjectKey{Name: name}, crd)
		return err == nil && crd.ResourceVersion == rv, err
	})
}

// TestPublishedKindNeverTakesOverACRD: publishing creates the kind's CRD
// only if absent (issue 20 item 4). A CRD of that name the Bundle did not
// make is never written, the Bundle reports KindConflict naming it, and
// no controller serves the kind for the Bundle: when the CRD stops being
// the Bundle's (an admin takes it over), the kind's controller stops.
func TestPublishedKindNeverTakesOverACRD(t *testing.T) {
	ctx := context.Background()
	t.Run("a hand-made CRD", func(t *testing.T) {
		ns := testenv.Namespace(t, env.Client)
		group := "hand-" + ns + ".example.com"
		env.GrantKind(t, group, "gadgets")
		hand := suite.MustYAML(t, suite.CRDYAML(group, "Gadget", "gadgets", "Namespaced"))
		if err := env.Create(ctx, hand); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Delete(context.Background(), hand) })
		rv := env.Established(t, "gadgets."+group).ResourceVersion
		b := env.Bundle(t, "hand-"+ns, suite.GadgetFiles(""), suite.Publishing(group))
		c := env.BundleReady(t, b.Name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
		if !strings.Contains(c.Message, "gadgets."+group) {
			t.Errorf("KindConflict message %q does not name the CRD", c.Message)
		}
		unchanged(t, "gadgets."+group, rv)
		unserved(t, group, ns, "g")
	})
	t.Run("a CRD that stops being the Bundle's", func(t *testing.T) {
		ns, group, name, _ := env.ServeGadgets(t, "taken")
		env.MustCreate(t, suite.Gadget(group, ns, "before", `{"size":1}`))
		env.InstanceReady(t, group, ns, "before", metav1.ConditionTrue)
		// An admin takes the CRD over (the API server and the Bundle
		// controller write it too).
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group}}
		testenv.Update(t, env.Client, crd, func() { delete(crd.Labels, publish.LabelBundle) })
		c := env.BundleReady(t, name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
		if !strings.Contains(c.Message, "gadgets."+group) {
			t.Errorf("KindConflict message %q does not name the CRD", c.Message)
		}
		unchanged(t, "gadgets."+group, crd.ResourceVersion)
		// No Bundle publishes the kind any more: stencil's admission
		// policy refuses its instances, once the parameters without the
		// kind reach the API server. A dry run: a create admitted before
		// then would leave an instance that every later try finds
		// (AlreadyExists), never refused.
		testenv.Eventually(t, 0, "an instance of a kind no Bundle publishes refused", func() (bool, error) {
			err := env.Create(ctx, suite.Gadget(group, ns, "after", `{"size":1}`), client.DryRunAll)
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "no Bundle publishes"), err
		})
	})
}

// TestTwoBundlesPublishOneKind: two Bundles publishing one kind at once,
// each seen by two controllers: the first to create the CRD serves the
// kind, the other reports KindConflict and serves nothing; the winner's
// CRD follows its schema, a property it drops included.
func TestTwoBundlesPublishOneKind(t *testing.T) {
	ctx := context.Background()
	env.StartShard(t, "twin")
	ns := testenv.Namespace(t, env.Client)
	group := "twin-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")
	names := []string{"one-" + ns, "two-" + ns}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1alpha1.BundleSpec{Files: suite.GadgetFiles("\n  by: " + n)}}
			suite.Publishing(group, func(a *v1alpha1.BundleAPI) { a.ShortNames = []string{"gd"} })(&b.Spec)
			if err := env.Create(ctx, b); err != nil {
				t.Errorf("create Bundle %s: %v", n, err)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range names {
			_ = env.Delete(context.Background(), &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
	crd := &apiextensionsv1.CustomResourceDefinition{}
	testenv.Eventually(t, 0, "the CRD to be made", func() (bool, error) {
		err := env.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd)
		return err == nil && crd.Labels[publish.LabelBundle] != "", err
	})
	t.Cleanup(func() { _ = env.Delete(context.Background(), crd) })
	winner := crd.Labels[publish.LabelBundle]
	loser := names[0]
	if loser == winner {
		loser = names[1]
	}
	env.BundleReady(t, winner, metav1.ConditionTrue, v1alpha1.ReasonReady)
	c := env.BundleReady(t, loser, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
	if !strings.Contains(c.Message, winner) {
		t.Errorf("KindConflict message %q does not name the Bundle that publishes the kind", c.Message)
	}
	if err := env.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil || crd.Labels[publish.LabelBundle] != winner {
		t.Fatalf("CRD: %v, labels %v, want it %s's", err, crd.Labels, winner)
	}
	env.GadgetChecked(t, group, ns)
	env.MustCreate(t, suite.Gadget(group, ns, "g", `{"size":1}`))
	env.InstanceReady(t, group, ns, "g", metav1.ConditionTrue)
	cm := &corev1.ConfigMap{}
	if err := env.Get(ctx, suite.Key(ns, "g-conf"), cm); err != nil || cm.Data["by"] != winner {
		t.Errorf("the instance's ConfigMap: %v %v, want it rendered by %s", err, cm.Data, winner)
	}

	// The CRD the winner created is its own to apply: a field its api
	// drops leaves the CRD (the creation left no other owner of it).
	if len(crd.Spec.Names.ShortNames) != 1 {
		t.Fatalf("CRD short names %v, want [gd]", crd.Spec.Names.ShortNames)
	}
	env.UpdateBundle(t, winner, func(s *v1alpha1.BundleSpec) { s.API.ShortNames = nil })
	testenv.Eventually(t, 0, "the CRD to drop its short names", func() (bool, error) {
		err := env.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd)
		return err == nil && len(crd.Spec.Names.ShortNames) == 0, err
	})
}
