package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelBundle, on a BundleRevision, names the Bundle it is a revision of.
const LabelBundle = "stencil.dev/bundle"

// BundleRevisionSpec is one content of a Bundle, as it was: immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BundleRevision is immutable"
type BundleRevisionSpec struct {
	// bundle is the name of the Bundle this is a revision of.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Bundle string `json:"bundle"`

	// revision is the content hash of the revision (sha256:HEX), the
	// Bundle's status.revision while it held this content, and the
	// bundleRevision a parent rendered from it records.
	// +required
	// +kubebuilder:validation:MaxLength=80
	Revision string `json:"revision"`

	// number orders the revisions of a Bundle: 1 for the first recorded,
	// then one more than the highest recorded when this one was.
	// +required
	// +kubebuilder:validation:Minimum=1
	Number int64 `json:"number"`

	// template is what parents render: the Bundle's files (none for a
	// Bundle with a source: see source), schema, permissions, published
	// api, outputs and readiness rules as they were. What only says how
	// the Bundle is used (namespaceSelector, rollout, revisions, pruning)
	// is not kept.
	// +required
	Template BundleSpec `json:"template"`

	// source is, for a Bundle with a source, the chart this revision
	// renders: pulled again by its digest when not in the controller's
	// cache, and verified again when the Bundle's keys have changed since.
	// Its files are never stored here (a chart may hold megabytes).
	// +optional
	Source *SourceStatus `json:"source,omitempty"`
}

// BundleRevisionStatus counts the parents on a revision.
type BundleRevisionStatus struct {
	// parents counts the parents (Compositions and instances of the
	// published kind, in every shard) whose last render was this revision.
	// +optional
	Parents int32 `json:"parents"`
	// ready counts those of them that are Ready.
	// +optional
	Ready int32 `json:"ready"`
	// pinned counts the parents pinned to this revision.
	// +optional
	Pinned int32 `json:"pinned,omitempty"`
	// shards are the counts of each shard's controller, which sum to the
	// totals above.
	// +optional
	// +listType=map
	// +listMapKey=shard
	Shards []RevisionShardStatus `json:"shards,omitempty"`
}

// RevisionShardStatus is one shard's count of the parents on a revision.
type RevisionShardStatus struct {
	// shard is the shard ("" for the unsharded controller).
	// +required
	Shard string `json:"shard"`
	// parents counts this shard's parents on the revision.
	// +optional
	Parents int32 `json:"parents"`
	// ready counts those of them that are Ready.
	// +optional
	Ready int32 `json:"ready"`
	// pinned counts this shard's parents pinned to the revision.
	// +optional
	Pinned int32 `json:"pinned,omitempty"`
}

// BundleRevision is one content of a Bundle, kept so that parents can stay
// on it, pin it and go back to it: cluster-scoped, immutable, named
// <bundle>-<the first 10 hex digits of its content hash>.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=bdlrev,categories=stencil
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Bundle",type=string,JSONPath=`.spec.bundle`
// +kubebuilder:printcolumn:name="Number",type=integer,JSONPath=`.spec.number`
// +kubebuilder:printcolumn:name="Parents",type=integer,JSONPath=`.status.parents`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Pinned",type=integer,JSONPath=`.status.pinned`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.revision`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BundleRevision struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the revision's content.
	// +required
	Spec BundleRevisionSpec `json:"spec"`

	// status counts the parents on the revision.
	// +optional
	Status BundleRevisionStatus `json:"status,omitempty"`
}

// BundleRevisionList is a list of BundleRevisions.
// +kubebuilder:object:root=true
type BundleRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the BundleRevisions.
	Items []BundleRevision `json:"items"`
}
