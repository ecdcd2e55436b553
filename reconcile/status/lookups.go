package status

import (
	"strings"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// MaxLookups is how many lookups a status lists (status.lookups); the
// rest are counted in status.lookupsOmitted.
const MaxLookups = 50

// maxLookupMessage bounds a Denied lookup's message in the status.
const maxLookupMessage = 1024

// SetLookups records in st what a render looked up (reads, sorted by key
// as lookup.Log returns them) and what each found; denied are the
// lookups the parent's identity could not make, each "<key>: <why>"
// (package reconcile/lookup). Only keys reach the status, never an
// answer.
func SetLookups(st *v1alpha1.CompositionStatus, reads []lookup.Read, denied []string) {
	st.Lookups, st.LookupsOmitted = nil, 0
	why := make(map[string]string, len(denied))
	for _, d := range denied {
		if k, msg, ok := strings.Cut(d, ": "); ok {
			why[k] = msg
		}
	}
	for _, r := range reads {
		if len(st.Lookups) == MaxLookups {
			st.LookupsOmitted = int32(len(reads) - MaxLookups) //nolint:gosec // bounded by the reads of one render
			break
		}
		l := v1alpha1.LookupStatus{APIVersion: r.Key.APIVersion, Kind: r.Key.Kind, Namespace: r.Key.Namespace, Name: r.Key.Name}
		msg, refused := why[r.Key.String()]
		switch {
		case refused:
			l.Answer, l.Message = v1alpha1.LookupDenied, truncate(msg, maxLookupMessage)
		case r.Key.List():
			l.Answer = v1alpha1.LookupListed
		case r.Hash != "":
			l.Answer = v1alpha1.LookupFound
		default:
			l.Answer = v1alpha1.LookupNotFound
		}
		st.Lookups = append(st.Lookups, l)
	}
}

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
