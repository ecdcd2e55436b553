package rollout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// The narrowing of a Bundle binds every revision (issue 37, item 3): a
// parent pinned to an older revision, or held on one, renders within the
// Bundle's current permissions, and a parent the new schema refuses is not
// kept on an older revision unless the author allows it.

// elsewhere is a Bundle's files whose ConfigMap "cfg-<name>" says version
// v, and, with other set, a ConfigMap "cross-<name>" in namespace other.
func elsewhere(v, other string) map[string]string {
	files := versioned(v)
	if other != "" {
		files["templates/cross.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cross-{{ .Composition.Name }}\n  namespace: " + other + "\ndata:\n  version: \"" + v + "\"\n"
	}
	return files
}

// TestNarrowingBindsPins: a Bundle allowed every namespace renders a
// ConfigMap into another namespace; its author narrows it (no other
// namespace, the template gone) and the ConfigMap is pruned; the tenant
// pins the earlier revision by the name its status shows. The pinned
// parent renders within the Bundle's current permissions: it stalls,
// refused, and the ConfigMap is not written back.
func TestNarrowingBindsPins(t *testing.T) {
	ns, platform := testenv.Namespace(t, env.Client), testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "narrow-"+ns, elsewhere("1", platform), func(s *v1alpha1.BundleSpec) {
		s.Permissions.Namespaces = []string{"*"}
	})
	env.MustCreate(t, suite.Composition(ns, "tenant", b.Name, ""))
	env.Condition(t, ns, "tenant", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rev1 := currentRevision(t, b)
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "cross-tenant"}})

	setFiles(t, b, elsewhere("2", ""), func(b *v1alpha1.Bundle) { b.Spec.Permissions = v1alpha1.BundlePermissions{} })
	currentRevision(t, b)
	testenv.Eventually(t, 0, "the ConfigMap in "+platform+" pruned", func() (bool, error) {
		return env.Absent(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "cross-tenant"}})
	})

	comp := suite.Composition(ns, "tenant", b.Name, "")
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Spec.BundleRevision = rev1 })
	env.Stalled(t, ns, "tenant", v1alpha1.ReasonRefused, platform, "spec.permissions")
	// The pass that stalled applied nothing: the removed permission wrote
	// nothing back.
	if ok, err := env.Absent(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "cross-tenant"}}); !ok {
		t.Errorf("the pinned revision wrote into %s under the permission its author removed: %v", platform, err)
	}
	// The pin is taken (RevisionHeld names it); only the permission is not.
	revisionHeld(t, ns, "tenant", func(rc *metav1.Condition) bool {
		return rc.Reason == v1alpha1.ReasonPinned && strings.Contains(rc.Message, rev1)
	})
}

// TestRefusedValuesStallEvenWithoutPinning: with pinning disallowed, a
// parent whose values the new schema refuses is not held on its older
// revision (which could keep what the author removed): it stalls, naming
// the values and the revision, and nothing of it is applied.
func TestRefusedValuesStallEvenWithoutPinning(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "refused-"+ns, versioned("1"), func(s *v1alpha1.BundleSpec) {
		s.Revisions = &v1alpha1.RevisionPolicy{Pinning: v1alpha1.PinningDisallowed}
	})
	env.MustCreate(t, suite.Composition(ns, "ok", b.Name, `{"port": 80}`))
	env.MustCreate(t, suite.Composition(ns, "old", b.Name, `{}`))
	env.Condition(t, ns, "ok", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Condition(t, ns, "old", v1alpha1.ConditionReady, metav1.ConditionTrue)
	currentRevision(t, b)
	setFiles(t, b, versioned("2"), func(b *v1alpha1.Bundle) {
		b.Spec.Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["port"],"properties":{"port":{"type":"integer"}}}`)}
	})
	rev2 := currentRevision(t, b)
	env.Stalled(t, ns, "old", v1alpha1.ReasonValuesRefused, rev2, "port")
	env.Condition(t, ns, "ok", v1alpha1.ConditionReady, metav1.ConditionTrue)
	testenv.Eventually(t, 0, "the other parent on the new revision", func() (bool, error) {
		got := versions(t, ns)
		return got["2"] == 1 && got["1"] == 1, fmt.Errorf("ConfigMaps by version %v", got)
	})
	st := rolloutOf(t, b, "the refused parent counted", func(st v1alpha1.RolloutStatus) bool { return st.Held == 1 && st.Stable == rev2 })
	if len(st.HeldParents) != 1 || st.HeldParents[0].Name != "old" {
		t.Errorf("held %+v", st.HeldParents)
	}
}

// TestHeldRevisionWithinNarrowing: where the author allows holding, a
// parent the new schema refuses stays on its revision, but within the
// Bundle's current permissions: the narrowing of the same change binds
// it (it stalls, refused).
func TestHeldRevisionWithinNarrowing(t *testing.T) {
	ns, platform := testenv.Namespace(t, env.Client), testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "heldnarrow-"+ns, elsewhere("1", platform), func(s *v1alpha1.BundleSpec) {
		s.Permissions.Namespaces = []string{platform}
		s.Revisions = &v1alpha1.RevisionPolicy{Holding: v1alpha1.HoldingAllowed}
	})
	env.MustCreate(t, suite.Composition(ns, "old", b.Name, `{}`))
	env.Condition(t, ns, "old", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rev1 := currentRevision(t, b)
	cross := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "cross-old"}}
	env.Exists(t, cross)

	setFiles(t, b, elsewhere("2", ""), func(b *v1alpha1.Bundle) {
		b.Spec.Permissions = v1alpha1.BundlePermissions{}
		b.Spec.Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["port"],"properties":{"port":{"type":"integer"}}}`)}
	})
	currentRevision(t, b)
	env.Stalled(t, ns, "old", v1alpha1.ReasonRefused, platform, "spec.permissions")
	revisionHeld(t, ns, "old", func(rc *metav1.Condition) bool {
		return rc.Reason == v1alpha1.ReasonValuesRefused && strings.Contains(rc.Message, rev1)
	})
	// What the pass applied before the narrowing stays (a refused render
	// prunes nothing), and nothing is written there again.
	if err := env.Get(context.Background(), suite.Key(platform, "cross-old"), cross); err != nil || cross.Data["version"] != "1" {
		t.Errorf("ConfigMap %s/cross-old %v (%v), want it as revision 1 left it", platform, cross.Data, err)
	}
}

// TestAdmissionBundleDryRunNarrowing: a server dry run of a Bundle that
// narrows its permissions counts a pinned parent whose revision writes
// where the new content no longer allows as one that would fail to
// render, and a parent the new schema refuses as one that would stall.
func TestAdmissionBundleDryRunNarrowing(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	platform := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "adm-narrow-"+ns, elsewhere("1", platform), func(s *v1alpha1.BundleSpec) {
		s.Permissions.Namespaces = []string{"*"}
	})
	env.MustCreate(t, suite.Composition(ns, "follow", b.Name, `{"port": 80}`))
	env.Condition(t, ns, "follow", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rev1 := currentRevision(t, b)
	pinned := suite.Composition(ns, "pinned", b.Name, `{"port": 80}`)
	pinned.Spec.BundleRevision = rev1
	env.MustCreate(t, pinned)
	env.MustCreate(t, suite.Composition(ns, "refused", b.Name, `{}`))
	env.Condition(t, ns, "pinned", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Condition(t, ns, "refused", v1alpha1.ConditionReady, metav1.ConditionTrue)
	c, warnings := env.WarningClient(t)
	var got []string
	testenv.Eventually(t, 0, "the dry run of the narrowing to be counted", func() (bool, error) {
		warnings.Take()
		err := env.Retry(ctx, b, func() error {
			b.Spec.Files = elsewhere("2", "")
			b.Spec.Permissions = v1alpha1.BundlePermissions{}
			b.Spec.Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["port"],"properties":{"port":{"type":"integer"}}}`)}
			return c.Update(ctx, b, client.DryRunAll)
		})
		got = warnings.Take()
		return err == nil && slices.ContainsFunc(got, func(w string) bool {
			return strings.Contains(w, "1 would change, 0 unchanged, 1 would fail to render, 1 would stall (values refused), 0 pinned")
		}), fmt.Errorf("warnings %q (%v)", got, err)
	})
	if !slices.ContainsFunc(got, func(w string) bool {
		return strings.Contains(w, "would fail to render: "+ns+"/pinned") && strings.Contains(w, platform)
	}) {
		t.Errorf("warnings %q: want the pinned parent named, refused in %s", got, platform)
	}
}
