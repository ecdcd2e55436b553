package trace_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/trace"
)

// TestPrintLookups: the table lists each lookup of the parent's last
// render with what it found (a Denied one with why), ten unless -o wide,
// and counts the rest, those the status omitted included.
func TestPrintLookups(t *testing.T) {
	tr := &trace.Trace{
		Parent: trace.Node{APIVersion: "stencil.dev/v1alpha1", Kind: "Composition", Namespace: "shop", Name: "web", Ready: "True"},
		Lookups: []v1alpha1.LookupStatus{
			{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db", Answer: v1alpha1.LookupFound},
			{APIVersion: "v1", Kind: "Namespace", Answer: v1alpha1.LookupListed},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Answer: v1alpha1.LookupListed},
			{APIVersion: "v1", Kind: "Secret", Namespace: "kube-system", Name: "token", Answer: v1alpha1.LookupDenied, Message: "ServiceAccount shop/stencil\nmay not get secrets"},
		},
	}
	var out bytes.Buffer
	if err := trace.Print(&out, tr, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Lookup: Found v1 Secret shop/db\n",
		"Lookup: Listed v1 Namespace (list)\n",
		"Lookup: Listed v1 ConfigMap shop/(list)\n",
		"Lookup: Denied v1 Secret kube-system/token: ServiceAccount shop/stencil may not get secrets\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("trace lacks %q:\n%s", want, out.String())
		}
	}

	tr.Lookups = nil
	for i := range 12 {
		tr.Lookups = append(tr.Lookups, v1alpha1.LookupStatus{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i), Answer: v1alpha1.LookupNotFound})
	}
	tr.LookupsOmitted = 5
	for format, want := range map[string]struct{ lines, more int }{"": {10, 7}, "wide": {12, 5}} {
		out.Reset()
		if err := trace.Print(&out, tr, format, time.Now()); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), " NotFound v1 ConfigMap shop/cm-"); n != want.lines || !strings.Contains(out.String(), fmt.Sprintf("%d more", want.more)) {
			t.Errorf("-o %q: %d lookups listed, want %d and %d more:\n%s", format, n, want.lines, want.more, out.String())
		}
	}
}
