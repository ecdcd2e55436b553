package revision_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/templates"
)

const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestName(t *testing.T) {
	for _, tc := range []struct{ bundle, want string }{
		{"web", "web-0123456789"},
		{strings.Repeat("a", 253), strings.Repeat("a", 242) + "-0123456789"},
		{strings.Repeat("a", 241) + ".b", strings.Repeat("a", 241) + "-0123456789"}, // cut after the dot
	} {
		if got := revision.Name(tc.bundle, hash); got != tc.want || len(got) > 253 {
			t.Errorf("Name(%d chars) = %q (%d chars), want %q", len(tc.bundle), got, len(got), tc.want)
		}
	}
}

func TestNewKeepsWhatParentsRender(t *testing.T) {
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}, Spec: v1alpha1.BundleSpec{
		Files:             map[string]string{"templates/a.yaml": "x"},
		NamespaceSelector: &metav1.LabelSelector{},
		Rollout:           &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves},
		Revisions:         &v1alpha1.RevisionPolicy{HistoryLimit: ptr.To[int32](3)},
		Pruning:           &v1alpha1.PrunePolicy{},
		Outputs:           []v1alpha1.BundleOutput{{Name: "a", Type: "string", Value: "'a'"}},
	}}
	rev := revision.New(b, hash, 4)
	want := v1alpha1.BundleSpec{Files: b.Spec.Files, Outputs: b.Spec.Outputs}
	if d := cmp.Diff(want, rev.Spec.Template); d != "" {
		t.Errorf("template (-want +got):\n%s", d)
	}
	if rev.Name != "web-0123456789" || rev.Spec.Number != 4 || rev.Spec.Bundle != "web" || !revision.Of(rev, b) {
		t.Errorf("revision %s number %d of %q, Of = %v", rev.Name, rev.Spec.Number, rev.Spec.Bundle, revision.Of(rev, b))
	}
	// A parent on it renders its content with the Bundle's own policies.
	b2 := b.DeepCopy()
	b2.Spec.Files = map[string]string{"templates/b.yaml": "y"}
	got, err := revision.Bundle(b2, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Files["templates/a.yaml"] != "x" || got.Spec.Rollout == nil || got.Spec.NamespaceSelector == nil || got.Name != "web" {
		t.Errorf("Bundle() = %+v", got.Spec)
	}
	other := b.DeepCopy()
	other.UID = "u2"
	if revision.Of(rev, other) {
		t.Error("a revision of a Bundle of the same name made anew is taken for the new one's")
	}
}

func TestSourceRevision(t *testing.T) {
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "chart", UID: "u", Generation: 7}, Spec: v1alpha1.BundleSpec{
		Source: &v1alpha1.BundleSource{OCI: "oci://r.example/c:1", Verify: &v1alpha1.SourceVerification{Provider: "cosign"}},
	}, Status: v1alpha1.BundleStatus{Source: &v1alpha1.SourceStatus{Digest: "sha256:aa", Verified: "cosign", KeysFingerprint: "sha256:k1", VerifiedGeneration: 5}}}
	rev := revision.New(b, hash, 1)
	if rev.Spec.Source == nil || rev.Spec.Source.Digest != "sha256:aa" || rev.Spec.Template.Files != nil {
		t.Fatalf("source revision %+v", rev.Spec)
	}
	got, err := revision.Bundle(b, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 5 || got.Status.Source.Digest != "sha256:aa" {
		t.Errorf("rendered as generation %d of digest %s", got.Generation, got.Status.Source.Digest)
	}
	rotated := b.DeepCopy()
	rotated.Status.Source.KeysFingerprint = "sha256:k2"
	var nv *revision.NotVerifiedError
	if _, err := revision.Bundle(rotated, rev); !errors.As(err, &nv) {
		t.Errorf("after a key rotation: %v, want a NotVerifiedError", err)
	}
}

func TestPrune(t *testing.T) {
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.BundleSpec{
		Revisions: &v1alpha1.RevisionPolicy{HistoryLimit: ptr.To[int32](2), Withdrawn: []string{"r5"}},
	}}
	rev := func(name string, n int64, parents, pinned int32) v1alpha1.BundleRevision {
		return v1alpha1.BundleRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.BundleRevisionSpec{Number: n},
			Status: v1alpha1.BundleRevisionStatus{Shards: []v1alpha1.RevisionShardStatus{{Parents: parents, Pinned: pinned}}}}
	}
	revs := []v1alpha1.BundleRevision{rev("r1", 1, 0, 0), rev("r2", 2, 3, 0), rev("r3", 3, 0, 1), rev("r4", 4, 0, 0),
		rev("r5", 5, 0, 0), rev("r6", 6, 0, 0), rev("r7", 7, 0, 0)}
	needed := func(n string) bool { return n == "r4" }
	var got []string
	for _, r := range revision.Prune(b, revs, needed) {
		got = append(got, r.Name)
	}
	// r7, r6 within the limit; r5 withdrawn and unused; r4 needed; r3 pinned; r2 used.
	if d := cmp.Diff([]string{"r5", "r1"}, got); d != "" {
		t.Errorf("pruned (-want +got):\n%s", d)
	}
	if n := revision.NextNumber(revs); n != 8 {
		t.Errorf("NextNumber = %d, want 8", n)
	}
}

// TestPermissionsBothAllow: a revision renders with what both it and its
// Bundle's current spec allow; "*" is every kind of a group, every
// namespace.
func TestPermissionsBothAllow(t *testing.T) {
	gk := func(group, kind string) v1alpha1.GroupKind { return v1alpha1.GroupKind{Group: group, Kind: kind} }
	for _, tc := range []struct {
		name     string
		recorded v1alpha1.BundlePermissions
		current  v1alpha1.BundlePermissions
		want     v1alpha1.BundlePermissions
		wantCRDs v1alpha1.CRDPolicy
		rec, cur v1alpha1.CRDPolicy
	}{
		{name: "narrowed to nothing", recorded: v1alpha1.BundlePermissions{Namespaces: []string{"*"}, ClusterScoped: []v1alpha1.GroupKind{gk("rbac.authorization.k8s.io", "*")}}},
		{name: "every namespace within a list", recorded: v1alpha1.BundlePermissions{Namespaces: []string{"*"}}, current: v1alpha1.BundlePermissions{Namespaces: []string{"a"}},
			want: v1alpha1.BundlePermissions{Namespaces: []string{"a"}}},
		{name: "a list within every namespace", recorded: v1alpha1.BundlePermissions{Namespaces: []string{"a", "b"}}, current: v1alpha1.BundlePermissions{Namespaces: []string{"*"}},
			want: v1alpha1.BundlePermissions{Namespaces: []string{"a", "b"}}},
		{name: "widened: only what the revision had", recorded: v1alpha1.BundlePermissions{Namespaces: []string{"a"}}, current: v1alpha1.BundlePermissions{Namespaces: []string{"a", "b"}},
			want: v1alpha1.BundlePermissions{Namespaces: []string{"a"}}},
		{name: "lists meet", recorded: v1alpha1.BundlePermissions{Namespaces: []string{"a", "b", "c"}}, current: v1alpha1.BundlePermissions{Namespaces: []string{"c", "a"}},
			want: v1alpha1.BundlePermissions{Namespaces: []string{"c", "a"}}}, // in the current order
		{name: "kinds of a group",
			recorded: v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{gk("rbac.authorization.k8s.io", "*"), gk("", "Namespace")}, Adopt: []v1alpha1.GroupKind{gk("apps", "Deployment")}},
			current:  v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{gk("rbac.authorization.k8s.io", "ClusterRole")}, Adopt: []v1alpha1.GroupKind{gk("apps", "*")}},
			want:     v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{gk("rbac.authorization.k8s.io", "ClusterRole")}, Adopt: []v1alpha1.GroupKind{gk("apps", "Deployment")}}},
		{name: "crds replace narrowed to create", rec: v1alpha1.CRDsCreateReplace, cur: "", wantCRDs: ""},
		{name: "crds skipped now", rec: v1alpha1.CRDsCreate, cur: v1alpha1.CRDsSkip, wantCRDs: v1alpha1.CRDsSkip},
		{name: "crds widened: the revision's", rec: v1alpha1.CRDsSkip, cur: v1alpha1.CRDsCreateReplace, wantCRDs: v1alpha1.CRDsSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, revision.Permissions(tc.current, tc.recorded)); d != "" {
				t.Errorf("Permissions (-want +got):\n%s", d)
			}
			if got := revision.CRDs(tc.cur, tc.rec); got != tc.wantCRDs {
				t.Errorf("CRDs(%q, %q) = %q, want %q", tc.cur, tc.rec, got, tc.wantCRDs)
			}
		})
	}
}

// TestWithinNarrowsFromTheContent: a revision rendered within a policy is
// bound by what both allow, again from its content's own policy when it
// is bound anew (a new version's policy, previewed); Narrows says whether
// a policy takes anything away.
func TestWithinNarrowsFromTheContent(t *testing.T) {
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: v1alpha1.BundleSpec{
		Files:       map[string]string{"templates/a.yaml": ""},
		Permissions: v1alpha1.BundlePermissions{Namespaces: []string{"a", "b"}},
		CRDs:        v1alpha1.CRDsCreateReplace,
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := revision.Within(b, v1alpha1.BundlePermissions{Namespaces: []string{"a"}}, v1alpha1.CRDsSkip)
	if got := now.Permissions().Namespaces; !slices.Equal(got, []string{"a"}) || now.CRDPolicy() != v1alpha1.CRDsSkip {
		t.Errorf("within the current policy: %v, %q", got, now.CRDPolicy())
	}
	next := revision.Within(now, v1alpha1.BundlePermissions{Namespaces: []string{"*"}}, v1alpha1.CRDsCreateReplace)
	if got := next.Permissions().Namespaces; !slices.Equal(got, []string{"a", "b"}) || next.CRDPolicy() != v1alpha1.CRDsCreateReplace {
		t.Errorf("within a wider new version: %v, %q, want the revision's own", got, next.CRDPolicy())
	}
	for _, tc := range []struct {
		perms v1alpha1.BundlePermissions
		crds  v1alpha1.CRDPolicy
		want  bool
	}{
		{v1alpha1.BundlePermissions{Namespaces: []string{"*"}}, v1alpha1.CRDsCreateReplace, false},
		{v1alpha1.BundlePermissions{Namespaces: []string{"b", "a", "c"}}, v1alpha1.CRDsCreateReplace, false},
		{v1alpha1.BundlePermissions{Namespaces: []string{"a"}}, v1alpha1.CRDsCreateReplace, true},
		{v1alpha1.BundlePermissions{Namespaces: []string{"a", "b"}}, v1alpha1.CRDsCreate, true},
	} {
		if got := revision.Narrows(now, tc.perms, tc.crds); got != tc.want {
			t.Errorf("Narrows(%+v, %q) = %v, want %v", tc.perms, tc.crds, got, tc.want)
		}
	}
}
