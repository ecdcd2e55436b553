package publish

import (
	"crypto/sha256"
	"encoding/hex"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// AccessPolicyName is stencil's ValidatingAdmissionPolicy, which checks who
// may use a parent's ServiceAccount (package reconcile/authority); each
// published kind has a binding of it, AccessBindingName.
const AccessPolicyName = "stencil-access"

// AccessBindingName is the name of the binding of AccessPolicyName for the
// published kind gr: stencil-access.<plural>.<group>, or a digest of it
// when that is too long for a name. The controller writes that binding,
// and no other of a published kind, by the name the kind's ClusterRole
// grants (ClusterRoles).
func AccessBindingName(gr schema.GroupResource) string {
	name := AccessPolicyName + "." + gr.String()
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(gr.String()))
	return AccessPolicyName + "." + hex.EncodeToString(sum[:16])
}

// ClusterRoles are what a cluster admin applies for a published kind,
// each labelled LabelBundle:
//
//   - stencil:published:<plural>.<group>, aggregated into the controller's
//     role: get, list, watch, update and patch the instances, their status
//     and their finalizers, so the controller can serve the kind; and
//     update, patch and delete the kind's binding of stencil's admission
//     policy, by its name only (AccessBindingName);
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
	controller := role("", map[string]string{LabelAggregateToManager: "true"}, rbacv1.PolicyRule{
		APIGroups: []string{d.Group},
		Resources: []string{d.Plural, d.Plural + "/status", d.Plural + "/finalizers"},
		Verbs:     []string{"get", "list", "watch", "update", "patch"},
	})
	controller.Rules = append(controller.Rules, rbacv1.PolicyRule{
		APIGroups:     []string{admissionregistrationv1.GroupName},
		Resources:     []string{"validatingadmissionpolicybindings"},
		ResourceNames: []string{AccessBindingName(schema.GroupResource{Group: d.Group, Resource: d.Plural})},
		Verbs:         []string{"update", "patch", "delete"},
	})
	return []*rbacv1.ClusterRole{
		controller,
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
