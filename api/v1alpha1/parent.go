package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// ParentGVK is the Composition's group, version and kind: an ApplySet
// parent's kind names its ApplySet id.
func (c *Composition) ParentGVK() schema.GroupVersionKind {
	return GroupVersion.WithKind("Composition")
}

// ParentSpec returns the Composition's spec: the Bundle, the values and the
// knobs (serviceAccountName, suspend, prune, deletionPolicy).
func (c *Composition) ParentSpec() *CompositionSpec { return &c.Spec }

// ParentStatus returns the Composition's status, as last written.
func (c *Composition) ParentStatus() *CompositionStatus { return &c.Status }
