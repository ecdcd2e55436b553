package blast

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

func compositionResult(ns, name string, o outcome) *blastResult {
	c := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return &blastResult{target: target{parent: c, kind: "Composition"}, outcome: o}
}

func instanceResult(ns, name, kind string, o outcome) *blastResult {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("app.example.com/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return &blastResult{target: target{parent: applyset.NewInstance(u, v1alpha1.CompositionSpec{}), kind: kind}, outcome: o}
}

// TestSummarize: the summary counts parents by kind and outcome and names
// the first failures, each cut to a line.
func TestSummarize(t *testing.T) {
	failing := func(r *blastResult, why string) *blastResult { r.failures = []string{why}; return r }
	many := []*blastResult{}
	for i := range 5 {
		many = append(many, failing(compositionResult("t", fmt.Sprint("c", i), renderFails), fmt.Sprintf("templates/a.yaml:%d: boom", i)))
	}
	long := "Service/b/y: " + strings.Repeat("long ", 30)
	tests := []struct {
		name    string
		results []*blastResult
		want    string
		code    int
	}{
		{"one unchanged Composition", []*blastResult{compositionResult("a", "x", unchanged)},
			"1 Composition: 0 change, 1 unchanged", 0},
		{"instances of two kinds", []*blastResult{
			instanceResult("a", "w", "Web", changes), compositionResult("a", "x", changes),
			instanceResult("b", "s", "AppService", unchanged), instanceResult("b", "t", "AppService", leftAlone)},
			"4 instances (1 Composition, 2 AppService, 1 Web): 2 change, 1 unchanged, 1 left alone", 1},
		{"only instances", []*blastResult{instanceResult("a", "s", "AppService", changes)},
			"1 instance (1 AppService): 1 change, 0 unchanged", 1},
		{"failures of each kind, reasons cut", []*blastResult{
			compositionResult("a", "x", changes),
			failing(instanceResult("a", "s", "AppService", renderFails), "templates/a.yaml:3: bad\nsecond line"),
			failing(compositionResult("b", "y", applyFails), long),
			{target: compositionResult("c", "z", unchecked).target, outcome: unchecked, err: errors.New("list members to prune: forbidden")}},
			"4 instances (3 Compositions, 1 AppService): 1 change, 0 unchanged" +
				", 1 would fail to render: a/s (AppService) templates/a.yaml:3: bad ..." +
				", 1 would fail to apply: b/y " + long[:maxReasonLength] + " ..." +
				", 1 could not be checked: c/z list members to prune: forbidden", 2},
		{"at most three failures named", many,
			"5 Compositions: 0 change, 0 unchanged, 5 would fail to render: t/c0 templates/a.yaml:0: boom; t/c1 templates/a.yaml:1: boom; t/c2 templates/a.yaml:2: boom; and 2 more", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.results); got != tt.want {
				t.Errorf("summary\n got %q\nwant %q", got, tt.want)
			}
			if got := exitStatus(tt.results); got != tt.code {
				t.Errorf("exit status %d, want %d", got, tt.code)
			}
		})
	}
}

// TestPrintResult: an unchanged parent prints nothing, a suspended one
// says so in its header, and a child's changed fields stop at
// maxFieldsShown.
func TestPrintResult(t *testing.T) {
	var b strings.Builder
	printResult(&b, compositionResult("a", "quiet", unchanged), false)
	if b.String() != "" {
		t.Errorf("an unchanged parent printed %q", b.String())
	}
	r := compositionResult("a", "web", changes)
	r.parent.ParentSpec().Suspend = true
	var fields []applyset.FieldChange
	for i := range maxFieldsShown + 2 {
		fields = append(fields, applyset.FieldChange{Path: fmt.Sprintf("data.k%02d", i), Old: "a", New: "b"})
	}
	r.children = []childChange{{ref: "ConfigMap/a/web", what: "changed", fields: fields}, {ref: "Service/a/web", what: "would be pruned"}}
	printResult(&b, r, false)
	want := "# a/web (Composition, suspended: nothing is applied until it resumes)\n  ConfigMap/a/web changed\n"
	for i := range maxFieldsShown {
		want += fmt.Sprintf("      data.k%02d \"a\" → \"b\"\n", i)
	}
	want += "      ... and 2 more fields (-o diff shows them)\n  Service/a/web would be pruned\n"
	if b.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestInstanceTargetBadAnnotation: an instance whose stencil.dev/prune the
// controller cannot read (admitted before stencil's admission policy,
// which refuses it now) is reported as one that would fail to render,
// naming the annotation and not its value.
func TestInstanceTargetBadAnnotation(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("app.example.com/v1")
	u.SetKind("AppService")
	u.SetNamespace("team")
	u.SetName("svc")
	u.SetAnnotations(map[string]string{"stencil.dev/prune": "maybe-7f3a"})
	api := &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Version: "v1"}
	got := instanceTarget("a", u, api)
	if got.specErr == nil || !strings.Contains(got.specErr.Error(), `annotation stencil.dev/prune must be "true" or "false"`) ||
		strings.Contains(got.specErr.Error(), "maybe-7f3a") || strings.Contains(got.specErr.Error(), "AppService team/svc") {
		t.Errorf("specErr %v, want the annotation named, without its value nor the instance (the header names it)", got.specErr)
	}
}

// TestWavePlanWithoutTheKey: a user who may not read the controller's
// rollout order sees the canaries in their wave and the batches' parents
// together, never an order computed without the key.
func TestWavePlanWithoutTheKey(t *testing.T) {
	pol := &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves,
		Canary: &v1alpha1.RolloutCanary{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "canary"}}}}
	var targets []target
	for i, ns := range []string{"canary", "a", "b", "c", "d"} {
		targets = append(targets, compositionResult(ns, fmt.Sprint("p", i), unchanged).target)
	}
	s := &session.Session{} // offline: no key to read, and no Namespace labels
	got := wavePlan(t.Context(), s, "web", v1alpha1.BundleSpec{Rollout: pol}, nil, targets, "stencil-system")
	h := newWaveHeader(v1alpha1.RolloutWaves, got)
	var out strings.Builder
	for _, tg := range got {
		h.print(&out, &blastResult{target: tg})
	}
	// Offline the canary's namespace labels are unknown: every parent is
	// a batch's, after the (empty) canary wave.
	want := "## waves 2-4 (5 parents, in an order keyed by the controller's Secret stencil-rollout-order, which you may not read)\n"
	if out.String() != want {
		t.Errorf("headers:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, tg := range got {
		if !tg.unordered || tg.wave != 2 || tg.waves != 4 {
			t.Errorf("%s: wave %d, unordered %v", tg.name(), tg.wave, tg.unordered)
		}
	}
}
