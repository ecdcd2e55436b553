package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stencil-dev/stencil/reconcile/status"

	"k8s.io/apimachinery/pkg/util/cache"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// How long an access review's answer is trusted. An allowed answer is kept
// for a minute, so reconciles do not cost one review each; the controller's
// own denials for a little while, so many Compositions rendering a kind it
// may not watch cost one review, not one each; a ServiceAccount's denials
// not at all, so a Composition whose account was just granted its RBAC
// applies on its next pass.
const (
	accessAllowedTTL = time.Minute
	accessDeniedTTL  = 10 * time.Second
	// ForbiddenRecheck is how long a Composition stalled with reason
	// Forbidden waits before looking again: RBAC changes raise no event.
	ForbiddenRecheck = time.Minute
)

// AccessDeniedError reports a verb on a member kind that the controller
// itself, or the ServiceAccount a Composition applies as, may not use. It is
// terminal for the pass: the Composition is Stalled with reason Forbidden
// and nothing of it is applied or pruned.
type AccessDeniedError struct {
	// Subject names who lacks the permission: the controller's user or a ServiceAccount.
	Subject string
	// Verb is the verb denied, such as "list", "watch", "create", "patch" or "delete".
	Verb string
	// Kind is the member kind; Resource its resource, as plural.group.
	Kind, Resource string
	// Namespace is where the verb was asked for; "" means cluster-wide.
	Namespace string
	// Hint says how to grant the permission.
	Hint string
}

func (e *AccessDeniedError) Error() string {
	where := "cluster-wide"
	if e.Namespace != "" {
		where = "in namespace " + e.Namespace
	}
	return fmt.Sprintf("%s may not %s %s (%s) %s: %s", e.Subject, e.Verb, e.Resource, e.Kind, where, e.Hint)
}

// accessChecker asks the API server, with access reviews made by the
// controller, what the controller and the ServiceAccounts of Compositions
// may do with member kinds, and remembers the answers for a while (at
// most maxAccessAnswers, the least recently used going first).
type accessChecker struct {
	client  client.Client // the controller's own client
	answers *cache.LRUExpireCache

	mu   sync.Mutex
	self string // the controller's user name, once known
}

// maxAccessAnswers bounds the answers kept: one per verb, kind, namespace
// and ServiceAccount asked about within the TTLs.
const maxAccessAnswers = 10000

func newAccessChecker(c client.Client) *accessChecker {
	return &accessChecker{client: c, answers: cache.NewLRUExpireCache(maxAccessAnswers)}
}

type accessKey struct {
	user      string // "" is the controller itself
	verb      string
	resource  schema.GroupResource
	namespace string
}

func (a *accessChecker) cached(k accessKey) (allowed, ok bool) {
	v, ok := a.answers.Get(k)
	if !ok {
		return false, false
	}
	return v.(bool), true
}

func (a *accessChecker) remember(k accessKey, allowed bool, ttl time.Duration) {
	if ttl > 0 {
		a.answers.Add(k, allowed, ttl)
	}
}

// controllerMay checks, with SelfSubjectAccessReviews, that the controller
// may use every verb on the mapping's resource cluster-wide, as a
// label-selected informer of that kind needs (list and watch).
func (a *accessChecker) controllerMay(ctx context.Context, m *meta.RESTMapping, verbs ...string) error {
	for _, verb := range verbs {
		k := accessKey{verb: verb, resource: m.Resource.GroupResource()}
		allowed, ok := a.cached(k)
		if !ok {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: m.Resource.Group, Resource: m.Resource.Resource},
			}}
			if err := a.client.Create(ctx, review); err != nil {
				return fmt.Errorf("review access to %s: %w", verb+" "+m.Resource.GroupResource().String(), err)
			}
			allowed = review.Status.Allowed
			a.remember(k, allowed, ttlFor(allowed, accessDeniedTTL))
		}
		if !allowed {
			return &AccessDeniedError{Subject: a.controller(ctx), Verb: verb,
				Kind: m.GroupVersionKind.Kind, Resource: m.Resource.GroupResource().String(), Hint: hintController}
		}
	}
	return nil
}

// accountMay checks, with SubjectAccessReviews, that the ServiceAccount
// name of namespace saNamespace may use every verb on the mapping's
// resource in namespace ns ("" for a cluster-scoped kind).
func (a *accessChecker) accountMay(ctx context.Context, saNamespace, name string, m *meta.RESTMapping, ns string, verbs ...string) error {
	user := "system:serviceaccount:" + saNamespace + ":" + name
	for _, verb := range verbs {
		k := accessKey{user: user, verb: verb, resource: m.Resource.GroupResource(), namespace: ns}
		allowed, ok := a.cached(k)
		if !ok {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: m.Resource.Group,
					Resource: m.Resource.Resource, Namespace: ns},
			}}
			if err := a.client.Create(ctx, review); err != nil {
				return fmt.Errorf("review access of %s to %s: %w", user, verb+" "+m.Resource.GroupResource().String(), err)
			}
			allowed = review.Status.Allowed
			a.remember(k, allowed, ttlFor(allowed, 0))
		}
		if !allowed {
			return &AccessDeniedError{Subject: "ServiceAccount " + saNamespace + "/" + name, Verb: verb,
				Kind: m.GroupVersionKind.Kind, Resource: m.Resource.GroupResource().String(), Namespace: ns, Hint: hintAccount}
		}
	}
	return nil
}

// How to grant a missing permission, to the controller or to a ServiceAccount.
const (
	hintController = `grant it to the controller with a ClusterRole labelled rbac.stencil.dev/aggregate-to-manager: "true" (see config/rbac/aggregate.yaml)`
	hintAccount    = "grant it to the ServiceAccount with a Role or ClusterRole bound to it"
)

// controller names the controller as the subject of a denial.
func (a *accessChecker) controller(ctx context.Context) string {
	return "the controller (" + a.whoAmI(ctx) + ")"
}

// denied describes a verb on a kind that the API server forbade: to the
// ServiceAccount account of the Composition's namespace, or to the
// controller itself when account is "".
func (r *CompositionReconciler) denied(ctx context.Context, comp applyset.Parent, account string, gk schema.GroupKind, verb, ns string) *AccessDeniedError {
	e := &AccessDeniedError{Subject: r.access.controller(ctx), Verb: verb, Kind: gk.Kind, Resource: guessResource(gk), Namespace: ns, Hint: hintController}
	if account != "" {
		e.Subject, e.Hint = "ServiceAccount "+comp.GetNamespace()+"/"+account, hintAccount
	}
	if m, err := r.Mapper.RESTMapping(gk); err == nil {
		e.Resource = m.Resource.GroupResource().String()
	}
	return e
}

// guessResource is gk's resource as plural.group when the RESTMapper does
// not know gk: the API machinery's guess, as kubectl makes it.
func guessResource(gk schema.GroupKind) string {
	plural, _ := meta.UnsafeGuessKindToResource(gk.WithVersion(""))
	return plural.GroupResource().String()
}

func ttlFor(allowed bool, denied time.Duration) time.Duration {
	if allowed {
		return accessAllowedTTL
	}
	return denied
}

// whoAmI returns the controller's user name, asked once with a
// SelfSubjectReview; "unknown user" when the server does not say.
func (a *accessChecker) whoAmI(ctx context.Context) string {
	a.mu.Lock()
	self := a.self
	a.mu.Unlock()
	if self != "" {
		return self
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := a.client.Create(ctx, review); err != nil || review.Status.UserInfo.Username == "" {
		return "unknown user"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.self = review.Status.UserInfo.Username
	return a.self
}

// authorize checks, before anything is applied, that the ServiceAccount a
// Composition applies as (spec.serviceAccountName or the controller's
// default) may create and patch every rendered kind where it is rendered,
// and delete it when pruning is on, so that a missing permission is
// reported up front (Stalled, reason Forbidden) rather than as a half-made
// apply. Kinds the API server does not serve yet (defined by a CRD in the
// same render) are left to the apply itself.
func (r *CompositionReconciler) authorize(ctx context.Context, s *scope) (ctrl.Result, error) {
	sa := serviceAccount(s.comp, r.Options.DefaultServiceAccount)
	if sa == "" || s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	verbs := []string{"create", "patch"}
	if s.comp.ParentSpec().Prune == nil || *s.comp.ParentSpec().Prune {
		verbs = append(verbs, "delete")
	}
	type target struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	var seen []target
	for _, o := range s.plan.Objects {
		t := target{o.GroupVersionKind(), o.GetNamespace()}
		if slices.Contains(seen, t) {
			continue
		}
		seen = append(seen, t)
		m, err := r.Mapper.RESTMapping(t.gvk.GroupKind(), t.gvk.Version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("find the API of %s: %w", t.gvk.Kind, err)
		}
		if err := r.access.accountMay(ctx, s.comp.GetNamespace(), sa, m, t.ns, verbs...); err != nil {
			return r.stallIfDenied(s, "Authorize", err)
		}
	}
	return ctrl.Result{}, nil
}

// stallIfDenied stalls the Composition with reason Forbidden when err is an
// AccessDeniedError, and looks again after ForbiddenRecheck; any other
// error is returned for backoff.
func (r *CompositionReconciler) stallIfDenied(s *scope, action string, err error) (ctrl.Result, error) {
	var denied *AccessDeniedError
	if !errors.As(err, &denied) {
		return ctrl.Result{}, err
	}
	status.SetStalled(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonForbidden, denied.Error())
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonForbidden, action, "%s", denied.Error())
	s.done = true
	return ctrl.Result{RequeueAfter: ForbiddenRecheck}, nil
}
