package admission

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

func TestCapWarnings(t *testing.T) {
	long := "stencil: Deployment/x: " + strings.Repeat("spec.a 1 → 2, ", 50)
	for _, tc := range []struct {
		name      string
		lines     []string
		wantCount int
		wantMore  string
	}{
		{"few pass whole", []string{"stencil: a", "stencil: b"}, 2, ""},
		{"many end with how many more", repeat("stencil: ConfigMap/cm-0000000000: created", 200), 0, "more changes not shown; run `stencil diff`"},
		{"long ones are cut", []string{long}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capWarnings(tc.lines)
			total := 0
			for _, w := range got {
				n := utf8.RuneCountInString(w)
				if n > maxWarningRunes {
					t.Errorf("warning of %d runes, more than %d: %q", n, maxWarningRunes, w)
				}
				total += n
			}
			if total > maxWarningTotalRunes {
				t.Errorf("%d runes of warnings, more than %d", total, maxWarningTotalRunes)
			}
			if tc.wantCount > 0 && len(got) != tc.wantCount {
				t.Errorf("%d warnings, want %d: %q", len(got), tc.wantCount, got)
			}
			if tc.wantMore != "" {
				last := got[len(got)-1]
				shown := len(got) - 1
				if !strings.Contains(last, tc.wantMore) || !strings.Contains(last, fmt.Sprintf("%d more", len(tc.lines)-shown)) {
					t.Errorf("last warning %q: want it to count the %d left out and name stencil diff", last, len(tc.lines)-shown)
				}
			}
		})
	}
	// The API server's own limits, which these stay under.
	if maxWarningRunes >= 256 || maxWarningTotalRunes >= 4096 {
		t.Errorf("limits %d/%d are not under the API server's 256/4096", maxWarningRunes, maxWarningTotalRunes)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestWarningTextHasNoControlCharacters(t *testing.T) {
	if got := warningText("a\nb\tc"); got != "a b c" {
		t.Errorf("got %q", got)
	}
}

func TestChildWarnings(t *testing.T) {
	dep := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "shop", "namespace": "team", "labels": map[string]any{applyset.LabelPartOf: "set"}},
		"spec":     map[string]any{"replicas": int64(2)}}}
	after := dep.DeepCopy()
	after.Object["spec"] = map[string]any{"replicas": int64(3)}
	// An object the apply would adopt: its values are not the requester's to read.
	found := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "db", "namespace": "team"}, "data": map[string]any{"password": "hunter2"}}}
	adopted := found.DeepCopy()
	adopted.SetLabels(map[string]string{applyset.LabelPartOf: "set"})
	adopted.Object["data"] = map[string]any{"password": "mine"}
	forged := found.DeepCopy()
	forged.SetName("forged")
	forged.SetLabels(map[string]string{applyset.LabelPartOf: "set"})
	forgedAfter := forged.DeepCopy()
	forgedAfter.Object["data"] = map[string]any{"password": "mine"}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "namespace": "other"}}}
	same := cm.DeepCopy()
	same.SetName("same")
	got := childWarnings("team", []applyset.Preview{
		{Desired: dep, Live: dep, Applied: after, Member: true},
		{Desired: adopted, Live: found, Applied: adopted},
		// Labelled a member by someone who may patch it, never recorded:
		// adopted too, its values as hidden.
		{Desired: forgedAfter, Live: forged, Applied: forgedAfter},
		{Desired: cm, Applied: cm},
		{Desired: same, Live: same, Applied: same},
		{Desired: cm, Err: errors.New("ConfigMap/other/x is a member of another ApplySet")},
	}, []applyset.PruneCandidate{{Ref: "Service/team/web"}, {Ref: "ConfigMap/team/keep", Orphan: true}}, nil, nil)
	want := []string{
		"stencil: Deployment/shop: spec.replicas 2 → 3",
		"stencil: ConfigMap/db: would be adopted: data.password changed, metadata.labels added",
		"stencil: ConfigMap/forged: would be adopted: data.password changed",
		"stencil: ConfigMap/other/x: created",
		"stencil: ConfigMap/other/x: would be refused: ConfigMap/other/x is a member of another ApplySet",
		"stencil: ConfigMap/keep: would be orphaned (helm.sh/resource-policy: keep)",
		"stencil: Service/web: would be pruned",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestChildWarningsHideWhatTheRequesterMayNotGet: a child of a kind the
// requester may not get says only that it exists, the same whether the
// apply would change it or not (a dry run of a guessed Secret value tells
// nothing), and members of such kinds to prune are counted, not named.
func TestChildWarningsHideWhatTheRequesterMayNotGet(t *testing.T) {
	secret := func(name, value string, member bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": "team"}, "data": map[string]any{"password": value}}}
		if member {
			u.SetLabels(map[string]string{applyset.LabelPartOf: "set"})
		}
		return u
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "team"}, "data": map[string]any{"k": "a"}}}
	cmAfter := cm.DeepCopy()
	cmAfter.Object["data"] = map[string]any{"k": "b"}
	cmAfter.SetLabels(map[string]string{applyset.LabelPartOf: "set"})
	// As the mapper-backed check: an unknown (empty) kind is not readable.
	noSecrets := func(gk schema.GroupKind, ns string) bool { return gk == schema.GroupKind{Kind: "ConfigMap"} }
	kinds := []schema.GroupKind{{Kind: "Secret"}, {Kind: "ConfigMap"}}
	got := childWarnings("team", []applyset.Preview{
		// Guessed right: nothing would change.
		{Desired: secret("right", "Z3Vlc3M=", true), Live: secret("right", "Z3Vlc3M=", false), Applied: secret("right", "Z3Vlc3M=", true)},
		// Guessed wrong: the value would change.
		{Desired: secret("wrong", "Z3Vlc3M=", true), Live: secret("wrong", "b3RoZXI=", false), Applied: secret("wrong", "Z3Vlc3M=", true)},
		{Desired: secret("new", "Z3Vlc3M=", true), Applied: secret("new", "Z3Vlc3M=", true)},
		{Desired: secret("bad", "Z3Vlc3M=", true), Err: errors.New("Secret team/bad: field is immutable")},
		{Desired: cmAfter, Live: cm, Applied: cmAfter},
	}, []applyset.PruneCandidate{{Ref: "Secret/team/old"}, {Ref: "ConfigMap/team/gone"}, {Ref: "Widget/team/w"}}, noSecrets, kinds)
	want := []string{
		"stencil: Secret/right: exists, would be adopted or changed (not shown: you may not get it)",
		"stencil: Secret/wrong: exists, would be adopted or changed (not shown: you may not get it)",
		"stencil: Secret/new: created",
		"stencil: Secret/bad: would be refused (not shown: you may not get it)",
		"stencil: ConfigMap/cfg: would be adopted: data.k changed, metadata.labels added",
		"stencil: ConfigMap/gone: would be pruned",
		"stencil: 2 members of kinds you may not get would be pruned or orphaned (not shown)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
