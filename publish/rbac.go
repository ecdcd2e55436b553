package publish

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Labels that aggregate a ClusterRole into another.
const (
	// LabelAggregateToManager aggregates a ClusterRole into the
	// controller's stencil-apply role (config/rbac/aggregate.yaml).
	LabelAggregateToManager = "rbac.stencil.dev/aggregate-to-manager"
	// LabelAggregateToAdmin, LabelAggregateToEdit and LabelAggregateToView
	// aggregate a ClusterRole into the default admin, edit and view roles.
	LabelAggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	LabelAggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	LabelAggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// ClusterRolePrefix starts the name of every ClusterRole of a published kind.
const ClusterRolePrefix = "stencil:published:"

// ClusterRoles are what a cluster admin applies for a published kind,
// each labelled LabelBundle:
//
//   - stencil:published:<plural>.<group>, aggregated into the controller's
//     role: get, list, watch, update and patch the instances, their status
//     and their finalizers, so the controller can serve the kind;
//   - ...-edit, aggregated into admin and edit: create, update, patch,
//     delete (one or a collection), get, list and watch instances, so
//     namespace admins and editors may use the kind;
//   - ...-view, aggregated into view: get, list and watch instances.
//
// A kind whose instances only some tenants may create is granted with
// RoleBindings of the -edit role instead: remove its aggregation labels.
func ClusterRoles(bundleName string, api v1alpha1.BundleAPI) []*rbacv1.ClusterRole {
	d := Defaulted(api)
	name := ClusterRolePrefix + d.Plural + "." + d.Group
	role := func(suffix string, labels map[string]string, rule rbacv1.PolicyRule) *rbacv1.ClusterRole {
		labels[LabelBundle] = bundleName
		return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name + suffix, Labels: labels},
			Rules:      []rbacv1.PolicyRule{rule},
		}
	}
	return []*rbacv1.ClusterRole{
		role("", map[string]string{LabelAggregateToManager: "true"}, rbacv1.PolicyRule{
			APIGroups: []string{d.Group},
			Resources: []string{d.Plural, d.Plural + "/status", d.Plural + "/finalizers"},
			Verbs:     []string{"get", "list", "watch", "update", "patch"},
		}),
		role("-edit", map[string]string{LabelAggregateToAdmin: "true", LabelAggregateToEdit: "true"}, rbacv1.PolicyRule{
			APIGroups: []string{d.Group},
			Resources: []string{d.Plural},
			Verbs:     []string{"create", "update", "patch", "delete", "deletecollection", "get", "list", "watch"},
		}),
		role("-view", map[string]string{LabelAggregateToView: "true"}, rbacv1.PolicyRule{
			APIGroups: []string{d.Group},
			Resources: []string{d.Plural},
			Verbs:     []string{"get", "list", "watch"},
		}),
	}
}
