// Package reconcile is the only package of stencil that talks to the API
// server: it renders a Composition's Bundle with package templates, applies
// the result with server-side apply, records it as a KEP-3659 ApplySet whose
// parent is the Composition, prunes what is no longer rendered and reports
// status from the readiness of the members.
package reconcile

// The manager applies and prunes arbitrary kinds that bundles render, so it
// needs every verb on every resource; tenant bounds come from impersonation
// (spec.serviceAccountName) and Bundle permissions, not from this role.
//
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions;bundles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions/status;bundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=*,resources=*,verbs=*
