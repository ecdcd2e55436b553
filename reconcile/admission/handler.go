package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/conversion"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/prune"
	"github.com/stencil-dev/stencil/templates"
)

// The validating admission webhook: where the controller serves it and
// the ValidatingWebhookConfiguration that sends it requests.
const (
	// WebhookPath is the path of the handler on the controller's webhook server.
	WebhookPath = "/validate-stencil"
	// DefaultWebhookConfigName is the name of the ValidatingWebhookConfiguration.
	DefaultWebhookConfigName = "stencil-validating"
	// CompositionsWebhookName is its static entry, for Compositions
	// (config/webhook); the controller copies its clientConfig.
	CompositionsWebhookName = "compositions.stencil.dev"
	// PublishedWebhookName is the entry the controller keeps for the kinds
	// that Bundles publish (see webhookConfigReconciler).
	PublishedWebhookName = "published.stencil.dev"
	// DefaultAdmissionTimeout bounds one review when Options.Timeout is zero.
	DefaultAdmissionTimeout = 3 * time.Second
)

// Options configure the validating admission webhook.
type Options struct {
	// Enabled serves the webhook at WebhookPath on the manager's webhook
	// server, and keeps the PublishedWebhookName entry of ConfigName.
	Enabled bool
	// Timeout bounds one review; zero means DefaultAdmissionTimeout. A
	// review that does not finish in time is allowed with a warning.
	Timeout time.Duration
	// ConfigName is the ValidatingWebhookConfiguration whose published
	// entry the controller keeps; "" means DefaultWebhookConfigName.
	ConfigName string
	// MutatingConfigName is the MutatingWebhookConfiguration whose
	// published entry the controller keeps; "" means
	// DefaultMutatingConfigName.
	MutatingConfigName string
	// Ready, when not nil, delays serving the webhook until it is closed
	// (the serving certificate is in place): the webhook server is added
	// to the manager, and reads its certificate, only then.
	Ready <-chan struct{}
	// ClientNames, when not empty, are the names (a common name or a DNS
	// subject alternative name) one of which the caller's verified client
	// certificate must bear for its dry runs to see live data (see
	// authn.go); empty: any certificate the client CA signed.
	ClientNames []string
	// Renderer renders the reviews (required; the wiring gives the
	// engine's when the controller command gives none). The controller
	// gives admission a bounded pool of its own, so a review never waits
	// behind a reconcile's render, and a review that gives up at its
	// deadline leaves the reconcile pool's workers alone.
	Renderer plan.Renderer
	// Version is stencil's version, written into the ApplySet tooling
	// annotation the mutating webhook sets.
	Version string
}

// timeout is Timeout or its default.
func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultAdmissionTimeout
}

// configName is ConfigName or its default.
func (o Options) configName() string {
	if o.ConfigName != "" {
		return o.ConfigName
	}
	return DefaultWebhookConfigName
}

// Engine is what the webhook needs of stencil's engine (package
// reconcile/engine, which the controllers share): a review loads,
// renders, dry-runs and consents exactly as a pass would. The webhook
// imports no controller.
type Engine interface {
	// LoadFor loads what parent renders, as a pass would, from the chart
	// cache only (engine.PinError for a pin its Bundle refuses).
	LoadFor(ctx context.Context, parent applyset.Parent) (*templates.Bundle, error)
	// RenderValues are the values parent renders with loaded: an
	// instance's spec in the version loaded's templates are written
	// against.
	RenderValues(ctx context.Context, parent applyset.Parent, loaded *templates.Bundle) (*apiextensionsv1.JSON, error)
	// Capabilities are what the cluster serves, for .Capabilities.
	Capabilities(ctx context.Context) (*templates.Capabilities, error)
	// Checked reports whether the API server checks who may use the
	// ServiceAccount of the parents of kind gvk (stencil's policy).
	Checked(ctx context.Context, gvk schema.GroupVersionKind) bool
	// WriterFor returns the client that writes parent's members: the
	// identity a dry run of them is made as.
	WriterFor(parent applyset.Parent) (client.Client, error)
	// Consent is what lets parent's set adopt an existing object.
	Consent(parent applyset.Parent, planned *plan.Plan) applyset.Consent
}

// SetupWithManager serves the admission handler, rendering through e,
// at once or once opts.Ready is closed, on every replica (not only the
// leader: the webhook Service sends requests to any), and keeps the
// published entry of the webhook configuration for the kinds served.
// The engine must be built with Options.EveryReplica. opts.Renderer is
// the reviews' renderer (required).
func SetupWithManager(mgr ctrl.Manager, e Engine, kinds Kinds, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	if opts.Renderer == nil {
		return errors.New("admission: Options.Renderer is required")
	}
	h := &reviewer{engine: e, client: mgr.GetClient(), live: mgr.GetAPIReader(), mapper: mgr.GetRESTMapper(),
		renderer: opts.Renderer, timeout: opts.timeout(), readers: newReadChecker(mgr.GetClient())}
	tokens, err := conversion.NewCRDTokens(mgr)
	if err != nil {
		return err
	}
	if err := mgr.Add(tokens); err != nil {
		return fmt.Errorf("add the conversion tokens: %w", err)
	}
	// The conversion webhook: its subtree, each CRD at the path of its
	// token, and the prefix alone, where nobody converts anything.
	convert := guardedConversion(conversion.New(h.client, h.live, tokens, conversion.FromBundle), opts.ClientNames, tokens)
	register := func() {
		mgr.GetWebhookServer().Register(WebhookPath, guarded(WebhookPath, &webhook.Admission{Handler: h, WithContextFunc: withCaller(opts.ClientNames)}, opts.ClientNames))
		mgr.GetWebhookServer().Register(MutatePath, guarded(MutatePath, &webhook.Admission{Handler: &mutator{rv: h, version: opts.Version}, WithContextFunc: withCaller(opts.ClientNames)}, opts.ClientNames))
		mgr.GetWebhookServer().Register(BundleWebhookPath, guarded(BundleWebhookPath, &webhook.Admission{Handler: &bundleReviewer{h}, WithContextFunc: withCaller(opts.ClientNames)}, opts.ClientNames))
		mgr.GetWebhookServer().Register(publish.ConversionWebhookPath+"/", convert)
		mgr.GetWebhookServer().Register(publish.ConversionWebhookPath, convert)
	}
	if ready := opts.Ready; ready == nil {
		register()
	} else if err := mgr.Add(&deferredWebhook{ready: ready, register: register}); err != nil {
		return fmt.Errorf("add the admission webhook: %w", err)
	}
	mutating := opts.MutatingConfigName
	if mutating == "" {
		mutating = DefaultMutatingConfigName
	}
	return setupWebhookConfig(mgr, kinds, opts.configName(), mutating)
}

// Kinds are the published kinds the controller serves (package
// published), for the webhook configuration's published entry.
type Kinds interface {
	// Served returns the kinds served, sorted by group and resource.
	Served() []engine.Kind
	// Changes holds a notice when the kinds served changed.
	Changes() <-chan event.GenericEvent
}

// deferredWebhook registers the handler once ready is closed. Only then
// is the webhook server added to the manager (by GetWebhookServer), so it
// starts, and reads its certificate files, once they exist.
type deferredWebhook struct {
	ready    <-chan struct{}
	register func()
}

var (
	_ manager.Runnable               = (*deferredWebhook)(nil)
	_ manager.LeaderElectionRunnable = (*deferredWebhook)(nil)
)

// Start waits for ready, then registers the handler.
func (d *deferredWebhook) Start(ctx context.Context) error {
	select {
	case <-d.ready:
		d.register()
	case <-ctx.Done():
	}
	return nil
}

// NeedLeaderElection is false: every replica serves admission.
func (d *deferredWebhook) NeedLeaderElection() bool { return false }

// reviewer reviews the creates and updates of Compositions and of
// instances of published kinds: it renders them as the controller would
// and refuses what would stall; on a dry run it also tells what the
// children would become (see preview). It never writes.
type reviewer struct {
	engine Engine
	// client reads from the manager's cache, live from the API server;
	// mapper maps kinds to resources.
	client   client.Client
	live     client.Reader
	mapper   meta.RESTMapper
	renderer plan.Renderer
	timeout  time.Duration
	// readers answers whether a request's user may get a child's kind.
	readers *readChecker
}

var _ admission.Handler = (*reviewer)(nil)

// review is the outcome of one review before it becomes a Response.
type review struct {
	denied string
	// forbidden: denied for the request's place, not its content (403,
	// not 422).
	forbidden bool
	warnings  []string
	// timedOut: the review's deadline passed first.
	timedOut bool
}

// Handle reviews one request under the handler's deadline: a review that
// does not finish in time is allowed with a warning, and the controller
// reports as usual.
func (h *reviewer) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	// A caller that is not the API server gets nothing done for it: no
	// render, no access review, no read of the cluster.
	if !callerAuthenticated(ctx) {
		return admission.Allowed("").WithWarnings(notReviewedWarning)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	done := make(chan review, 1)
	go func() {
		rv := h.review(ctx, req)
		// What ran into the deadline (a render, a dry run) says nothing
		// of the request.
		rv.timedOut = rv.timedOut || ctx.Err() != nil
		done <- rv
	}()
	var rv review
	select {
	case rv = <-done:
	case <-ctx.Done():
		rv.timedOut = true
	}
	if rv.timedOut {
		return admission.Allowed("").WithWarnings(
			fmt.Sprintf("stencil: validation did not finish in %s; the controller will report", h.timeout))
	}
	return rv.response()
}

// response turns a review into an admission response.
func (rv review) response() admission.Response {
	if rv.denied == "" {
		return admission.Allowed("").WithWarnings(rv.warnings...)
	}
	res := admission.Denied(rv.denied).WithWarnings(rv.warnings...)
	res.Result.Code, res.Result.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	if rv.forbidden {
		res.Result.Code, res.Result.Reason = http.StatusForbidden, metav1.StatusReasonForbidden
	}
	return res
}

// allowWarning allows with one warning.
func allowWarning(format string, args ...any) review {
	return review{warnings: []string{warningText(fmt.Sprintf("stencil: "+format, args...))}}
}

// review renders the request's object as the controller would. It allows
// at once what cannot change a render: an object being deleted, and an
// update that leaves the spec and the stencil.dev/* annotations as they
// were, such as the controller's own finalizer and ApplySet writes and a
// GitOps tool's periodic dry run of an unchanged object (`stencil diff`
// shows what a Bundle change or drift would do to its children).
func (h *reviewer) review(ctx context.Context, req admission.Request) review {
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return allowWarning("could not decode the object: %v; the controller will report", err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return review{}
	}
	dryRun := req.DryRun != nil && *req.DryRun
	var old *unstructured.Unstructured
	if req.Operation == admissionv1.Update {
		if old, err = decodeObject(req.OldObject.Raw); err != nil {
			return allowWarning("could not decode the old object: %v; the controller will report", err)
		}
		if sameRenderRequest(old, obj) {
			return review{}
		}
	}
	parent, bundle, rv := h.parent(ctx, obj)
	if parent == nil {
		return rv
	}
	if rv := h.namespaceAllowed(ctx, bundle, parent.GetNamespace()); rv.denied != "" || len(rv.warnings) > 0 {
		return rv
	}
	planned, rv := h.plan(ctx, parent, bundle, old)
	if planned == nil || !dryRun {
		return rv
	}
	return review{warnings: append(rv.warnings, h.preview(ctx, req.UserInfo, parent, bundle, planned)...)}
}

// decodeObject decodes an object of a request as the controller's
// clients do (integers stay int64), so values render as they will.
func decodeObject(raw []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// sameRenderRequest reports whether old and obj ask for the same render:
// the same spec and the same stencil.dev/* annotations (the knobs of a
// published kind's instance). Status, finalizers and the metadata tools
// write (the ApplySet's) are not part of it.
func sameRenderRequest(old, obj *unstructured.Unstructured) bool {
	stencilAnnotations := func(u *unstructured.Unstructured) map[string]string {
		out := map[string]string{}
		for k, v := range u.GetAnnotations() {
			if strings.HasPrefix(k, v1alpha1.GroupVersion.Group+"/") {
				out[k] = v
			}
		}
		return out
	}
	return equality.Semantic.DeepEqual(old.Object["spec"], obj.Object["spec"]) &&
		maps.Equal(stencilAnnotations(old), stencilAnnotations(obj))
}

// parent makes the request's object a applyset.Parent, with the Bundle it renders.
// With no parent, the review is the outcome: an instance whose
// stencil.dev/* annotations are invalid is refused; a Bundle not found is
// allowed with a warning.
func (h *reviewer) parent(ctx context.Context, obj *unstructured.Unstructured) (applyset.Parent, *v1alpha1.Bundle, review) {
	gvk := obj.GroupVersionKind()
	if gvk.GroupKind() == applyset.CompositionGroupKind {
		comp := &v1alpha1.Composition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, comp); err != nil {
			return nil, nil, allowWarning("could not decode the Composition: %v; the controller will report", err)
		}
		comp.SetGroupVersionKind(gvk)
		b, rv := h.bundle(ctx, comp.Spec.Bundle)
		if b == nil {
			return nil, nil, rv
		}
		return comp, b, review{}
	}
	b, claimants, err := engine.PublishingBundle(ctx, h.client, h.live, gvk)
	switch {
	case err != nil:
		return nil, nil, allowWarning("could not find the Bundle that publishes %s: %v; the controller will report", gvk.Kind, err)
	case b == nil && len(claimants) > 0:
		return nil, nil, allowWarning("Bundles %s all publish %s and its CRD names none of them; the controller will report", strings.Join(claimants, ", "), gvk.GroupKind())
	case b == nil:
		return nil, nil, allowWarning("no Bundle publishes %s; the controller will report", gvk.GroupKind())
	}
	spec, err := publish.InstanceSpec(b.Name, b.Spec.API, obj)
	if err != nil {
		return nil, nil, review{denied: err.Error()}
	}
	return applyset.NewInstance(obj, spec), b, review{}
}

// namespaceAllowed refuses a parent in a namespace its Bundle's
// spec.namespaceSelector does not select, as the controller would stall
// it (reason NotAllowed).
func (h *reviewer) namespaceAllowed(ctx context.Context, b *v1alpha1.Bundle, ns string) review {
	ok, err := engine.NamespaceSelected(ctx, h.client, b, ns)
	switch {
	case err != nil:
		return allowWarning("could not check Bundle %s's spec.namespaceSelector: %v; the controller will report", b.Name, err)
	case !ok:
		return review{forbidden: true, denied: fmt.Sprintf("Bundle %s may not be used in namespace %s: its spec.namespaceSelector does not select the namespace", b.Name, ns)}
	}
	return review{}
}

// bundle reads the named Bundle from the cache. A Bundle not found gives
// no Bundle and a review that allows with a warning: the Bundle, not the
// request, is at fault.
func (h *reviewer) bundle(ctx context.Context, name string) (*v1alpha1.Bundle, review) {
	b := &v1alpha1.Bundle{}
	if err := h.client.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, allowWarning("Bundle %s not found; the controller will report", name)
		}
		return nil, allowWarning("could not read Bundle %s: %v; the controller will report", name, err)
	}
	return b, review{}
}

// plan renders parent's Bundle through the controller's own path
// (the revision the parent renders, plan.RenderInput, the renderer with
// its sandbox limits, plan.NewPlan). A render or values error, an overrun
// of the render's limits, an object the Bundle's permissions refuse and a
// pin of a revision the Bundle does not have or does not allow (withdrawn,
// pinning disallowed) deny the request with the controller's own message
// (file:line or field path, never a value); any other error allows it
// with a warning. old is the object before an update.
func (h *reviewer) plan(ctx context.Context, parent applyset.Parent, b *v1alpha1.Bundle, old *unstructured.Unstructured) (*plan.Plan, review) {
	// The revision the parent renders: its pin, or what its Bundle's
	// rollout assigns it (see engine.Engine.LoadFor).
	loaded, err := h.engine.LoadFor(ctx, parent)
	var pin *engine.PinError
	switch {
	case errors.As(err, &pin):
		return nil, review{denied: pin.Message}
	case err != nil:
		return nil, allowWarning("Bundle %s is not ready: %v; the controller will report", b.Name, err)
	}
	caps, err := h.engine.Capabilities(ctx)
	if err != nil {
		return nil, allowWarning("could not discover the served APIs: %v; the controller will report", err)
	}
	live := &plan.LiveComposition{UID: parent.GetUID()}
	if old != nil {
		// The controller's record, as the stored parent holds it (its
		// status decodes as an instance's would; the spec plays no part).
		live.Installed = plan.Live(applyset.NewInstance(old, v1alpha1.CompositionSpec{})).Installed
	}
	in := plan.RenderInput(parent, live, caps)
	// An instance on a revision of another version of its kind: its
	// spec in that version, as the controller renders it.
	if in.Values, err = h.engine.RenderValues(ctx, parent, loaded); err != nil {
		return nil, allowWarning("%v; the controller will report", err)
	}
	var obs templates.Observations
	in.Observations = &obs
	planned, err := plan.NewPlan(ctx, h.renderer, loaded, in, cluster.NewAPIs(h.mapper, h.live))
	var renderErr *templates.RenderError
	var refused *plan.RefusedError
	switch {
	case err != nil && ctx.Err() != nil:
		// The render stopped at the review's deadline (a RenderError with
		// Reason Timeout, or one that wraps context.Canceled): not the
		// Bundle's fault.
		return nil, review{timedOut: true}
	case errors.As(err, &renderErr) && len(obs.Lookups) > 0:
		// The review answers every lookup empty (as helm template); the
		// controller answers them from the cluster, where the render may
		// well succeed (a chart that requires an object it looks up).
		return nil, allowWarning("Bundle %s: %v (rendered with every lookup empty; the controller answers them from the cluster and will report)", b.Name, err)
	case errors.As(err, &renderErr), errors.As(err, &refused):
		return nil, review{denied: fmt.Sprintf("Bundle %s: %v", b.Name, err)}
	case err != nil:
		return nil, allowWarning("could not render Bundle %s: %v; the controller will report", b.Name, err)
	}
	if len(planned.ValuesMigrations) > 0 {
		// Admitted as the controller renders it: migrated, spec.values
		// as written.
		return planned, allowWarning("Bundle %s's revision refuses these values as they are: they are rendered through its values migrations %s (spec.values is kept as written; update it to drop the warning)",
			b.Name, strings.Join(planned.ValuesMigrations, ", "))
	}
	return planned, review{}
}

// preview dry-run applies every planned object as the controller would
// (as the parent's ServiceAccount, if any) and lists the members it would
// prune, as warnings (see childWarnings). Then the Bundle's status outputs the
// change would alter (see outputWarnings). A render of no object prunes
// nothing unless the parent or its Bundle allows it (see
// guardEmptyRender): the warning says so instead. A caller that is not
// the authenticated API server gets no preview at all (notReviewedWarning),
// and a child whose kind user may not get is listed without its paths.
func (h *reviewer) preview(ctx context.Context, user authenticationv1.UserInfo, parent applyset.Parent, b *v1alpha1.Bundle, planned *plan.Plan) []string {
	if !callerAuthenticated(ctx) {
		return []string{notReviewedWarning}
	}
	// The request was checked by stencil's admission policy, which runs
	// before any webhook, only if its kind is bound: otherwise nobody
	// checked that the requester may use the account the dry run acts as.
	if !h.engine.Checked(ctx, parent.ParentGVK()) {
		return []string{warningText("stencil: the children's preview is withheld: stencil's admission policy does not check " + parent.ParentGVK().Kind + " (yet); the controller will report")}
	}
	writer, err := h.engine.WriterFor(parent)
	if err != nil {
		return []string{warningText(fmt.Sprintf("stencil: could not preview the children: %v", err))}
	}
	previews := applyset.DryRun(ctx, writer, planned.ID, applyset.RecordOf(parent), h.engine.Consent(parent, planned), planned.Objects)
	var pruned []applyset.PruneCandidate
	var pruneErr error
	if on := parent.ParentSpec().Prune; on == nil || *on {
		pruned, pruneErr = prune.Candidates(ctx, h.live, h.mapper, parent, planned)
	}
	if len(planned.Objects) == 0 && len(pruned) > 0 && !parent.ParentSpec().Suspend &&
		parent.GetAnnotations()[v1alpha1.AnnotationAllowEmptyRender] != "true" && b.Annotations[v1alpha1.AnnotationAllowEmptyRender] != "true" {
		return []string{warningText(fmt.Sprintf("stencil: %s renders no objects while its set has %d members: the controller would prune nothing and stall (EmptyRender); annotate it or its Bundle %s: \"true\" to delete them all",
			applyset.Describe(parent), len(pruned), v1alpha1.AnnotationAllowEmptyRender))}
	}
	lines := childWarnings(parent.GetNamespace(), previews, pruned, h.readable(ctx, user), previewKinds(parent, planned))
	lines = append(lines, h.outputWarnings(ctx, user, parent, b, planned, previews)...)
	if parent.ParentSpec().Suspend && len(lines) > 0 {
		lines = append([]string{"stencil: " + applyset.Describe(parent) + " is suspended: nothing changes until it resumes"}, lines...)
	}
	if pruneErr != nil {
		lines = append(lines, fmt.Sprintf("stencil: could not list the members to prune: %v", pruneErr))
	}
	return capWarnings(lines)
}
