package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/templates"
)

// The review of Bundles: their rollout gates must compile, and a server
// dry run (kubectl apply --dry-run=server -f bundle.yaml) is told what
// the new content would do to the Bundle's parents.

// BundleWebhookPath is the path of the Bundles' review (config/webhook's
// entry bundles.stencil.dev).
const BundleWebhookPath = "/validate-stencil-bundle"

// BundlesWebhookName is the static entry of the validating configuration
// that sends Bundles to BundleWebhookPath.
const BundlesWebhookName = "bundles.stencil.dev"

// BundleReviewTimeout bounds the preview of a Bundle's dry run: two renders
// of each parent (the revision it is on, the new content); what it did
// not reach is counted as not checked.
const BundleReviewTimeout = 10 * time.Second

// bundleReviewer reviews the creates and updates of Bundles.
type bundleReviewer struct {
	*reviewer
}

var _ admission.Handler = (*bundleReviewer)(nil)

// Handle refuses a Bundle whose rollout gates do not compile (their
// paths and positions); on a dry run by the authenticated API server it
// warns how many parents the new content would change, leave alone, fail
// to render, hold back (their values refused) or not move (pinned), and
// in how many waves. It never writes.
func (h *bundleReviewer) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	b := &v1alpha1.Bundle{}
	if err := json.Unmarshal(req.Object.Raw, b); err != nil {
		return admission.Allowed("").WithWarnings(warningText(fmt.Sprintf("stencil: could not decode the Bundle: %v; the controller will report", err)))
	}
	if b.Spec.Rollout != nil {
		if _, err := rollout.CompileGates(b.Spec.Rollout.Gates); err != nil {
			res := admission.Denied(err.Error())
			res.Result.Code, res.Result.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
			return res
		}
	}
	if req.DryRun == nil || !*req.DryRun || !b.DeletionTimestamp.IsZero() {
		return admission.Allowed("")
	}
	if !callerAuthenticated(ctx) {
		return admission.Allowed("").WithWarnings(notReviewedWarning)
	}
	ctx, cancel := context.WithTimeout(ctx, max(h.timeout, BundleReviewTimeout))
	defer cancel()
	return admission.Allowed("").WithWarnings(capWarnings(h.previewBundle(ctx, req.UserInfo, b))...)
}

// bundleTally counts what a new content of a Bundle does to its parents.
type bundleTally struct {
	mu                                                  sync.Mutex
	total, change, same, fails, held, pinned, unchecked int
	failed                                              []string
}

// previewBundle renders every parent of b (live, in every shard) with b's
// new content and with the revision it is on, and counts.
func (h *bundleReviewer) previewBundle(ctx context.Context, user authenticationv1.UserInfo, b *v1alpha1.Bundle) []string {
	if b.Spec.Source != nil && len(b.Spec.Files) == 0 {
		return []string{fmt.Sprintf("stencil: Bundle %s pulls its chart: the controller pulls it once the Bundle is stored; `stencil diff --bundle %s` previews a chart in a registry", b.Name, "oci://...")}
	}
	loaded, err := templates.LoadObject(b)
	if err != nil {
		return []string{fmt.Sprintf("stencil: Bundle %s does not load: %v; its parents would stay on their revision", b.Name, err)}
	}
	parents, err := h.liveParents(ctx, b.Name)
	if err != nil {
		return []string{fmt.Sprintf("stencil: could not list the parents of Bundle %s: %v; `stencil diff --bundle` previews them", b.Name, err)}
	}
	if len(parents) == 0 {
		return []string{fmt.Sprintf("stencil: no Composition or instance uses Bundle %s", b.Name)}
	}
	caps, err := h.engine.Capabilities(ctx)
	if err != nil {
		return []string{fmt.Sprintf("stencil: could not discover the served APIs: %v", err)}
	}
	named := h.mayName(ctx, user, parents)
	t := &bundleTally{total: len(parents)}
	next := make(chan applyset.Parent)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				h.tally(ctx, t, b, loaded, caps, p, named)
			}
		}()
	}
	for _, p := range parents {
		if ctx.Err() != nil {
			break
		}
		next <- p
	}
	close(next)
	wg.Wait()
	return h.bundleWarnings(b, loaded, parents, t)
}

// tally renders parent p with the revision it is on and with the new
// content, and counts what changes.
func (h *bundleReviewer) tally(ctx context.Context, t *bundleTally, b *v1alpha1.Bundle, next *templates.Bundle, caps *templates.Capabilities, p applyset.Parent, named bool) {
	count := func(f func()) { t.mu.Lock(); defer t.mu.Unlock(); f() }
	if ctx.Err() != nil {
		count(func() { t.unchecked++ })
		return
	}
	in := plan.RenderInput(p, plan.Live(p), caps)
	apis := cluster.NewAPIs(h.mapper, h.live)
	// failed counts err, a render error or a refusal, as a failure; false
	// for any other error (counted as not checked) or none.
	failed := func(err error) bool {
		var renderErr *templates.RenderError
		var refused *plan.RefusedError
		switch {
		case err != nil && ctx.Err() != nil:
			count(func() { t.unchecked++ })
		case errors.As(err, &renderErr), errors.As(err, &refused):
			count(func() {
				t.fails++
				if named && len(t.failed) < 3 {
					t.failed = append(t.failed, p.GetNamespace()+"/"+p.GetName()+": "+err.Error())
				}
			})
		case err != nil:
			count(func() { t.unchecked++ })
		default:
			return false
		}
		return true
	}
	// A parent that stays where it is (pinned, or held where b allows
	// it) renders its revision within b's new permissions and crds
	// policy: a narrowing may fail it.
	stays := func() bool {
		now, err := h.engine.LoadFor(ctx, p)
		if err != nil || !revision.Narrows(now, next.Permissions(), next.CRDPolicy()) {
			return false
		}
		_, err = plan.NewPlan(ctx, h.renderer, revision.Within(now, next.Permissions(), next.CRDPolicy()), in, apis)
		return failed(err)
	}
	if pin, _ := rollout.EffectivePin(b, p.ParentSpec().BundleRevision); pin != "" {
		if !stays() {
			count(func() { t.pinned++ })
		}
		return
	}
	if _, err := templates.MergeValues(next, p.ParentSpec().Values); err != nil {
		if !revision.HoldingAllowed(b) || !stays() {
			count(func() { t.held++ })
		}
		return
	}
	after, err := plan.NewPlan(ctx, h.renderer, next, in, apis)
	if failed(err) {
		return
	}
	now, err := h.engine.LoadFor(ctx, p)
	var before *plan.Plan
	if err == nil {
		before, err = plan.NewPlan(ctx, h.renderer, now, in, apis)
	}
	if err != nil { // it renders nothing now: whatever the new content renders is a change
		count(func() { t.change++ })
		return
	}
	if samePlan(before, after) {
		count(func() { t.same++ })
	} else {
		count(func() { t.change++ })
	}
}

// heldWord says what becomes of the parents whose values a new content
// of b refuses: held on their revision where b allows it, else stalled.
func heldWord(b *v1alpha1.Bundle) string {
	if revision.HoldingAllowed(b) {
		return "held"
	}
	return "would stall"
}

// samePlan reports whether two plans hold the same objects.
func samePlan(a, b *plan.Plan) bool {
	ja, errA := json.Marshal(a.Objects)
	jb, errB := json.Marshal(b.Objects)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// bundleWarnings sums a tally up, with the wave plan of b's rollout.
func (h *bundleReviewer) bundleWarnings(b *v1alpha1.Bundle, next *templates.Bundle, parents []applyset.Parent, t *bundleTally) []string {
	views := make([]*rollout.Parent, len(parents))
	for i, p := range parents {
		views[i] = rollout.FromParent(p)
	}
	// The sizes of the waves do not depend on the order within them: the
	// zero Order counts them as the controller's would.
	waves, n := rollout.Plan(b, rollout.Order{}, views)
	sizes := make([]int, n)
	for _, w := range waves {
		if w > 0 {
			sizes[w-1]++
		}
	}
	plan := fmt.Sprintf("all at once (%d parents)", t.total-t.pinned)
	if rollout.Policy(b).Strategy == v1alpha1.RolloutWaves {
		s := make([]string, len(sizes))
		for i, n := range sizes {
			s[i] = fmt.Sprint(n)
		}
		plan = fmt.Sprintf("in %d waves (%s)", n, strings.Join(s, ", "))
	}
	out := []string{
		fmt.Sprintf("stencil: Bundle %s: revision %s would reach its %d parents %s", b.Name, revision.Name(b.Name, next.Revision()), t.total, plan),
		fmt.Sprintf("stencil: %d would change, %d unchanged, %d would fail to render, %d %s (values refused), %d pinned", t.change, t.same, t.fails, t.held, heldWord(b), t.pinned),
	}
	for _, f := range t.failed {
		out = append(out, "stencil: would fail to render: "+f)
	}
	if t.unchecked > 0 {
		out = append(out, fmt.Sprintf("stencil: %d of %d parents not checked within %s; `stencil diff --bundle` checks them all", t.unchecked, t.total, BundleReviewTimeout))
	}
	return out
}

// liveParents lists every parent of Bundle name from the API server (every
// shard's): the Compositions naming it, and the instances of the kind the
// cluster's Bundle publishes.
func (h *bundleReviewer) liveParents(ctx context.Context, name string) ([]applyset.Parent, error) {
	comps := &v1alpha1.CompositionList{}
	if err := h.live.List(ctx, comps); err != nil {
		return nil, err
	}
	var out []applyset.Parent
	for i := range comps.Items {
		if c := &comps.Items[i]; c.Spec.Bundle == name && c.DeletionTimestamp.IsZero() {
			out = append(out, c)
		}
	}
	current := &v1alpha1.Bundle{}
	if err := h.client.Get(ctx, client.ObjectKey{Name: name}, current); err != nil || current.Spec.API == nil {
		return out, nil //nolint:nilerr // the preview is best-effort: with no stored Bundle (a create) or none read, no published kind is known and the parents are the Compositions
	}
	gvk := publish.GVK(publish.Defaulted(*current.Spec.API))
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := h.live.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return out, nil
		}
		return nil, err
	}
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetDeletionTimestamp() == nil {
			spec, _ := publish.InstanceSpec(name, current.Spec.API, u)
			out = append(out, applyset.NewInstance(u, spec))
		}
	}
	slices.SortFunc(out, func(a, b applyset.Parent) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out, nil
}

// mayName reports whether the request's user may get every parent's kind
// in every namespace: only then does a warning name a parent.
func (h *bundleReviewer) mayName(ctx context.Context, user authenticationv1.UserInfo, parents []applyset.Parent) bool {
	seen := map[string]bool{}
	for _, p := range parents {
		gk := p.ParentGVK().GroupKind()
		if seen[gk.String()] {
			continue
		}
		seen[gk.String()] = true
		if !h.readers.may(ctx, h.mapper, user, gk, "") {
			return false
		}
	}
	return true
}
