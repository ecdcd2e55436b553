package access

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
)

// DeniedError reports a verb on a member kind that the controller
// itself, or the ServiceAccount a Composition applies as, may not use. It is
// terminal for the pass: the Composition is Stalled with reason Forbidden
// and nothing of it is applied or pruned.
type DeniedError struct {
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

func (e *DeniedError) Error() string {
	where := "cluster-wide"
	if e.Namespace != "" {
		where = "in namespace " + e.Namespace
	}
	return fmt.Sprintf("%s may not %s %s (%s) %s: %s", e.Subject, e.Verb, e.Resource, e.Kind, where, e.Hint)
}

// Checker asks the API server, with access reviews made by the
// controller, what the controller and the ServiceAccounts of Compositions
// may do with member kinds, and remembers the answers for a while (at
// most maxAccessAnswers, the least recently used going first).
type Checker struct {
	// DefaultAccount is the controller's default ServiceAccount name
	// (engine.Options.DefaultServiceAccount): a denial to it says how
	// to create it, since a namespace has none until an admin makes it.
	DefaultAccount string

	client  client.Client // the controller's own client
	answers *cache.LRUExpireCache

	mu   sync.Mutex
	self string // the controller's user name, once known
}

// maxAccessAnswers bounds the answers kept: one per verb, kind, namespace
// and ServiceAccount asked about within the TTLs.
const maxAccessAnswers = 10000

// NewChecker returns a Checker that makes its reviews with c, the
// controller's own client.
func NewChecker(c client.Client) *Checker {
	return &Checker{client: c, answers: cache.NewLRUExpireCache(maxAccessAnswers)}
}

type accessKey struct {
	user      string // "" is the controller itself
	verb      string
	resource  schema.GroupResource
	namespace string
}

func (a *Checker) cached(k accessKey) (allowed, ok bool) {
	v, ok := a.answers.Get(k)
	if !ok {
		return false, false
	}
	return v.(bool), true
}

func (a *Checker) remember(k accessKey, allowed bool, ttl time.Duration) {
	if ttl > 0 {
		a.answers.Add(k, allowed, ttl)
	}
}

// ControllerMay checks, with SelfSubjectAccessReviews, that the controller
// may use every verb on the mapping's resource cluster-wide, as a
// label-selected informer of that kind needs (list and watch).
func (a *Checker) ControllerMay(ctx context.Context, m *meta.RESTMapping, verbs ...string) error {
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
			return &DeniedError{Subject: a.controller(ctx), Verb: verb,
				Kind: m.GroupVersionKind.Kind, Resource: m.Resource.GroupResource().String(), Hint: hintController}
		}
	}
	return nil
}

// AccountMay checks, with SubjectAccessReviews, that the ServiceAccount
// name of namespace saNamespace may use every verb on the mapping's
// resource in namespace ns ("" for a cluster-scoped kind).
func (a *Checker) AccountMay(ctx context.Context, saNamespace, name string, m *meta.RESTMapping, ns string, verbs ...string) error {
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
			return &DeniedError{Subject: "ServiceAccount " + saNamespace + "/" + name, Verb: verb,
				Kind: m.GroupVersionKind.Kind, Resource: m.Resource.GroupResource().String(), Namespace: ns, Hint: a.hintAccount(saNamespace, name)}
		}
	}
	return nil
}

// How to grant a missing permission, to the controller or to a ServiceAccount.
const (
	hintController = `grant it to the controller with a ClusterRole labelled rbac.stencil.dev/aggregate-to-manager: "true" (see config/rbac/aggregate.yaml)`
	hintAccount    = "grant it to the ServiceAccount with a Role or ClusterRole bound to it"
)

// hintAccount says how to grant a missing permission to ServiceAccount
// name of namespace ns; for the controller's default ServiceAccount, also
// how to create it, which a new namespace lacks.
func (a *Checker) hintAccount(ns, name string) string {
	if name == "" || name != a.DefaultAccount {
		return hintAccount
	}
	return fmt.Sprintf("stencil writes as the namespace's ServiceAccount %s (the controller's default) when the parent names none: "+
		"create ServiceAccount %s in namespace %s and a Role with the kinds its Bundles render (get, create, patch, delete) "+
		"bound to it with a RoleBinding (see docs/security.md), or name another ServiceAccount in spec.serviceAccountName", name, name, ns)
}

// controller names the controller as the subject of a denial.
func (a *Checker) controller(ctx context.Context) string {
	return "the controller (" + a.whoAmI(ctx) + ")"
}

// Denied describes a verb on a kind that the API server forbade: to the
// ServiceAccount account of namespace saNamespace, or to the controller
// itself when account is "". mapper names the kind's resource when it
// knows the kind.
func (a *Checker) Denied(ctx context.Context, mapper meta.RESTMapper, saNamespace, account string, gk schema.GroupKind, verb, ns string) *DeniedError {
	e := &DeniedError{Subject: a.controller(ctx), Verb: verb, Kind: gk.Kind, Resource: guessResource(gk), Namespace: ns, Hint: hintController}
	if account != "" {
		e.Subject, e.Hint = "ServiceAccount "+saNamespace+"/"+account, a.hintAccount(saNamespace, account)
	}
	if m, err := mapper.RESTMapping(gk); err == nil {
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
func (a *Checker) whoAmI(ctx context.Context) string {
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
