package versions

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// run is one run of the versions benchmark: what its steps share.
type run struct {
	h   *harness.Harness
	p   *controller.Process
	v   *table.Versions
	ex  example
	in  *instances
	ls  *lister
	nss []string
	// revs are the published Bundle's revisions, in order.
	revs []string
	// original are the children's resourceVersions once the first
	// revision was Ready: no step after may move one.
	original stamps
}

// Run runs the versions benchmark into res.Versions. It returns an error
// when a step fails or, at the end, when a check did not hold.
func Run(ctx context.Context, h *harness.Harness, res *table.Results) error {
	if h.Audit == nil {
		return errors.New("the versions benchmark counts requests in the API server's audit log: run it on the local cluster, or give -audit-log and -audit-user")
	}
	if len(h.Ctrl.Webhook) == 0 {
		return errors.New("the versions benchmark needs the controller's webhook server (the conversion webhook): run it on the local cluster with -webhook")
	}
	ex, err := loadExample(h.Root)
	if err != nil {
		return err
	}
	r := &run{h: h, ex: ex, v: &table.Versions{N: h.Options.N, Namespaces: min(namespaces, h.Options.N)}}
	res.Versions = r.v
	for i := range r.v.Namespaces {
		r.nss = append(r.nss, namespace(i))
	}
	if r.in, err = newInstances(h.AdminRC, h.Options.N, r.v.Namespaces); err != nil {
		return err
	}
	if r.ls, err = newLister(h.AdminRC); err != nil {
		return err
	}
	if r.p, err = controller.Start(ctx, h.Ctrl, 1); err != nil {
		return err
	}
	defer func() { r.p.Stop() }()
	progress.Logf("controller started (pid %d); its log is in %s", r.p.PID(), h.Ctrl.LogDir)
	if err := h.WaitAdmission(ctx); err != nil {
		return err
	}
	for _, step := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"publish v1", r.publish},
		{"v2 as the storage version", r.evolve},
		{"v1 applied again", r.reapply},
		{"lists in v1 and v2", r.lists},
		{"v1 removed", r.removeV1},
		{"values migration", r.valuesMigration},
	} {
		if err := step.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
	}
	return r.v.Failed()
}

// settle waits until the controller has nothing left to do.
func (r *run) settle(ctx context.Context) error {
	_, err := r.p.Settled(ctx, 10*time.Minute)
	return err
}

// publish is step 1: the Bundle in the single-version form (v1), the N
// instances applied in v1 across the namespaces, every one Ready, and
// their children's resourceVersions recorded.
func (r *run) publish(ctx context.Context) error {
	h := r.h
	for _, ns := range append([]string{valuesNamespace}, r.nss...) {
		if err := h.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	progress.Logf("versions: publishing %s v1 (Bundle %s, the single-version form)", kind, bundleName)
	if err := h.Admin.Create(ctx, bundle(bundleName, r.ex.firstSpec())); err != nil {
		return fmt.Errorf("create Bundle %s: %w", bundleName, err)
	}
	rev, err := revision(ctx, h.Admin, bundleName, "")
	if err != nil {
		return err
	}
	r.revs = append(r.revs, rev)
	if _, err := waitCRD(ctx, h.Admin, 2*time.Minute, "v1 Established", storedIn("v1")); err != nil {
		return err
	}
	// The kind's admission (stencil's policy binding, the webhook entry)
	// follows the CRD: a dry run says when an instance is admitted.
	var last error
	if err := wait.PollEvery(ctx, 500*time.Millisecond, 2*time.Minute, "an instance admitted", func() (bool, error) {
		last = r.in.apply(ctx, 0, true)
		return last == nil, nil
	}); err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	progress.Logf("versions: applying %d instances in v1 over %d namespaces", r.v.N, len(r.nss))
	start := time.Now()
	if err := r.in.applyAll(ctx); err != nil {
		return err
	}
	if err := r.in.waitReady(ctx, "v1", rev, 30*time.Minute); err != nil {
		return err
	}
	r.v.Create = time.Since(start)
	if err := r.settle(ctx); err != nil {
		return err
	}
	if r.original, err = children(ctx, h.Admin, r.nss...); err != nil {
		return err
	}
	r.v.Check("children rendered (a ConfigMap each, a Service for 4 in 5)", fmt.Sprint(wantChildren(r.v.N)), fmt.Sprint(len(r.original)))
	return nil
}

// evolve is step 2: the Bundle changed to v1 deprecated beside v2
// stored, the time until v2 is served, until every instance is Ready on
// the new revision and until the storage is migrated; the controller's
// writes to children over all of it (none), and the migration's own
// requests.
func (r *run) evolve(ctx context.Context) error {
	h := r.h
	items, err := r.in.list(ctx, "v1")
	if err != nil {
		return err
	}
	_, generations := instanceStamps(items)
	progress.Logf("versions: v2 made the storage version, v1 deprecated and served")
	from := time.Now()
	if err := setBundle(ctx, h.Admin, bundleName, r.ex.evolvedSpec()); err != nil {
		return err
	}
	stored, err := waitCRD(ctx, h.Admin, 5*time.Minute, "v2 as its storage version", storedIn("v2"))
	if err != nil {
		return err
	}
	webhookAtStorage, err := r.ls.webhook(ctx)
	if err != nil {
		return err
	}
	if err := wait.Poll(ctx, time.Minute, func() (bool, error) {
		_, err := r.in.dyn.Resource(gvr("v2")).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("a LIST of v2: %w", err)
	}
	r.v.Served = time.Since(from)
	rev, err := revision(ctx, h.Admin, bundleName, r.revs[len(r.revs)-1])
	if err != nil {
		return err
	}
	r.revs = append(r.revs, rev)
	// The migration and the new revision's passes run at once: each is
	// timed by its own wait.
	type result struct {
		st      *v1alpha1.StorageStatus
		done    time.Time
		webhook table.WebhookCalls
		err     error
	}
	migrated := make(chan result, 1)
	go func() {
		st, done, err := waitMigrated(ctx, h.Admin, "v2", 30*time.Minute)
		after, werr := r.ls.webhook(ctx)
		migrated <- result{st, done, after.Minus(webhookAtStorage), errors.Join(err, werr)}
	}()
	err = r.in.waitReady(ctx, "v2", rev, 30*time.Minute)
	r.v.Rerendered = time.Since(from)
	m := <-migrated
	if err != nil {
		return err
	}
	if m.err != nil {
		return m.err
	}
	r.v.Migration, r.v.Migrated, r.v.MigrationWebhook = m.done.Sub(stored), m.st.Migrated, m.webhook
	progress.Logf("versions: migrated in %s; waiting for the controller to settle", r.v.Migration.Round(10*time.Millisecond))
	return r.evolved(ctx, generations, from, stored, m.done)
}

// evolved checks step 2 once the controller has nothing left to do: the
// controller's requests since the Bundle changed (at from), none a write
// to a child; those over the migration (from stored to done); the
// children and the instances' generations as they were; every instance
// Ready on the new revision; the storage migrated.
func (r *run) evolved(ctx context.Context, generations stamps, from, stored, done time.Time) error {
	h := r.h
	if err := r.settle(ctx); err != nil {
		return err
	}
	var err error
	if r.v.Change, err = h.Audit.Count(h.AuditUser, from, time.Now()); err != nil {
		return err
	}
	if r.v.MigrationAll, err = h.Audit.Count(h.AuditUser, stored, done); err != nil {
		return err
	}
	r.v.MigrationOwn = migrationOwn(r.v.MigrationAll)
	after, err := children(ctx, h.Admin, r.nss...)
	if err != nil {
		return err
	}
	items, err := r.in.list(ctx, "v2")
	if err != nil {
		return err
	}
	_, generationsAfter := instanceStamps(items)
	crd, err := getCRD(ctx, h.Admin)
	if err != nil {
		return err
	}
	r.v.Check("writes to children, from the Bundle's change to the storage migrated", "0", fmt.Sprint(childWrites(r.v.Change)))
	r.v.Check("children whose resourceVersion moved", "0", count(moved(r.original, after)))
	r.v.Check("instances whose generation moved", "0", count(moved(generations, generationsAfter)))
	r.v.Check(fmt.Sprintf("instances Ready on the new revision, read in v2 (of %d)", r.v.N), fmt.Sprint(r.v.N), fmt.Sprint(readyOn(items, r.revs[len(r.revs)-1])))
	r.v.Check("status.storage.migrated", fmt.Sprint(r.v.N), fmt.Sprint(r.v.Migrated))
	r.v.Check("CRD status.storedVersions", "[v2]", fmt.Sprint(crd.Status.StoredVersions))
	return nil
}

// reapply is step 3: the v1 YAML of every instance applied again
// (server-side apply, the field manager that created them), as a GitOps
// tool still holding v1 would: converted by the webhook, it changes
// nothing.
func (r *run) reapply(ctx context.Context) error {
	h := r.h
	v1, err := r.in.list(ctx, "v1")
	if err != nil {
		return err
	}
	r.v.Check("instances read in v1 as their v1 YAML wrote them (no conversion annotation shown)", "0", count(notAsWritten(v1, r.v.N, len(r.nss))))
	items, err := r.in.list(ctx, "v2")
	if err != nil {
		return err
	}
	rvs, generations := instanceStamps(items)
	progress.Logf("versions: applying the v1 YAML of the %d instances again", r.v.N)
	r.in.warned.n.Store(0)
	webhook, err := r.ls.webhook(ctx)
	if err != nil {
		return err
	}
	from := time.Now()
	if err := r.in.applyAll(ctx); err != nil {
		return err
	}
	r.v.Reapply = time.Since(from)
	after, err := r.ls.webhook(ctx)
	if err != nil {
		return err
	}
	r.v.ReapplyWebhook = after.Minus(webhook)
	r.v.Warnings = int(r.in.warned.n.Load())
	if err := r.settle(ctx); err != nil {
		return err
	}
	counts, err := h.Audit.Count(h.AuditUser, from, time.Now())
	if err != nil {
		return err
	}
	if items, err = r.in.list(ctx, "v2"); err != nil {
		return err
	}
	rvsAfter, generationsAfter := instanceStamps(items)
	childrenAfter, err := children(ctx, h.Admin, r.nss...)
	if err != nil {
		return err
	}
	r.v.Check("instances whose resourceVersion the v1 applies moved", "0", count(moved(rvs, rvsAfter)))
	r.v.Check("instances whose generation the v1 applies moved", "0", count(moved(generations, generationsAfter)))
	r.v.Check("v1 applies warned of v1's deprecation", fmt.Sprint(r.v.N), fmt.Sprint(r.v.Warnings))
	r.v.Check("writes to children after the v1 applies", "0", fmt.Sprint(childWrites(counts)))
	r.v.Check("children whose resourceVersion moved since v1 alone", "0", count(moved(r.original, childrenAfter)))
	return nil
}

// removeV1 is step 5: v1 removed from the Bundle once nothing is stored
// in it; the CRD serves v2 alone, every instance is Ready on the new
// revision, and no child was written.
func (r *run) removeV1(ctx context.Context) error {
	h := r.h
	progress.Logf("versions: v1 removed from the Bundle")
	from := time.Now()
	if err := setBundle(ctx, h.Admin, bundleName, r.ex.v2OnlySpec()); err != nil {
		return err
	}
	if _, err := waitCRD(ctx, h.Admin, 5*time.Minute, "v2 alone", only("v2")); err != nil {
		return err
	}
	r.v.Removal = time.Since(from)
	rev, err := revision(ctx, h.Admin, bundleName, r.revs[len(r.revs)-1])
	if err != nil {
		return err
	}
	r.revs = append(r.revs, rev)
	if err := r.in.waitReady(ctx, "v2", rev, 30*time.Minute); err != nil {
		return err
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	counts, err := h.Audit.Count(h.AuditUser, from, time.Now())
	if err != nil {
		return err
	}
	after, err := children(ctx, h.Admin, r.nss...)
	if err != nil {
		return err
	}
	// The API server stops serving v1 moments after the CRD says so: a
	// GET is NotFound (the resource, not the object) once it has.
	var gone string
	_ = wait.Poll(ctx, time.Minute, func() (bool, error) { // a timeout leaves gone saying what a GET answered
		_, err := r.in.dyn.Resource(gvr("v1")).Namespace(namespace(0)).Get(ctx, instanceName(0), metav1.GetOptions{})
		gone = fmt.Sprintf("answered %v", err)
		if apierrors.IsNotFound(err) {
			gone = "NotFound"
		}
		return gone == "NotFound", nil
	})
	items, err := r.in.list(ctx, "v2")
	if err != nil {
		return err
	}
	b := &v1alpha1.Bundle{}
	if err := h.Admin.Get(ctx, client.ObjectKey{Name: bundleName}, b); err != nil {
		return err
	}
	if b.Status.Storage != nil {
		r.v.StorageMessage = b.Status.Storage.Message
	}
	r.v.Check("a GET in v1 once v1 is removed", "NotFound", gone)
	r.v.Check(fmt.Sprintf("instances Ready on the revision without v1, read in v2 (of %d)", r.v.N), fmt.Sprint(r.v.N), fmt.Sprint(readyOn(items, rev)))
	r.v.Check("writes to children after v1 was removed", "0", fmt.Sprint(childWrites(counts)))
	r.v.Check("children whose resourceVersion moved since v1 alone", "0", count(moved(r.original, after)))
	return nil
}
