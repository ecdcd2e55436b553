package status_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/status"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// TestSetLookups: each lookup a render made is recorded with what it
// found (an object, none, a list, or refused with the reason), and no
// more than status.MaxLookups of them, the rest counted.
func TestSetLookups(t *testing.T) {
	found := lookup.Key{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}
	missing := lookup.Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "gone"}
	list := lookup.Key{APIVersion: "v1", Kind: "Namespace"}
	refused := lookup.Key{APIVersion: "v1", Kind: "Secret", Namespace: "kube-system", Name: "token"}
	st := v1alpha1.CompositionStatus{}
	status.SetLookups(&st, []lookup.Read{
		{Key: found, Hash: "h1", Given: true},
		{Key: missing, Given: true},
		{Key: list, Hash: "h2", Given: true},
		{Key: refused, Given: true},
	}, []string{refused.String() + ": ServiceAccount shop/stencil may not get secrets in kube-system"})
	want := []v1alpha1.LookupStatus{
		{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db", Answer: v1alpha1.LookupFound},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "gone", Answer: v1alpha1.LookupNotFound},
		{APIVersion: "v1", Kind: "Namespace", Answer: v1alpha1.LookupListed},
		{APIVersion: "v1", Kind: "Secret", Namespace: "kube-system", Name: "token", Answer: v1alpha1.LookupDenied,
			Message: "ServiceAccount shop/stencil may not get secrets in kube-system"},
	}
	if diff := cmp.Diff(want, st.Lookups); diff != "" || st.LookupsOmitted != 0 {
		t.Errorf("lookups (-want +got):\n%s\nomitted %d", diff, st.LookupsOmitted)
	}

	// Many lookups, and a long reason: bounded.
	var reads []lookup.Read
	var denied []string
	for i := range status.MaxLookups + 7 {
		k := lookup.Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%03d", i)}
		reads = append(reads, lookup.Read{Key: k})
		denied = append(denied, k.String()+": "+strings.Repeat("é", 1000))
	}
	status.SetLookups(&st, reads, denied)
	if len(st.Lookups) != status.MaxLookups || st.LookupsOmitted != 7 {
		t.Errorf("%d lookups listed, %d omitted; want %d and 7", len(st.Lookups), st.LookupsOmitted, status.MaxLookups)
	}
	if m := st.Lookups[0].Message; len(m) > 1024 || !strings.HasPrefix(m, "éé") || strings.ToValidUTF8(m, "?") != m {
		t.Errorf("a Denied lookup's message of %d bytes, want at most 1024 of whole runes", len(m))
	}

	// A render that looks nothing up clears what the last one recorded.
	status.SetLookups(&st, nil, nil)
	if st.Lookups != nil || st.LookupsOmitted != 0 {
		t.Errorf("after a render with no lookups: %+v, %d", st.Lookups, st.LookupsOmitted)
	}
}
