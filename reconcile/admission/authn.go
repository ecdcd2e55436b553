package admission

import (
	"context"
	"crypto/tls"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// Who may see live data in a preview.
//
// The webhook server verifies a client certificate against
// ServingOptions.ClientCAFile when the caller presents one
// (tls.VerifyClientCertIfGiven) and serves callers without one too: they
// get the review of their own object (a refusal with the file:line or
// field path, from the request and the Bundle) but never a value, a path
// or a name read from the cluster. Only a caller whose certificate the CA
// signed (and, with ServingOptions.ClientNames, that is named so) is the
// API server: its dry runs get the preview, each child filtered by what
// the request's user may get (readChecker).

// callerKey is the context key of a review's callerInfo.
type callerKey struct{}

// callerInfo is what the TLS connection says of a review's caller.
type callerInfo struct {
	// authenticated: the caller presented a client certificate that the
	// client CA signed and, when names are required, that bears one.
	authenticated bool
}

// withCaller is the admission.Webhook's WithContextFunc: it records in the
// review's context whether the HTTP request came over a connection whose
// client certificate was verified (and names one of names, when any).
func withCaller(names []string) func(context.Context, *http.Request) context.Context {
	return func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, callerKey{}, callerInfo{authenticated: verifiedCaller(r.TLS, names)})
	}
}

// verifiedCaller reports whether the connection's client certificate was
// verified against the client CA and, when names is not empty, names one
// of them (its common name or a DNS name of its subject alternative
// names). A server with no client CA verifies no certificate: no caller is.
func verifiedCaller(cs *tls.ConnectionState, names []string) bool {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return false
	}
	if len(names) == 0 {
		return true
	}
	leaf := cs.VerifiedChains[0][0]
	return slices.Contains(names, leaf.Subject.CommonName) ||
		slices.ContainsFunc(leaf.DNSNames, func(n string) bool { return slices.Contains(names, n) })
}

// callerAuthenticated reports whether ctx is a review from an
// authenticated caller (see withCaller). A context withCaller did not make
// is not.
func callerAuthenticated(ctx context.Context) bool {
	c, _ := ctx.Value(callerKey{}).(callerInfo)
	return c.authenticated
}

// notReviewedWarning is the one answer to a caller that is not
// authenticated: nothing is rendered, reviewed or read for it, and the
// request is let through (the API server's own checks, stencil's
// admission policy among them, still apply; the controller reports).
const notReviewedWarning = "stencil: not reviewed: the webhook's caller presented no client certificate signed by --webhook-client-ca (and named by --webhook-client-name); the controller will report, and `stencil diff` previews"

// How long an answer of readChecker is kept: briefly, so a burst of dry
// runs costs one review per kind and namespace, and a grant or a revoke
// counts within seconds.
const (
	readAnswerTTL  = 10 * time.Second
	maxReadAnswers = 4096
)

// readChecker asks, with SubjectAccessReviews the controller makes,
// whether the user of an admission request may get a kind in a namespace,
// and remembers the answers for readAnswerTTL (at most maxReadAnswers,
// the least recently used going first). Without the right, a preview lists
// that kind's children without their paths or values.
type readChecker struct {
	client  client.Client
	answers *cache.LRUExpireCache
}

func newReadChecker(c client.Client) *readChecker {
	return &readChecker{client: c, answers: cache.NewLRUExpireCache(maxReadAnswers)}
}

// readKey is one question: may user (with its groups) get resource in
// namespace.
type readKey struct {
	user, groups, uid string
	resource          schema.GroupResource
	namespace         string
}

// may returns whether user may get gk in namespace ns ("" for a
// cluster-scoped kind). An unknown kind, and an error asking, is no.
func (c *readChecker) may(ctx context.Context, mapper meta.RESTMapper, user authenticationv1.UserInfo, gk schema.GroupKind, ns string) bool {
	if c == nil || user.Username == "" {
		return false
	}
	m, err := mapper.RESTMapping(gk)
	if err != nil {
		return false
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	k := readKey{user: user.Username, groups: strings.Join(user.Groups, "\x00"), uid: user.UID, resource: m.Resource.GroupResource(), namespace: ns}
	if v, ok := c.answers.Get(k); ok {
		return v.(bool)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for key, v := range user.Extra {
		extra[key] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Group: m.Resource.Group, Resource: m.Resource.Resource, Namespace: ns},
	}}
	if err := c.client.Create(ctx, review); err != nil {
		return false
	}
	c.answers.Add(k, review.Status.Allowed, readAnswerTTL)
	return review.Status.Allowed
}

// readable is what the request's user may get, for childWarnings.
func (h *reviewer) readable(ctx context.Context, user authenticationv1.UserInfo) readable {
	return func(gk schema.GroupKind, ns string) bool {
		return h.readers.may(ctx, h.mapper, user, gk, ns)
	}
}

// previewKinds are the kinds a preview's pruned members may be of: the
// parent's recorded ApplySet inventory (applyset.Recorded, what prune
// acts on) and the planned objects' kinds.
func previewKinds(parent applyset.Parent, planned *plan.Plan) []schema.GroupKind {
	recorded, _ := applyset.Recorded(parent)
	kinds := recorded.GroupKinds
	for _, o := range planned.Objects {
		kinds = append(kinds, o.GroupVersionKind().GroupKind())
	}
	return kinds
}
