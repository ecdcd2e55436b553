package table

import (
	"strings"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/options"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// TestPrintVersions: with the versions benchmark's results, its tables
// instead of the others: the steps' times, the LIST percentiles in v1
// and v2 and their ratio, the migration's rate and requests per
// instance, and every check with its verdict.
func TestPrintVersions(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	v := &Versions{N: 100, Namespaces: 10, Create: 20 * time.Second, Migration: 5 * time.Second, Migrated: 100,
		ListV1: ms(40, 30, 50, 200), ListV2: ms(10, 20, 10, 40), Reviews: ms(100, 120),
		MigrationWebhook: WebhookCalls{Calls: 8, Time: 160 * time.Millisecond},
		MigrationOwn:     requests.Counts{"update appservices.app.example.com": 100, "list appservices.app.example.com": 2},
		MigrationAll:     requests.Counts{"update appservices.app.example.com": 100, "patch appservices.app.example.com/status": 100}}
	v.Check("writes to children", "0", "0")
	v.Check("instances changed by the v1 applies", "0", "3")
	r := &Results{Version: "v1", CountedBy: "the audit log", Versions: v}
	var b strings.Builder
	r.Print(&b, options.Options{N: 100}, 2)
	out := b.String()
	for _, want := range []string{
		"stencil v1 on 2 CPUs; requests counted by the audit log\n",
		"AppService (examples/versions) v1 → v2, 100 instances in 10 namespaces",
		"| v1 published, 100 instances applied in v1, all Ready ",
		"| 20s  |",
		"| LIST in v1 (served, not stored)          | 40ms  | 200ms | 200ms |",
		"| LIST in v2 (the storage version)         | 10ms  | 40ms  | 40ms  |",
		"| conversion webhook, every instance to v1 | 100ms | 120ms | 120ms |",
		"| LIST in v1 ÷ LIST in v2                  | 4.00× | 5.00× | 5.00× |",
		"The API server's conversion webhook calls: over the LISTs 0 calls; over the storage migration 8 calls (0.1 per instance), 20.0 ms each on average; over the v1 applies 0 calls\n",
		"Storage migration of 100 instances: 5s (20 instances/s;",
		"Its own requests (the instances' lists and rewrites, the CRD's and the Bundle's status): 102, 1.02 per instance: 100 update appservices.app.example.com, 2 list appservices.app.example.com\n",
		"| writes to children                  | 0    | 0   | ok     |",
		"| instances changed by the v1 applies | 0    | 3   | FAILED |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Cold converge") || strings.Contains(out, "Rollout of") {
		t.Errorf("the versions benchmark's output has another's tables:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(strings.TrimSuffix(line, "\n"), " ") {
			t.Errorf("line %q ends in a space", line)
		}
	}
}

// TestVersionsFailed: no error while every check holds; one naming each
// check that does not.
func TestVersionsFailed(t *testing.T) {
	v := &Versions{}
	v.Check("writes to children", "0", "0")
	if err := v.Failed(); err != nil {
		t.Errorf("Failed = %v with every check holding", err)
	}
	v.Check("instances Ready", "100", "99")
	v.Check("storedVersions", "[v2]", "[v1 v2]")
	err := v.Failed()
	if err == nil {
		t.Fatal("Failed = nil with two checks failing")
	}
	want := "check failed: instances Ready: got 99, want 100\ncheck failed: storedVersions: got [v1 v2], want [v2]"
	if err.Error() != want {
		t.Errorf("Failed = %q, want %q", err, want)
	}
}
