package reconcile_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// fourKinds renders four members ready at once.
func fourKinds() map[string]string {
	return map[string]string{"templates/all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
data:
  v: {{ .Values.v | default "1" | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Composition.Name }}
stringData:
  v: "1"
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Composition.Name }}
spec:
  ports:
  - port: 80
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Composition.Name }}
`}
}

// requestsFor returns the requests sent since mark that concern the
// Composition name of ns or its members (named like it): every request
// but watches and the cache's own lists.
func requestsFor(c *testenv.Controller, mark int, ns, name string) []string {
	var out []string
	for _, r := range c.Requests()[mark:] {
		if strings.Contains(r, "watch=true") || (strings.Contains(r, "labelSelector=applyset.kubernetes.io%2Fpart-of") && !strings.Contains(r, "part-of%3D")) {
			continue // the label-selected member cache
		}
		if strings.Contains(r, "/namespaces/"+ns+"/") && (strings.Contains(r, "/"+name+"?") || strings.HasSuffix(r, "/"+name) || strings.Contains(r, "/"+name+"/") || strings.Contains(r, "part-of%3D")) {
			out = append(out, r)
		}
	}
	return out
}

func count(reqs []string, match func(string) bool) int {
	n := 0
	for _, r := range reqs {
		if match(r) {
			n++
		}
	}
	return n
}

// TestRequestsOfAPass pins the API requests a Composition costs. Cold,
// its first pass: one apply per member and none of the reads the cache
// answers (no GET of a member not created yet, no prune LIST: the member
// cache answers it, no GET of the parent just created), one write of the
// ApplySet metadata on the parent (none with the mutating webhook, see
// TestRequestsOfAnAdmittedPass) and one of its status; over the whole
// convergence, no other write of the parent and no event. A full pass
// that changes nothing (forced by a label) writes nothing and lists
// nothing. Only the requests of this test's namespace that concern the
// Composition or its members are counted (requestsFor).
func TestRequestsOfAPass(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "requests-"+ns, fourKinds())
	// A first Composition starts the watches of the four kinds.
	mustCreate(t, composition(ns, "warm", b.Name, ""))
	condition(t, ns, "warm", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)

	mark := len(controller.Requests())
	mustCreate(t, composition(ns, "cold", b.Name, ""))
	condition(t, ns, "cold", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	reqs := requestsFor(controller, mark, ns, "cold")
	memberPaths := []string{"/configmaps/cold", "/secrets/cold", "/services/cold", "/serviceaccounts/cold"}
	memberOf := func(r string) string {
		for _, p := range memberPaths {
			if strings.Contains(r, p+"?") || strings.HasSuffix(r, p) {
				return p
			}
		}
		return ""
	}
	isMember := func(r string) bool { return memberOf(r) != "" }
	id := applyset.ID("cold", ns, applyset.CompositionGroupKind)
	checks := []struct {
		what  string
		match func(string) bool
		want  int
	}{
		{"member GETs", func(r string) bool { return strings.HasPrefix(r, "GET ") && isMember(r) }, 0},
		// The set's own: another set's pass in the namespace is not this one's.
		{"prune LISTs", func(r string) bool { return strings.Contains(r, "part-of%3D"+id) }, 0},
		{"member applies", func(r string) bool { return strings.HasPrefix(r, "PATCH ") && isMember(r) }, 4},
		{"parent metadata writes", func(r string) bool {
			return strings.HasPrefix(r, "PATCH ") && strings.Contains(r, "/compositions/cold") && !strings.Contains(r, "/status")
		}, 1},
		// Ready at once from the apply's answers, not Reconciling until
		// the cache catches up.
		{"status writes", func(r string) bool {
			return strings.HasPrefix(r, "PATCH ") && strings.Contains(r, "/compositions/cold/status")
		}, 1},
	}
	// The first pass ends with its status write. The passes its members'
	// events bring next may find one of them not yet in the member cache
	// (its event is on its way): such a pass sends the create its apply
	// would (refused: the member exists) and reads the member live, as it
	// rightly may; so the member counts are the first pass's.
	first := slices.IndexFunc(reqs, checks[4].match)
	if first < 0 {
		t.Fatalf("cold converge: no status write; requests:\n%s", strings.Join(reqs, "\n"))
	}
	for _, c := range checks {
		if got := count(reqs[:first+1], c.match); got != c.want {
			t.Errorf("cold converge, first pass: %d %s, want %d; requests:\n%s", got, c.what, c.want, strings.Join(reqs, "\n"))
		}
	}
	for _, c := range checks[1:] {
		if c.what == "member applies" {
			continue
		}
		if got := count(reqs, c.match); got != c.want {
			t.Errorf("cold converge: %d %s, want %d; requests:\n%s", got, c.what, c.want, strings.Join(reqs, "\n"))
		}
	}
	laterWritesReadLive(t, reqs, first, memberOf)
	// A parent just created, never reconciled, is trusted from the cache
	// (see cacheTrusted): its first pass, which ends with its status
	// write, reads it not once. (A later pass, brought by the members'
	// events, may find the cache behind that write and read it live.)
	if got := count(reqs[:first+1], func(r string) bool {
		return strings.HasPrefix(r, "GET ") && strings.Contains(r, "/compositions/cold")
	}); got != 0 {
		t.Errorf("cold converge: %d parent GETs in the first pass, want none; requests:\n%s", got, strings.Join(reqs, "\n"))
	}
	// No event for a first pass that only created members: the status's
	// transition to Ready says it (see status.Events.FirstPass). The
	// recorder writes asynchronously: the controller has settled.
	eventWrites := func() int {
		return count(controller.Requests()[mark:], func(r string) bool {
			return strings.HasPrefix(r, "POST /apis/events.k8s.io/v1/namespaces/"+ns+"/events")
		})
	}
	if got := eventWrites(); got != 0 {
		t.Errorf("cold converge: %d event writes, want none (the first pass created its members)", got)
	}

	// A label change brings a full pass (templates read labels) that
	// finds everything in place: no write of a member or of the parent's
	// metadata, and no prune LIST. The renders since the convergence are
	// counted from now: the convergence made more than one.
	mark = len(controller.Requests())
	renders := controller.Renders(ns, "cold")
	c := mustGet(t, ns, "cold")
	update(t, c, func(c *v1alpha1.Composition) { c.Labels["touched"] = "yes" })
	eventually(t, "the full pass after the label change", func() (bool, error) {
		return controller.Renders(ns, "cold") > renders, fmt.Errorf("%d renders since the label change", controller.Renders(ns, "cold")-renders)
	})
	controller.Settle(t, ns)
	reqs = requestsFor(controller, mark, ns, "cold")
	for _, c := range checks[:2] {
		if got := count(reqs, c.match); got != 0 {
			t.Errorf("unchanged pass: %d %s, want 0; requests:\n%s", got, c.what, strings.Join(reqs, "\n"))
		}
	}
	if got := count(reqs, func(r string) bool {
		return r[0] == 'P' && r[1] != 'O' && !strings.Contains(r, "/status") && !strings.Contains(r, "/events")
	}); got != 0 {
		t.Errorf("unchanged pass: %d writes, want none; requests:\n%s", got, strings.Join(reqs, "\n"))
	}
}

// laterWritesReadLive checks the passes after the first (reqs[first+1:]):
// a later pass writes a member only as the refused create of a member its
// cache did not hold yet, which it then reads live.
func laterWritesReadLive(t *testing.T, reqs []string, first int, memberOf func(string) string) {
	t.Helper()
	later := reqs[first+1:]
	for i, r := range later {
		if !strings.HasPrefix(r, "PATCH ") || memberOf(r) == "" {
			continue
		}
		if !slices.ContainsFunc(later[i+1:], func(g string) bool { return strings.HasPrefix(g, "GET ") && memberOf(g) == memberOf(r) }) {
			t.Errorf("cold converge: a later pass wrote %s and did not read it live after (a create the cache's lag caused would be): requests:\n%s", memberOf(r), strings.Join(reqs, "\n"))
		}
	}
}
