// Package v1alpha1 holds the stencil.dev/v1alpha1 API: the cluster-scoped
// Bundle (a folder of Go templates with a values schema) and the namespaced
// Composition (a Bundle plus values, the ApplySet parent of what it renders).
//
// This package holds types only: no client, no behaviour beyond deepcopy and
// small pure helpers. Every field's godoc starts with its JSON name; validation
// lives in kubebuilder markers so the API server enforces it, and the CRDs in
// config/crd are generated from here (make manifests).
//
// +kubebuilder:object:generate=true
// +groupName=stencil.dev
package v1alpha1
