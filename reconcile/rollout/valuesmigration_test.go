package rollout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// sized is a bundle's first content: its ConfigMap says values.size.
func sized() map[string]string {
	return map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{{ .Composition.Name }}\ndata:\n  version: \"1\"\n  replicas: \"{{ .Values.size | default 1 }}\"\n",
	}
}

// replicated is its second: the schema takes replicas only (size is
// refused), and its ConfigMap says values.replicas.
func replicated() map[string]string {
	return map[string]string{
		"values.schema.json": `{"type": "object", "additionalProperties": false, "required": ["replicas"], "properties": {"replicas": {"type": "integer", "minimum": 1}}}`,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{{ .Composition.Name }}\ndata:\n  version: \"2\"\n  replicas: \"{{ .Values.replicas }}\"\n",
	}
}

// sizeToReplicas is the values migration from the first to the second.
var sizeToReplicas = []v1alpha1.ValuesMigration{{Name: "size-to-replicas", Rules: []v1alpha1.ConversionRule{
	{Move: &v1alpha1.FieldMove{From: "size", To: "replicas"}},
}}}

// configMapSays waits until ConfigMap cfg-name in ns holds data.
func configMapSays(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	testenv.Eventually(t, 0, "the ConfigMap of "+name, func() (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := env.Get(context.Background(), suite.Key(ns, "cfg-"+name), cm); err != nil {
			return false, err
		}
		for k, v := range data {
			if cm.Data[k] != v {
				return false, fmt.Errorf("data %v, want %v", cm.Data, data)
			}
		}
		return true, nil
	})
}

// onRevision waits until Composition ns/name is Ready on revision rev
// (its content hash) with status.valuesMigrations migrated, and returns it.
func onRevision(t *testing.T, ns, name, rev string, migrated []string) *v1alpha1.Composition {
	t.Helper()
	c := &v1alpha1.Composition{}
	testenv.Eventually(t, 0, name+" Ready on the new revision", func() (bool, error) {
		if err := env.Get(context.Background(), suite.Key(ns, name), c); err != nil {
			return false, err
		}
		ready := false
		for _, cond := range c.Status.Conditions {
			ready = ready || (cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == c.Generation)
		}
		return ready && c.Status.BundleRevision == rev && slices.Equal(c.Status.ValuesMigrations, migrated),
			fmt.Errorf("status %+v", c.Status)
	})
	return c
}

// TestValuesMigrationMovesParents: a Bundle whose new schema renames a
// value (size to replicas) with a values migration moves every parent to
// the new revision: those whose values the schema refuses render them
// migrated, and their status names the migration, their spec unchanged;
// a parent no migration rescues stalls as before, naming the migration
// tried.
func TestValuesMigrationMovesParents(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "vmig-"+ns, sized())
	values := map[string]string{"small": `{"size":2}`, "large": `{"size":3}`, "typo": `{"sise":4}`}
	for name, v := range values {
		env.MustCreate(t, suite.Composition(ns, name, b.Name, v))
	}
	for name := range values {
		env.Condition(t, ns, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	}
	configMapSays(t, ns, "small", map[string]string{"version": "1", "replicas": "2"})
	rev1 := currentRevision(t, b)

	setFiles(t, b, replicated(), func(b *v1alpha1.Bundle) { b.Spec.ValuesMigrations = sizeToReplicas })
	rev2 := currentRevision(t, b)
	if rev2 == rev1 {
		t.Fatalf("the new content is revision %s too", rev1)
	}
	hash := b.Status.Revision
	if revision.Name(b.Name, hash) != rev2 {
		t.Fatalf("revision %s of hash %s", rev2, hash)
	}
	for name, replicas := range map[string]string{"small": "2", "large": "3"} {
		c := onRevision(t, ns, name, hash, []string{"size-to-replicas"})
		configMapSays(t, ns, name, map[string]string{"version": "2", "replicas": replicas})
		if got := string(c.Spec.Values.Raw); got != values[name] {
			t.Errorf("%s: spec.values = %s, want them as written, %s", name, got, values[name])
		}
	}
	// The values no migration rescues: stalled as without migrations,
	// the message naming the migration tried; its child left as it was.
	env.Stalled(t, ns, "typo", v1alpha1.ReasonValuesRefused, rev2, "values migrations tried: size-to-replicas", "still refused")
	configMapSays(t, ns, "typo", map[string]string{"version": "1", "replicas": "1"})
	if got := string(env.GetComposition(t, ns, "typo").Spec.Values.Raw); got != values["typo"] {
		t.Errorf("typo: spec.values = %s, want them as written", got)
	}
	rolloutOf(t, b, "two parents updated, the typo held", func(st v1alpha1.RolloutStatus) bool {
		return st.Updated == 2 && st.Held == 1 && len(st.HeldParents) == 1 &&
			st.HeldParents[0].Name == "typo" && strings.Contains(st.HeldParents[0].Message, "size-to-replicas")
	})
	testenv.Eventually(t, 0, "a ValuesMigrated event of each migrated parent", func() (bool, error) {
		seen := map[string]bool{}
		for _, e := range env.Events(t, ns, v1alpha1.ReasonValuesMigrated) {
			if e.Type == corev1.EventTypeNormal && strings.Contains(e.Note, "size-to-replicas") {
				seen[e.Regarding.Name] = true
			}
		}
		return seen["small"] && seen["large"] && !seen["typo"], fmt.Errorf("events of %v", seen)
	})

	// Values written for the new schema render as they are: no
	// migration named.
	env.UpdateComposition(t, env.GetComposition(t, ns, "small"), func(c *v1alpha1.Composition) {
		c.Spec.Values.Raw = []byte(`{"replicas":5}`)
	})
	onRevision(t, ns, "small", hash, nil)
	configMapSays(t, ns, "small", map[string]string{"version": "2", "replicas": "5"})
}

// TestAdmissionAdmitsMigratedValues: the webhook renders as the
// controller does: values only a migration makes valid are admitted,
// with a warning naming it; values no migration rescues are refused,
// naming it too.
func TestAdmissionAdmitsMigratedValues(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	b := env.Bundle(t, "adm-vmig-"+ns, replicated(), func(s *v1alpha1.BundleSpec) { s.ValuesMigrations = sizeToReplicas })
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	var refusal string
	testenv.Eventually(t, 0, "the webhook to refuse values no migration rescues", func() (bool, error) {
		err := env.Create(ctx, suite.Composition(ns, "probe", b.Name, `{"sise":1}`), client.DryRunAll)
		if err != nil {
			refusal = err.Error()
		}
		return apierrors.IsInvalid(err), err
	})
	if !strings.Contains(refusal, "values migrations tried: size-to-replicas") {
		t.Errorf("refusal %q does not name the migration tried", refusal)
	}
	c, warnings := env.WarningClient(t)
	if err := c.Create(ctx, suite.Composition(ns, "old", b.Name, `{"size":2}`), client.DryRunAll); err != nil {
		t.Fatalf("values a migration makes valid: %v", err)
	}
	got := warnings.Take()
	if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, "values migrations size-to-replicas") }) {
		t.Errorf("warnings %q: want one naming the migration size-to-replicas", got)
	}
	if err := c.Create(ctx, suite.Composition(ns, "new", b.Name, `{"replicas":2}`), client.DryRunAll); err != nil {
		t.Fatalf("valid values: %v", err)
	}
	if got := warnings.Take(); slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, "migration") }) {
		t.Errorf("warnings %q for values valid as they are: want none of migrations", got)
	}
}

// TestValuesMigrationWhereHoldingIsAllowed: where the Bundle holds
// parents back (spec.revisions.holding: Allowed), a parent a migration
// rescues moves all the same; one no migration rescues stays on its
// revision, RevisionHeld naming the migration tried.
func TestValuesMigrationWhereHoldingIsAllowed(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "vmig-held-"+ns, sized(), func(s *v1alpha1.BundleSpec) {
		s.Revisions = &v1alpha1.RevisionPolicy{Holding: v1alpha1.HoldingAllowed}
	})
	env.MustCreate(t, suite.Composition(ns, "old", b.Name, `{"size":2}`))
	env.MustCreate(t, suite.Composition(ns, "typo", b.Name, `{"sise":4}`))
	env.Condition(t, ns, "old", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Condition(t, ns, "typo", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rev1 := currentRevision(t, b)
	setFiles(t, b, replicated(), func(b *v1alpha1.Bundle) { b.Spec.ValuesMigrations = sizeToReplicas })
	currentRevision(t, b)
	onRevision(t, ns, "old", b.Status.Revision, []string{"size-to-replicas"})
	configMapSays(t, ns, "old", map[string]string{"version": "2", "replicas": "2"})
	revisionHeld(t, ns, "typo", func(rc *metav1.Condition) bool {
		return rc.Reason == v1alpha1.ReasonValuesRefused && strings.Contains(rc.Message, "stays on revision "+rev1) &&
			strings.Contains(rc.Message, "values migrations tried: size-to-replicas")
	})
	configMapSays(t, ns, "typo", map[string]string{"version": "1", "replicas": "1"})
}
