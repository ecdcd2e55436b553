package reconcile_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
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

// TestRequestsOfAPass pins the API requests a Composition costs. Cold: one
// apply per member and none of the reads the cache answers (no GET of a
// member not created yet, no prune LIST: the member cache answers it, no
// GET of the parent just created), one write of the ApplySet metadata on
// the parent (none with the mutating webhook, see
// TestRequestsOfAnAdmittedPass), one of its status and no event. A full pass that changes nothing (forced by a label)
// writes nothing and lists nothing.
func TestRequestsOfAPass(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "requests-"+ns, fourKinds())
	// A first Composition starts the watches of the four kinds.
	mustCreate(t, composition(ns, "warm", b.Name, ""))
	condition(t, ns, "warm", v1alpha1.ConditionReady, metav1.ConditionTrue)
	settle(t, "the controller", controller)

	mark := len(controller.Requests())
	mustCreate(t, composition(ns, "cold", b.Name, ""))
	condition(t, ns, "cold", v1alpha1.ConditionReady, metav1.ConditionTrue)
	settle(t, "the controller", controller)
	reqs := requestsFor(controller, mark, ns, "cold")
	memberPaths := []string{"/configmaps/cold", "/secrets/cold", "/services/cold", "/serviceaccounts/cold"}
	isMember := func(r string) bool {
		for _, p := range memberPaths {
			if strings.Contains(r, p) {
				return true
			}
		}
		return false
	}
	checks := []struct {
		what  string
		match func(string) bool
		want  int
	}{
		{"member GETs", func(r string) bool { return strings.HasPrefix(r, "GET ") && isMember(r) }, 0},
		{"prune LISTs", func(r string) bool { return strings.Contains(r, "part-of%3D") }, 0},
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
	for _, c := range checks {
		if got := count(reqs, c.match); got != c.want {
			t.Errorf("cold converge: %d %s, want %d; requests:\n%s", got, c.what, c.want, strings.Join(reqs, "\n"))
		}
	}
	// A parent just created, never reconciled, is trusted from the cache
	// (see cacheTrusted): its first pass, which ends with its status
	// write, reads it not once. (A later pass, brought by the members'
	// events, may find the cache behind that write and read it live.)
	first := slices.IndexFunc(reqs, func(r string) bool {
		return strings.HasPrefix(r, "PATCH ") && strings.Contains(r, "/compositions/cold/status")
	})
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
	// metadata, and no prune LIST.
	mark = len(controller.Requests())
	c := mustGet(t, ns, "cold")
	update(t, c, func(c *v1alpha1.Composition) { c.Labels["touched"] = "yes" })
	eventually(t, "the full pass after the label change", func() (bool, error) {
		return controller.Renders(ns, "cold") >= 2, fmt.Errorf("%d renders", controller.Renders(ns, "cold"))
	})
	settle(t, "the controller", controller)
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
