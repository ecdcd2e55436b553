package table

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// Versions is what the versions benchmark measured (-versions): a
// published kind's life from v1 alone to v2 alone, its figures and the
// checks that make it the end-to-end demonstration.
type Versions struct {
	N, Namespaces int
	// Create is the time from the first instance's apply to every
	// instance Ready on the first revision.
	Create time.Duration
	// Served is the time from the Bundle's change to v2 answering a
	// LIST; Rerendered to every instance Ready on the new revision.
	Served, Rerendered time.Duration
	// Change are the controller's requests from the Bundle's change until
	// the migration was done and the controller had nothing left to do.
	Change requests.Counts
	// Migration is the time from the CRD seen with v2 as its storage
	// version to the Bundle's status.storage Migrated (with the CRD's
	// status.storedVersions [v2]); Migrated is its status.storage.migrated.
	Migration time.Duration
	Migrated  int64
	// MigrationOwn are the controller's requests over the migration that
	// are the migration's (the instances' list and rewrites, the Bundle's
	// and the CRD's status); MigrationAll all of them, the new revision's
	// passes included.
	MigrationOwn, MigrationAll requests.Counts
	// Reapply is the time the N applies of the v1 YAML took; Warnings
	// counts the deprecation warnings they got.
	Reapply  time.Duration
	Warnings int
	// ListV1 and ListV2 are the LIST samples, as kubectl get lists.
	ListV1, ListV2 []time.Duration
	// ListWebhook are the API server's conversion webhook calls over the
	// LIST samples.
	ListWebhook WebhookCalls
	// Reviews are the samples of the conversion webhook converting every
	// instance to v1, in ConversionReviews of 500, as the API server
	// converts a LIST it reads from etcd.
	Reviews []time.Duration
	// MigrationWebhook and ReapplyWebhook are the API server's conversion
	// webhook calls over the storage migration and over the v1 applies.
	MigrationWebhook, ReapplyWebhook WebhookCalls
	// Removal is the time from the Bundle's change to the CRD serving
	// v2 alone; StorageMessage the Bundle's status.storage.message then.
	Removal        time.Duration
	StorageMessage string
	// Values is the time from the values Bundle's change to its
	// Composition Ready on the new revision.
	Values time.Duration
	// Checks are what must hold, in the order they were made.
	Checks []Check
}

// WebhookCalls are the API server's calls of a CRD's conversion webhook
// over a stretch, and the time they took, summed (its
// apiserver_crd_conversion_webhook_duration_seconds).
type WebhookCalls struct {
	Calls int
	Time  time.Duration
}

// per is "12 calls (1.2 per instance), 3.1 ms each on average" for n
// instances.
func (w WebhookCalls) per(n int) string {
	if w.Calls == 0 {
		return "0 calls"
	}
	return fmt.Sprintf("%d calls (%.1f per instance), %.1f ms each on average", w.Calls, perEach(w.Calls, n), perMs(w.Time, w.Calls))
}

// Check is one thing the versions benchmark demonstrates: what it is,
// what it must be and what it was.
type Check struct {
	What, Want, Got string
}

// OK reports whether the check holds.
func (c Check) OK() bool { return c.Want == c.Got }

// Check records a check.
func (v *Versions) Check(what, want, got string) {
	v.Checks = append(v.Checks, Check{What: what, Want: want, Got: got})
}

// Failed is an error naming every check that failed, nil when none did.
func (v *Versions) Failed() error {
	var errs []error
	for _, c := range v.Checks {
		if !c.OK() {
			errs = append(errs, fmt.Errorf("check failed: %s: got %s, want %s", c.What, c.Got, c.Want))
		}
	}
	return errors.Join(errs...)
}

// write writes the versions benchmark's tables.
func (v *Versions) write(out *strings.Builder) {
	fmt.Fprintf(out, "\nA published API that evolves: AppService (examples/versions) v1 → v2, %d instances in %d namespaces, each a ConfigMap and, 4 in 5, a Service\n\n", v.N, v.Namespaces)
	fmt.Fprintln(out, "| step\t| time\t|")
	fmt.Fprintln(out, "| ---\t| ---\t|")
	for _, row := range []struct {
		what string
		d    time.Duration
	}{
		{fmt.Sprintf("v1 published, %d instances applied in v1, all Ready", v.N), v.Create},
		{"v2 stored, v1 deprecated: Bundle changed → v2 served", v.Served},
		{"… → every instance Ready on the new revision", v.Rerendered},
		{"storage migration: CRD storage v2 → status.storage Migrated, storedVersions [v2]", v.Migration},
		{fmt.Sprintf("v1 YAML of the %d instances applied again (server-side apply)", v.N), v.Reapply},
		{"v1 removed: Bundle changed → CRD serves v2 alone", v.Removal},
		{"values migration: Bundle changed → its Composition Ready on the new revision", v.Values},
	} {
		fmt.Fprintf(out, "| %s\t| %s\t|\n", row.what, dur(row.d))
	}

	n := min(len(v.ListV1), len(v.ListV2))
	fmt.Fprintf(out, "\nLIST of the %d instances as kubectl get lists them (a Table, pages of 500), %d samples of each, interleaved;\n", v.N, n)
	fmt.Fprintf(out, "and the conversion webhook converting all %d to v1 in ConversionReviews of 500 (what a LIST read from etcd in v1 adds), %d samples\n\n", v.N, len(v.Reviews))
	fmt.Fprintln(out, "| \t| p50\t| p99\t| max\t|")
	fmt.Fprintln(out, "| ---\t| ---\t| ---\t| ---\t|")
	for _, row := range []struct {
		what string
		ds   []time.Duration
	}{{"LIST in v1 (served, not stored)", v.ListV1}, {"LIST in v2 (the storage version)", v.ListV2}, {"conversion webhook, every instance to v1", v.Reviews}} {
		fmt.Fprintf(out, "| %s\t| %s\t| %s\t| %s\t|\n", row.what, ms(percentile(row.ds, 50), len(row.ds)), ms(percentile(row.ds, 99), len(row.ds)), ms(percentile(row.ds, 100), len(row.ds)))
	}
	fmt.Fprintf(out, "| LIST in v1 ÷ LIST in v2\t| %s\t| %s\t| %s\t|\n", ratio(percentile(v.ListV1, 50), percentile(v.ListV2, 50)),
		ratio(percentile(v.ListV1, 99), percentile(v.ListV2, 99)), ratio(percentile(v.ListV1, 100), percentile(v.ListV2, 100)))
	fmt.Fprintf(out, "The API server's conversion webhook calls: over the LISTs %s; over the storage migration %s; over the v1 applies %s\n",
		v.ListWebhook.per(v.N), v.MigrationWebhook.per(v.N), v.ReapplyWebhook.per(v.N))
	fmt.Fprintf(out, "\nStorage migration of %d instances: %s (%s instances/s; stencil writes at most 20 a second); status.storage.migrated %d\n", v.N, dur(v.Migration), rate(v.N, v.Migration), v.Migrated)
	fmt.Fprintf(out, "Its own requests (the instances' lists and rewrites, the CRD's and the Bundle's status): %d, %.2f per instance: %s\n",
		v.MigrationOwn.Total(), perEach(v.MigrationOwn.Total(), v.N), strings.Join(v.MigrationOwn.Top(8), ", "))
	fmt.Fprintf(out, "All the controller's requests meanwhile (the new revision's passes too): %d, %.2f per instance: %s\n",
		v.MigrationAll.Total(), perEach(v.MigrationAll.Total(), v.N), strings.Join(v.MigrationAll.Top(8), ", "))
	fmt.Fprintf(out, "The controller's requests from the Bundle's change to the migration done and nothing left to do: %d (reads %d, writes %d): %s\n",
		v.Change.Total(), v.Change.Reads(), v.Change.Writes(), strings.Join(v.Change.Top(8), ", "))
	fmt.Fprintf(out, "Deprecation warnings the v1 applies got: %d of %d\n", v.Warnings, v.N)
	if v.StorageMessage != "" {
		fmt.Fprintf(out, "After v1 was removed, status.storage.message: %s\n", v.StorageMessage)
	}

	fmt.Fprintln(out, "\n| check\t| want\t| got\t| \t|")
	fmt.Fprintln(out, "| ---\t| ---\t| ---\t| ---\t|")
	for _, c := range v.Checks {
		verdict := "ok"
		if !c.OK() {
			verdict = "FAILED"
		}
		fmt.Fprintf(out, "| %s\t| %s\t| %s\t| %s\t|\n", c.What, c.Want, c.Got, verdict)
	}
}
