package bundletest

import "encoding/json"

// File is one case file: a YAML file directly in a bundle's tests/
// folder (*.yaml or *.yml). Its fields are read strictly: a field this
// format does not know is an error naming it.
type File struct {
	// cases are the file's cases, run in order. Their names are unique
	// within the file.
	// +required
	Cases []Case `json:"cases"`
}

// Case is one render of the bundle and what must hold of it.
type Case struct {
	// name says what the case checks, such as "three replicas"; it names
	// the case in the output, in JUnit and in its snapshot files.
	// +required
	Name string `json:"name"`

	// valuesFiles are values files (YAML), relative to the case file's
	// folder, merged in order (maps merge, other values replace), as
	// --values files are.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// values are merged over valuesFiles; the result is merged over the
	// bundle's values.yaml as a Composition's spec.values are (a null
	// deletes a default), or is the spec of an instance (parent.kind).
	// +optional
	Values json.RawMessage `json:"values,omitempty"`

	// parent is the parent the bundle is rendered for: a Composition by
	// default.
	// +optional
	Parent Parent `json:"parent,omitempty"`

	// capabilities replace the offline .Capabilities (Kubernetes
	// v1.36.3 serving every built-in API).
	// +optional
	Capabilities *Capabilities `json:"capabilities,omitempty"`

	// lookups are the objects the templates' lookup sees, as a cluster
	// would hold them (apiVersion, kind and metadata.name required;
	// metadata.namespace for a namespaced object). Without them every
	// lookup is empty, as in `helm template`.
	// +optional
	Lookups []json.RawMessage `json:"lookups,omitempty"`

	// observed are the set's members as they are live, by id (the
	// stencil.dev/id annotation, else Kind/name): what `observed "ID"
	// "PATH"` reads, each merged over the member the render makes. An
	// object held back until a value is observed (stencil.dev/wait-for)
	// is rendered once its values are here. Without them, the render is
	// the controller's first pass.
	// +optional
	Observed map[string]json.RawMessage `json:"observed,omitempty"`

	// assert lists what must hold of the render, each item one
	// assertion. A case with fails holds nothing else.
	// +required
	Assert []Assertion `json:"assert"`
}

// Parent is the parent a case renders the bundle for.
type Parent struct {
	// name is the parent's name: .Release.Name and .Composition.Name
	// ("release-name" when empty, as `stencil render`'s --name).
	// +optional
	Name string `json:"name,omitempty"`
	// namespace is the parent's namespace, where namespaced objects land
	// ("default" when empty).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// kind renders for an instance of the kind the bundle publishes (its
	// api: in stencil.yaml) rather than for a Composition: its spec is
	// the values. "" or Composition: a Composition.
	// +optional
	Kind string `json:"kind,omitempty"`
	// apiVersion is the group/version an instance is written in (the
	// api's render version when empty); another served version is
	// converted with the bundle's own rules, as the API server converts
	// it.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// labels and annotations are the parent's (.Composition.Labels,
	// .Composition.Annotations).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// upgrade renders as the controller renders once the set has
	// members: .Release.IsUpgrade true, IsInstall false.
	// +optional
	Upgrade bool `json:"upgrade,omitempty"`
}

// Capabilities are a case's .Capabilities.
type Capabilities struct {
	// kubeVersion is .Capabilities.KubeVersion, such as v1.30.2
	// (v1.36.3 when empty); Chart.yaml's kubeVersion is checked against
	// it.
	// +optional
	KubeVersion string `json:"kubeVersion,omitempty"`
	// apiVersions are added to the served API versions: group/versions
	// ("monitoring.coreos.com/v1") and group/version/Kinds
	// ("monitoring.coreos.com/v1/ServiceMonitor"). A kind added this way
	// can be rendered: it is namespaced unless clusterScoped names it.
	// +optional
	APIVersions []string `json:"apiVersions,omitempty"`
	// withoutAPIVersions are taken out of the served API versions: a
	// group/version takes its kinds with it ("networking.k8s.io/v1"
	// makes an older cluster without Ingress v1).
	// +optional
	WithoutAPIVersions []string `json:"withoutAPIVersions,omitempty"`
	// clusterScoped lists, as group/Kind, the kinds of apiVersions that
	// are cluster-scoped ("example.com/Widget").
	// +optional
	ClusterScoped []string `json:"clusterScoped,omitempty"`
}

// Assertion is one thing that must hold of a case's render: exactly one
// of its fields is set.
type Assertion struct {
	// exists: at least one rendered object matches (count of them, when
	// count is set).
	// +optional
	Exists *ExistsAssertion `json:"exists,omitempty"`
	// absent: no rendered object matches.
	// +optional
	Absent *Selector `json:"absent,omitempty"`
	// equal: the value at path of every matching object equals value.
	// +optional
	Equal *EqualAssertion `json:"equal,omitempty"`
	// match: the value at path of every matching object matches regex.
	// +optional
	Match *MatchAssertion `json:"match,omitempty"`
	// cel: a CEL expression over the rendered objects is true.
	// +optional
	CEL *CELAssertion `json:"cel,omitempty"`
	// snapshot: the matching objects, as `stencil render` prints them,
	// are byte for byte the snapshot file's.
	// +optional
	Snapshot *SnapshotAssertion `json:"snapshot,omitempty"`
	// fails: the render fails, with an error matching message.
	// +optional
	Fails *FailsAssertion `json:"fails,omitempty"`
}

// Selector picks rendered objects: those whose every field given is
// equal to the object's. An empty selector picks every object.
type Selector struct {
	// apiVersion, such as apps/v1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// kind, such as Deployment.
	// +optional
	Kind string `json:"kind,omitempty"`
	// name is metadata.name.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace is metadata.namespace as the controller applies it
	// (namespaced objects are in the parent's namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ExistsAssertion is an exists assertion.
type ExistsAssertion struct {
	Selector `json:",inline"`
	// count, when set, is how many objects must match.
	// +optional
	Count *int `json:"count,omitempty"`
}

// EqualAssertion is an equal assertion.
type EqualAssertion struct {
	Selector `json:",inline"`
	// path is a field path (see the package doc): spec.replicas,
	// spec.template.spec.containers[0].image,
	// spec.template.spec.containers[name=web].image,
	// metadata.annotations["stencil.dev/id"].
	// +required
	Path string `json:"path"`
	// value is what the field must equal, compared as JSON (2 and 2.0
	// are equal; a list or an object is compared whole). null matches
	// a field that is absent or null.
	// +required
	Value json.RawMessage `json:"value"`
}

// MatchAssertion is a match assertion.
type MatchAssertion struct {
	Selector `json:",inline"`
	// path is a field path, as equal's.
	// +required
	Path string `json:"path"`
	// regex is a Go regular expression (RE2) the value must match
	// somewhere (anchor it with ^ and $ to match it whole). A number or
	// a boolean is matched as its JSON text; a list, an object or an
	// absent field never matches.
	// +required
	Regex string `json:"regex"`
}

// CELAssertion is a cel assertion.
type CELAssertion struct {
	// expression is a CEL expression of type bool, in the Kubernetes
	// CEL environment of CRD validation rules, over objects (the
	// rendered objects, a list, in render order) and members (the same
	// by id: stencil.dev/id, else Kind/name). Each evaluation is bounded
	// at the API server's per-call cost limit.
	// +required
	Expression string `json:"expression"`
	// message replaces the expression in the failure's text.
	// +optional
	Message string `json:"message,omitempty"`
}

// SnapshotAssertion is a snapshot assertion.
type SnapshotAssertion struct {
	Selector `json:",inline"`
	// name tells the snapshots of one case apart: the file is
	// __snapshot__/<case file name without .yaml>/<case name as a slug>.yaml
	// in the case file's folder, or ...<slug>-<name>.yaml with a name.
	// stencil test --update-snapshots writes it.
	// +optional
	Name string `json:"name,omitempty"`
}

// FailsAssertion is a fails assertion.
type FailsAssertion struct {
	// message is a Go regular expression the render's error must match
	// somewhere, such as 'image is required'.
	// +required
	Message string `json:"message"`
}
