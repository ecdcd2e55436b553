package authority

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// t0 is when the policy and the binding of the tests were created.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const margin = 10 * time.Second

// coverage is the check of kind, its policy and binding created at t0,
// with params.
func coverage(kind schema.GroupResource, params Params) Coverage {
	p := Policy()
	p.UID, p.CreationTimestamp = types.UID("p1"), metav1.NewTime(t0)
	b := CompositionBinding("stencil-system")
	if kind != CompositionsResource {
		b = KindBinding("stencil-system", kind)
	}
	b.UID, b.CreationTimestamp = types.UID("b1"), metav1.NewTime(t0.Add(-time.Hour))
	c := Coverage{kind: kind, policy: p, binding: b, params: params}
	c.problem = c.validate("stencil-system")
	return c
}

func record(id string, epoch time.Time, admitted bool, gen int64, digest string) *v1alpha1.AdmissionStatus {
	return &v1alpha1.AdmissionStatus{Policy: id, Epoch: ptr.To(metav1.NewTime(epoch)), Admitted: admitted, Generation: gen, Metadata: digest}
}

func TestJudge(t *testing.T) {
	gadgets := schema.GroupResource{Group: "example.com", Resource: "gadgets"}
	changed := t0.Add(time.Hour) // when the default ServiceAccount of the tests changed value
	params := Params{"default": "stencil", "default.a": "shard-a-sa",
		"kind.gadgets.example.com.bundle": "gadgets", "kind.gadgets.example.com.serviceAccount": "",
		"epoch.default.a": changed.Format(time.RFC3339), InstalledKey: t0.Format(time.RFC3339)}
	comps, kind := coverage(CompositionsResource, params), coverage(gadgets, params)
	labels := map[string]string{"team": "a", applyset.LabelApplySetID: "x"}
	digest := Digest(labels, nil)
	now := t0.Add(24 * time.Hour)
	base := Parent{Describe: "Composition ns/web", Created: t0.Add(time.Minute), Generation: 3, Labels: labels, Account: "stencil"}
	with := func(change func(*Parent)) Parent {
		p := base
		change(&p)
		return p
	}
	missing := coverage(CompositionsResource, nil)
	edited := coverage(CompositionsResource, params)
	edited.policy.Spec.Validations = edited.policy.Spec.Validations[1:]
	edited.problem = edited.validate("stencil-system")
	narrowed := coverage(CompositionsResource, params)
	narrowed.binding.Spec.MatchResources.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
	narrowed.problem = narrowed.validate("stencil-system")
	notDenying := coverage(CompositionsResource, params)
	notDenying.binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	notDenying.problem = notDenying.validate("stencil-system")

	tests := []struct {
		name    string
		cov     Coverage
		p       Parent
		now     time.Time
		want    Verdict
		wantRec *v1alpha1.AdmissionStatus
	}{
		// Nothing to check, or no check to trust.
		{name: "no account", cov: missing, p: with(func(p *Parent) { p.Account = "" }), want: Verdict{Admitted: true}},
		{name: "parameters missing", cov: missing, p: base, want: Verdict{RetryAfter: retryMissing}},
		{name: "policy edited", cov: edited, p: base, want: Verdict{RetryAfter: retryMissing}},
		{name: "binding narrowed by a selector", cov: narrowed, p: base, want: Verdict{RetryAfter: retryMissing}},
		{name: "binding that only audits", cov: notDenying, p: base, want: Verdict{RetryAfter: retryMissing}},
		{name: "parameters name another account", cov: comps, p: with(func(p *Parent) { p.Account = "deployer" }), want: Verdict{RetryAfter: retryMissing}},
		{name: "shard no controller serves", cov: comps, p: with(func(p *Parent) { p.Shard = "b" }), want: Verdict{RetryAfter: retryMissing}},

		// Created under the check.
		{name: "created after the epoch", cov: comps, p: base, want: Verdict{Admitted: true},
			wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "named account", cov: comps, p: with(func(p *Parent) { p.Named, p.Account = "deployer", "deployer" }), want: Verdict{Admitted: true},
			wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "record of this check", cov: comps, p: with(func(p *Parent) { p.Record = record("p1/b1", t0, true, 0, "") }), want: Verdict{Admitted: true}},

		// Before the check.
		{name: "created within the margin, too early to record", cov: comps, now: t0.Add(5 * time.Second),
			p: with(func(p *Parent) { p.Created = t0.Add(2 * time.Second) }), want: Verdict{RetryAfter: 6 * time.Second}},
		{name: "predates the check", cov: comps, p: with(func(p *Parent) { p.Created = t0.Add(-time.Hour) }),
			want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", t0, false, 3, digest)},
		{name: "pending, unchanged", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest)
		}), want: Verdict{Pending: true}},
		{name: "pending, only stencil's own label changed", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest)
			p.Labels = map[string]string{"team": "a", applyset.LabelApplySetID: "y"}
		}), want: Verdict{Pending: true}},
		{name: "pending, then the spec changed", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record, p.Generation = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest), 4
		}), want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "pending, then an annotation changed", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest)
			p.Annotations = map[string]string{"stencil.dev/readmitted": "now"}
		}), want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		// A DELETE bumps the generation of a parent with finalizers, and
		// nobody checked it (issue 37).
		{name: "pending, then deleted", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record, p.Generation, p.Deleting = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest), 4, true
		}), want: Verdict{Pending: true}},
		{name: "pending, spec changed, then deleted", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record, p.Generation, p.Deleting = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest), 5, true
		}), want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "pending, an annotation changed, then deleted", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record, p.Generation, p.Deleting = t0.Add(-time.Hour), record("p1/b1", t0, false, 3, digest), 4, true
			p.Annotations = map[string]string{"stencil.dev/readmitted": "now"}
		}), want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "pending, recorded while being deleted", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record, p.Generation, p.Deleting = t0.Add(-time.Hour), record("p1/b1", t0, false, 4, digest), 4, true
		}), want: Verdict{Pending: true}},
		{name: "predates the check, being deleted", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Generation, p.Deleting = t0.Add(-time.Hour), 4, true
		}), want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", t0, false, 4, digest)},
		{name: "admitted, then deleted", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record, p.Generation, p.Deleting = t0.Add(-time.Hour), record("p1/b1", t0, true, 0, ""), 4, true
		}), want: Verdict{Admitted: true}},
		{name: "admitted under a binding made anew", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Record = t0.Add(-time.Hour), record("p1/b0", t0, true, 0, "")
		}), want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", t0, false, 3, digest)},

		// The default changed value: the parents that use it wait.
		{name: "default changed after the record", cov: comps, p: with(func(p *Parent) {
			p.Shard, p.Account, p.Record = "a", "shard-a-sa", record("p1/b1", t0, true, 0, "")
		}), want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", changed, false, 3, digest)},
		{name: "default changed, parent named its own", cov: comps, p: with(func(p *Parent) {
			p.Shard, p.Named, p.Account, p.Record = "a", "deployer", "deployer", record("p1/b1", t0, true, 0, "")
		}), want: Verdict{Admitted: true}},
		{name: "default changed before the parent", cov: comps, p: with(func(p *Parent) {
			p.Shard, p.Account, p.Created = "a", "shard-a-sa", changed.Add(margin)
		}), want: Verdict{Admitted: true}, wantRec: record("p1/b1", changed, true, 0, "")},

		// An earlier stencil's Compositions.
		{name: "legacy", cov: comps, p: with(func(p *Parent) { p.Created, p.Legacy = t0.Add(-time.Hour), true }),
			want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "legacy, being deleted", cov: comps, p: with(func(p *Parent) { p.Created, p.Legacy, p.Deleting = t0.Add(-time.Hour), true, true }),
			want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		// Created after stencil's policy was installed: this controller
		// wrote its first status (a start-up's stall), not an earlier
		// stencil (issue 37).
		{name: "legacy-looking, created after the install", cov: comps, p: with(func(p *Parent) {
			p.Shard, p.Account, p.Created, p.Legacy = "a", "shard-a-sa", t0.Add(30*time.Minute), true
		}), want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", changed, false, 3, digest)},
		{name: "legacy, install time not recorded yet", cov: coverage(CompositionsResource, Params{"default": "stencil"}),
			p: with(func(p *Parent) { p.Created, p.Legacy = t0.Add(-time.Hour), true }), want: Verdict{RetryAfter: retryMissing}},
		{name: "legacy once: a record wins", cov: comps, p: with(func(p *Parent) {
			p.Created, p.Legacy, p.Record = t0.Add(-time.Hour), true, &v1alpha1.AdmissionStatus{}
		}), want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", t0, false, 3, digest)},

		// Published kinds.
		{name: "instance, Bundle's default", cov: coverage(gadgets, Params{"default": "stencil",
			"kind.gadgets.example.com.bundle": "gadgets", "kind.gadgets.example.com.serviceAccount": "ops"}),
			p: with(func(p *Parent) { p.Account = "ops" }), want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "instance, shard's default", cov: kind, p: base, want: Verdict{Admitted: true}, wantRec: record("p1/b1", t0, true, 0, "")},
		{name: "instance, no Bundle publishes it", cov: coverage(gadgets, Params{"default": "stencil"}), p: base,
			want: Verdict{RetryAfter: retryMissing}},
		{name: "instance, Bundle's default changed", cov: coverage(gadgets, Params{"default": "stencil",
			"kind.gadgets.example.com.bundle": "gadgets", "kind.gadgets.example.com.serviceAccount": "ops",
			"epoch.kind.gadgets.example.com.serviceAccount": changed.Format(time.RFC3339)}),
			p:    with(func(p *Parent) { p.Account, p.Record = "ops", record("p1/b1", t0, true, 0, "") }),
			want: Verdict{Pending: true, Lock: true}, wantRec: record("p1/b1", changed, false, 3, digest)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := now
			if !tt.now.IsZero() {
				at = tt.now
			}
			got := Judge(tt.cov, tt.p, margin, at)
			if got.Admitted != tt.want.Admitted || got.Pending != tt.want.Pending || got.Lock != tt.want.Lock || got.RetryAfter != tt.want.RetryAfter {
				t.Errorf("Judge = admitted %v pending %v lock %v retry %v (%s); want admitted %v pending %v lock %v retry %v",
					got.Admitted, got.Pending, got.Lock, got.RetryAfter, got.Message, tt.want.Admitted, tt.want.Pending, tt.want.Lock, tt.want.RetryAfter)
			}
			if !got.Admitted && got.Message == "" {
				t.Error("not admitted, with no message")
			}
			switch {
			case tt.wantRec == nil && got.Record != nil:
				t.Errorf("record %+v, want none", got.Record)
			case tt.wantRec != nil && (got.Record == nil || got.Record.Policy != tt.wantRec.Policy || !got.Record.Epoch.Equal(tt.wantRec.Epoch) ||
				got.Record.Admitted != tt.wantRec.Admitted || got.Record.Generation != tt.wantRec.Generation || got.Record.Metadata != tt.wantRec.Metadata):
				t.Errorf("record %+v, want %+v", got.Record, tt.wantRec)
			}
		})
	}
}

// TestEarlierStencil: only a status with conditions and a render's
// bundleRevision, and no admission record, is an earlier stencil's; every
// status this controller writes carries a record (Carried), but an
// earlier stencil's Composition's, which keeps none until judged.
func TestEarlierStencil(t *testing.T) {
	conds := []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	earlier := v1alpha1.CompositionStatus{Conditions: conds, BundleRevision: "abc", ObservedGeneration: 2}
	// What this controller wrote before it could judge a new parent: a
	// stall NoServiceAccount, an error reading the check at start-up.
	startUp := v1alpha1.CompositionStatus{Conditions: conds, ObservedGeneration: 1, Inventory: &v1alpha1.InventoryStatus{}}
	recorded := earlier
	recorded.Admission = &v1alpha1.AdmissionStatus{}
	for _, tt := range []struct {
		name    string
		st      v1alpha1.CompositionStatus
		earlier bool
	}{
		{"an earlier stencil's", earlier, true},
		{"a start-up's stall", startUp, false},
		{"with a record", recorded, false},
		{"never written", v1alpha1.CompositionStatus{}, false},
	} {
		if got := EarlierStencil(tt.st); got != tt.earlier {
			t.Errorf("%s: EarlierStencil = %v, want %v", tt.name, got, tt.earlier)
		}
	}
	if Carried(earlier, true) != nil {
		t.Error("an earlier stencil's Composition got a record before Judge")
	}
	for _, c := range []struct {
		st     v1alpha1.CompositionStatus
		legacy bool
	}{{earlier, false}, {startUp, true}, {v1alpha1.CompositionStatus{}, true}} {
		if got := Carried(c.st, c.legacy); got == nil || got.Policy != "" || got.Admitted {
			t.Errorf("Carried(%+v, %v) = %+v, want an empty record", c.st, c.legacy, got)
		}
	}
	if got := Carried(recorded, true); got == recorded.Admission || got == nil {
		t.Errorf("Carried did not copy the record: %p", got)
	}
}

// TestDigestIgnoresOwnMetadata: the digest changes with any label or
// annotation but the ApplySet's own, which the controller writes.
func TestDigestIgnoresOwnMetadata(t *testing.T) {
	a := Digest(map[string]string{"x": "1"}, map[string]string{"y": "2"})
	if a != Digest(map[string]string{"x": "1", applyset.LabelApplySetID: "id"},
		map[string]string{"y": "2", applyset.AnnotationTooling: "stencil/v1", applyset.AnnotationGroupKinds: "ConfigMap", applyset.AnnotationNamespaces: ""}) {
		t.Error("the ApplySet's own metadata changed the digest")
	}
	for _, other := range []string{Digest(map[string]string{"x": "2"}, map[string]string{"y": "2"}), Digest(map[string]string{"x": "1"}, nil),
		Digest(nil, map[string]string{"x": "1", "y": "2"}), Digest(map[string]string{"x": "1"}, map[string]string{"y": "2", applyset.LabelPartOf: "z"})} {
		if other == a {
			t.Errorf("a change of the labels or annotations left the digest %s", a)
		}
	}
}

// TestKindBindingName: a binding's name is readable, and a digest when
// the kind's name would make it too long for one.
func TestKindBindingName(t *testing.T) {
	if got := KindBindingName(schema.GroupResource{Group: "app.example.com", Resource: "appservices"}); got != "stencil-access.appservices.app.example.com" {
		t.Errorf("name %q", got)
	}
	long := schema.GroupResource{Group: strings.Repeat("a.", 120) + "com", Resource: "things"}
	if got := KindBindingName(long); len(got) > 253 || got == KindBindingName(schema.GroupResource{Group: long.Group, Resource: "others"}) {
		t.Errorf("name %q of a long kind: too long, or not unique", got)
	}
	if KindKeyFits(long) {
		t.Errorf("a kind of %d characters fits the parameters' keys", len(long.String()))
	}
}
