package controller

import (
	"slices"
	"testing"
)

// TestFlags: the controller's command line, which the benchmark's figures
// depend on (plain-HTTP metrics, the controller's own identity, the
// floor's limits), and the webhook's flags or --webhook-port=0.
func TestFlags(t *testing.T) {
	a := Args{Kubeconfig: "kc", Concurrency: 4, ApplyConcurrency: 8, QPS: -1, Burst: 0}
	got := a.flags("127.0.0.1:1", "127.0.0.1:2")
	for _, want := range [][]string{
		{"controller", "--kubeconfig", "kc"},
		{"--metrics-secure=false"},
		{"--write-as-controller"},
		{"--concurrency", "4", "--apply-concurrency", "8"},
		{"--kube-api-qps", "-1", "--kube-api-burst", "0"},
		{"--webhook-port=0"},
	} {
		if !containsRun(got, want) {
			t.Errorf("flags %q lack %q", got, want)
		}
	}
	a.Webhook, a.PProf = []string{"--webhook-port", "9443"}, "127.0.0.1:3"
	got = a.flags("127.0.0.1:1", "127.0.0.1:2")
	if slices.Contains(got, "--webhook-port=0") || !containsRun(got, a.Webhook) || !containsRun(got, []string{"--pprof-bind-address", "127.0.0.1:3"}) {
		t.Errorf("flags with webhook and pprof: %q", got)
	}
}

// containsRun reports whether want appears in s, in order and adjacent.
func containsRun(s, want []string) bool {
	for i := range s {
		if i+len(want) <= len(s) && slices.Equal(s[i:i+len(want)], want) {
			return true
		}
	}
	return false
}
