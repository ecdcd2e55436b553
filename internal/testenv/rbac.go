package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API server's RBAC authorizer reads Roles, ClusterRoles and their
// bindings from informers: a grant a test has just written takes effect
// some time after the write (on a loaded machine, seconds). Until then the
// subject is refused by RBAC itself ("cannot create resource"), stencil's
// admission policy finds it may not use a ServiceAccount, and the
// controller, acting as an account just granted, stalls Forbidden and
// looks again only a minute later (engine.ForbiddenRecheck). A test
// that grants waits for the grant before it acts on it.

// Subject is who a grant is for, as the authorizer sees a request of
// theirs.
type Subject struct {
	// User is the user name: "alice", or a ServiceAccount's
	// "system:serviceaccount:<namespace>:<name>" (ServiceAccountSubject).
	User string
	// Groups are the user's groups, "system:authenticated" among them
	// when the grant is to a group.
	Groups []string
}

// ServiceAccountSubject is the ServiceAccount namespace/name as the
// authorizer sees its requests (a token's, or an impersonation of it).
func ServiceAccountSubject(namespace, name string) Subject {
	return Subject{User: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
}

// Granted returns nil once the API server authorizes s for every verb of
// every rule of rules, on each of its resources (a "resource/subresource"
// is split; with resourceNames, each name) or non-resource URLs, in
// namespace ("" cluster-wide), as SubjectAccessReviews c creates say; and
// the last refusal when ctx ends first. c must be allowed to create
// SubjectAccessReviews (the cluster admin's).
func Granted(ctx context.Context, c client.Client, s Subject, namespace string, rules ...rbacv1.PolicyRule) error {
	return pollLast(ctx, fmt.Sprintf("%s is not granted %d rules in %q", s.User, len(rules), namespace),
		func(ctx context.Context) error { return allowed(ctx, c, s, namespace, rules) })
}

// WaitGranted fails t unless, within timeout (Timeout when 0), the API
// server authorizes s for every rule of rules in namespace, as Granted:
// call it after writing a Role and its RoleBinding (or a ClusterRole the
// subject is bound to), before the subject's first request under them.
func WaitGranted(t testing.TB, c client.Client, s Subject, namespace string, timeout time.Duration, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx, cancel := withTimeout(timeout)
	defer cancel()
	if err := Granted(ctx, c, s, namespace, rules...); err != nil {
		t.Fatalf("after %s: %v", orDefault(timeout), err)
	}
}

// allowed returns nil when every access rules describe is allowed to s,
// else the first refused.
func allowed(ctx context.Context, c client.Client, s Subject, namespace string, rules []rbacv1.PolicyRule) error {
	for _, a := range attributes(namespace, rules) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: s.User, Groups: s.Groups, ResourceAttributes: a.resource, NonResourceAttributes: a.nonResource}}
		if err := c.Create(ctx, review); err != nil {
			return fmt.Errorf("review the access of %s: %w", s.User, err)
		}
		if !review.Status.Allowed {
			return fmt.Errorf("%s may not %s (%s)", s.User, a, review.Status.Reason)
		}
	}
	return nil
}

// access is one request's attributes.
type access struct {
	resource    *authorizationv1.ResourceAttributes
	nonResource *authorizationv1.NonResourceAttributes
}

func (a access) String() string {
	if a.nonResource != nil {
		return a.nonResource.Verb + " " + a.nonResource.Path
	}
	r := a.resource
	s := r.Verb + " " + r.Resource
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if r.Group != "" {
		s += "." + r.Group
	}
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.Namespace != "" {
		s += " in " + r.Namespace
	}
	return s
}

// attributes are the requests rules allow, one per verb, group, resource
// and name (or verb and URL).
func attributes(namespace string, rules []rbacv1.PolicyRule) []access {
	var out []access
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				out = append(out, access{nonResource: &authorizationv1.NonResourceAttributes{Verb: verb, Path: url}})
			}
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					res, sub, _ := strings.Cut(resource, "/")
					for _, name := range names {
						out = append(out, access{resource: &authorizationv1.ResourceAttributes{
							Namespace: namespace, Verb: verb, Group: group, Resource: res, Subresource: sub, Name: name}})
					}
				}
			}
		}
	}
	return out
}
