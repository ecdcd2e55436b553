package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleSpec is a bundle's folder of templates and the rules for its values.
type BundleSpec struct {
	// files maps a slash-separated path inside the bundle to its content: the
	// bundle's folder. It holds values.yaml (default values), templates/**/*.yaml
	// (rendered and emitted), templates/**/_*.tpl (helpers, not emitted), an
	// optional Chart.yaml (read into .Chart), an optional values.schema.json (a
	// JSON Schema of the values, as a Helm chart's: validates, never defaults)
	// and an optional kustomization.yaml with the files it references.
	// `stencil bundle pack DIR` writes it.
	// +required
	// +kubebuilder:validation:MinProperties=1
	Files map[string]string `json:"files"`

	// schema is the OpenAPI v3 schema of the values, in the dialect of a CRD's
	// openAPIV3Schema. Defaults in it are applied to the merged values, which
	// are then validated against it; every violation is reported with its
	// field path. A folder holds it as values.schema.yaml. Without it or a
	// values.schema.json file, values are not validated.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Schema *apiextensionsv1.JSON `json:"schema,omitempty"`

	// permissions widens what the bundle may create beyond namespaced objects
	// in the Composition's own namespace. The default allows nothing beyond.
	// +optional
	Permissions BundlePermissions `json:"permissions,omitempty"`

	// allowNondeterministic lets templates call functions whose result changes
	// on every render (now, rand*, uuidv4, genPrivateKey, genCA, ...). Off by
	// default: such a value makes every reconcile a write, and a generated
	// secret would rotate on every reconcile.
	// +optional
	AllowNondeterministic bool `json:"allowNondeterministic,omitempty"`
}

// BundlePermissions lists what a bundle may create outside the Composition's
// own namespace. A Composition that renders anything else is refused whole.
type BundlePermissions struct {
	// clusterScoped lists the cluster-scoped kinds the bundle may create, such
	// as {group: rbac.authorization.k8s.io, kind: ClusterRole}. A kind of "*"
	// allows every kind of the group.
	// +optional
	// +listType=atomic
	ClusterScoped []GroupKind `json:"clusterScoped,omitempty"`

	// namespaces lists the namespaces, other than the Composition's own, that
	// namespaced objects may name. "*" allows every namespace.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`
}

// GroupKind names a kind of object by API group ("" for the core group).
type GroupKind struct {
	// group is the API group, "" for the core group.
	// +optional
	Group string `json:"group"`

	// kind is the object kind, or "*" for every kind of the group.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// BundleStatus is what the controller observed of a bundle.
type BundleStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// revision is the content hash of the bundle's files, schema and options;
	// it changes when any of them changes and is stable otherwise.
	// +optional
	Revision string `json:"revision,omitempty"`

	// conditions holds Ready: True when the bundle loads and its templates
	// parse, False with the file and line of the first problem otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Bundle is a cluster-scoped folder of Go templates that Compositions render.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=bdl,categories=stencil
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Bundle struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the bundle's templates and value rules.
	// +required
	Spec BundleSpec `json:"spec"`

	// status is what the controller observed of the bundle.
	// +optional
	Status BundleStatus `json:"status,omitempty"`
}

// BundleList is a list of Bundles.
// +kubebuilder:object:root=true
type BundleList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Bundles.
	Items []Bundle `json:"items"`
}
