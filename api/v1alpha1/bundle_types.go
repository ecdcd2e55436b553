package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CRDPolicy is what becomes of the CustomResourceDefinitions of a
// chart's crds/ folders (BundleSpec.CRDs).
type CRDPolicy string

// The CRD policies.
const (
	// CRDsCreate creates the CRDs that do not exist and leaves the others.
	CRDsCreate CRDPolicy = "Create"
	// CRDsCreateReplace creates them, or updates them to the chart's.
	CRDsCreateReplace CRDPolicy = "CreateReplace"
	// CRDsSkip leaves the crds/ folders out.
	CRDsSkip CRDPolicy = "Skip"
)

// BundleSpec is a bundle's folder of templates and the rules for its values.
// +kubebuilder:validation:XValidation:rule="(has(self.files) && size(self.files) > 0) != has(self.source)",message="exactly one of files (non-empty) and source must be set"
type BundleSpec struct {
	// files maps a slash-separated path inside the bundle to its content: the
	// bundle's folder. It holds values.yaml (default values), templates/**
	// (every file a template, as Helm's: rendered and emitted, but
	// templates/**/_* helpers, never emitted, and NOTES.txt, the release
	// notes), an optional Chart.yaml (read into .Chart), an optional values.schema.json (a
	// JSON Schema of the values, as a Helm chart's: validates, never defaults)
	// and an optional kustomization.yaml with the files it references.
	// `stencil bundle pack DIR` writes it. Exactly one of files and source
	// is set.
	// +optional
	Files map[string]string `json:"files,omitempty"`

	// source names a chart in an OCI registry or a Helm chart repository
	// that the controller pulls in place of files: the chart's files are
	// the Bundle's, and status.source records what was pulled. Exactly one
	// of files and source is set.
	// +optional
	Source *BundleSource `json:"source,omitempty"`

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

	// namespaceSelector selects, by their labels, the namespaces whose
	// parents (Compositions, instances of the kind the Bundle publishes)
	// may use this Bundle. A parent in another namespace is refused at
	// admission and Stalled (reason NotAllowed) by the controller, which
	// applies and prunes nothing of it. Unset, every namespace may; an
	// empty selector ({}) selects every namespace too.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// allowNondeterministic lets templates call now and ago, whose result
	// changes on every render. Off by default: such a value makes every
	// reconcile a write. The generators (rand*, uuidv4, gen*, bcrypt,
	// htpasswd, ...) need no opt-in: their values are made once per set
	// and kept.
	// +optional
	AllowNondeterministic bool `json:"allowNondeterministic,omitempty"`

	// crds says what becomes of the CustomResourceDefinitions in the
	// crds/ folders of the chart and of its enabled subcharts, which are
	// applied, as the parent's ServiceAccount, before anything else of a
	// pass, and never deleted with a set: Create (the default, Helm's
	// policy) creates those absent and leaves existing ones as they are;
	// CreateReplace also updates existing ones to the chart's, with
	// server-side apply; Skip leaves the folders out. They need the
	// permission spec.permissions.clusterScoped gives
	// apiextensions.k8s.io/CustomResourceDefinition.
	// +optional
	// +kubebuilder:validation:Enum=Create;CreateReplace;Skip
	CRDs CRDPolicy `json:"crds,omitempty"`

	// api, when set, publishes a kind whose instances render this Bundle:
	// the controller keeps a CustomResourceDefinition named <plural>.<group>
	// whose spec is the values schema and whose status is a Composition's,
	// and reconciles every instance as it reconciles a Composition of this
	// Bundle, the instance being the ApplySet parent. The folder form holds
	// it under api: in stencil.yaml.
	// +optional
	API *BundleAPI `json:"api,omitempty"`

	// valuesMigrations turn values that earlier revisions' schemas
	// accepted into values the current schema accepts, applied at render
	// time to a parent whose values the current schema refuses (see
	// ValuesMigration). The folder form holds them under valuesMigrations:
	// in stencil.yaml.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ValuesMigrations []ValuesMigration `json:"valuesMigrations,omitempty"`

	// outputs declares status fields computed from the members' live
	// objects, each a CEL expression over parent and members (by id: a
	// member's stencil.dev/id annotation, else Kind/name). A Composition
	// shows them under status.outputs, an instance of the published kind
	// at the top of its status (its CRD's status schema declares them).
	// The folder form holds them under outputs: in stencil.yaml.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Outputs []BundleOutput `json:"outputs,omitempty"`

	// readiness replaces kstatus's readiness for the members each rule
	// selects with the rule's own CEL expression, as kro's readyWhen: the
	// parent's Ready condition and summary use it. The folder form holds
	// them under readiness: in stencil.yaml.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Readiness []ReadinessRule `json:"readiness,omitempty"`

	// rollout says how a new revision of the Bundle (a new content of its
	// files, schema, options or pulled chart) reaches the parents that
	// follow it: all at once (the default) or in waves gated on their
	// health. It is no part of a revision. The folder form holds it under
	// rollout: in stencil.yaml.
	// +optional
	Rollout *RolloutPolicy `json:"rollout,omitempty"`

	// revisions says how many revisions (BundleRevisions) are kept and
	// which parents may pin. It is no part of a revision.
	// +optional
	Revisions *RevisionPolicy `json:"revisions,omitempty"`

	// pruning bounds what one pass of a parent may delete: a budget of
	// the set's members and kinds it may not prune (PersistentVolumeClaim,
	// PersistentVolume, Namespace, CustomResourceDefinition) unless
	// allowed. It is no part of a revision.
	// +optional
	Pruning *PrunePolicy `json:"pruning,omitempty"`
}

// The condition a Bundle with a source holds, and its reasons besides the
// pull failures' (package source: PullFailed, Unauthorized, NotFound,
// DigestMismatch, TooLarge, InvalidChart, URLRefused, SecretRefused,
// InvalidSource, and with spec.source.verify Unsigned, SignatureInvalid,
// InvalidKey).
const (
	// ConditionSourceReady is True when the last resolve of spec.source
	// pulled the chart, False with the reason it failed; parents render
	// the chart status.source records either way.
	ConditionSourceReady = "SourceReady"
	// ReasonPulled: the chart of status.source was pulled and verified.
	ReasonPulled = "Pulled"
	// ReasonSourceNotReady, on a parent: its Bundle's chart has not been
	// pulled yet, or is being verified again; the parent waits, and
	// nothing is applied or pruned.
	ReasonSourceNotReady = "SourceNotReady"
	// ReasonSourceUnverified, on a parent (Stalled): its Bundle's recorded
	// chart failed spec.source.verify's check (once the keys or the
	// source changed); nothing is rendered from it, applied or pruned
	// until a chart verifies again.
	ReasonSourceUnverified = "SourceUnverified"
)

// The label of the Secrets a Bundle's spec.source may name.
const (
	// LabelSecretType, with the value SecretTypeBundleSource, marks a
	// Secret of the controller's namespace that Bundles' spec.source may
	// name (secretRef, caSecretRef, verify.secretRef). The cluster admin
	// sets it; a Secret without it is refused (reason SecretRefused), so
	// no Bundle makes the controller use another Secret of its namespace
	// (its webhook certificate's, say) as a registry's credentials.
	LabelSecretType = "stencil.dev/secret-type"
	// SecretTypeBundleSource is LabelSecretType's value on the Secrets of
	// Bundle sources.
	SecretTypeBundleSource = "bundle-source"
)

// BundleSource is where the controller pulls a Bundle's chart from: one
// of oci and chartRepository. The pull is made as the controller, to the
// URL written here only (see docs/security.md).
// +kubebuilder:validation:XValidation:rule="has(self.oci) != has(self.chartRepository)",message="exactly one of oci and chartRepository must be set"
type BundleSource struct {
	// oci is a Helm chart stored as an OCI artifact:
	// oci://HOST/PATH/CHART:TAG, or oci://HOST/PATH/CHART@sha256:HEX to pin
	// it by its manifest's digest.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^oci://[^/\s]+/[^\s]+$`
	OCI string `json:"oci,omitempty"`

	// chartRepository is a chart in a Helm chart repository (an index.yaml
	// served over HTTPS).
	// +optional
	ChartRepository *ChartRepositorySource `json:"chartRepository,omitempty"`

	// secretRef names a Secret in the controller's own namespace, labelled
	// stencil.dev/secret-type=bundle-source, holding the credentials of the
	// registry or repository: the keys username, password and hosts (the
	// hosts they may be sent to), or a kubernetes.io/dockerconfigjson
	// Secret (its entries name their hosts). They are sent to no other
	// host.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`

	// caSecretRef names a Secret in the controller's own namespace,
	// labelled stencil.dev/secret-type=bundle-source, whose key ca.crt
	// holds the PEM certificates the registry's or repository's
	// serving certificate is verified with, in place of the system's.
	// +optional
	CASecretRef *corev1.LocalObjectReference `json:"caSecretRef,omitempty"`

	// interval is how often a tag or a version range is resolved again;
	// 10m when unset. A source pinned by digest is pulled once.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// verify, when set, requires the chart to be signed with a key the
	// Secret it names holds.
	// +optional
	Verify *SourceVerification `json:"verify,omitempty"`
}

// ChartRepositorySource is a chart in a Helm chart repository.
type ChartRepositorySource struct {
	// url is the repository's URL, the folder of its index.yaml; https
	// only.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="a chart repository is reached over https"
	URL string `json:"url"`

	// chart is the chart's name in the repository's index.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Chart string `json:"chart"`

	// version is an exact version or a semver range (such as ~1.2 or
	// >=1.0 <2.0) as Helm and Flux accept; the newest stable version when
	// empty.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`
}

// SourceVerification is the signature a pulled chart must carry.
type SourceVerification struct {
	// provider is the kind of signature: cosign (an OCI chart's cosign
	// signature) or helm (a chart repository's provenance file,
	// CHART.tgz.prov).
	// +required
	// +kubebuilder:validation:Enum=cosign;helm
	Provider string `json:"provider"`

	// secretRef names a Secret in the controller's own namespace,
	// labelled stencil.dev/secret-type=bundle-source, holding the keys:
	// cosign.pub (PEM public keys) for cosign, keyring (an
	// OpenPGP keyring) for helm.
	// +required
	SecretRef corev1.LocalObjectReference `json:"secretRef"`
}

// BundleOutput is one status field computed from a parent's members.
type BundleOutput struct {
	// name is the status field's name.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// type is the field's JSON Schema type.
	// +required
	// +kubebuilder:validation:Enum=string;integer;number;boolean;object;array
	Type string `json:"type"`
	// description documents the field (kubectl explain, for a published kind).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
	// value is a CEL expression over parent (the parent object) and
	// members (a map from each member's id to its live object), such as
	// members.web.status.availableReplicas. When it cannot be computed
	// (a member missing), the field is left unset and the parent's
	// OutputsComputed condition says why.
	// +required
	// +kubebuilder:validation:MaxLength=8192
	Value string `json:"value"`
}

// ReadinessRule decides the readiness of the members it selects.
type ReadinessRule struct {
	// member selects members: an id (the stencil.dev/id annotation, or
	// Kind/name), a Kind (StatefulSet) or a group/Kind (apps/StatefulSet).
	// The first rule that selects a member decides it.
	// +required
	// +kubebuilder:validation:MaxLength=316
	Member string `json:"member"`
	// readyWhen is a CEL expression over self (the member's live object)
	// and parent, of type bool: the member is ready when it is true, such
	// as self.status.readyReplicas >= self.spec.replicas / 2 + 1.
	// +required
	// +kubebuilder:validation:MaxLength=8192
	ReadyWhen string `json:"readyWhen"`
}

// BundleAPI is the kind a Bundle publishes. Version and plural are
// defaulted by the controller (and `stencil bundle lint`), not stored, so a
// packed Bundle stays as written.
// +kubebuilder:validation:XValidation:rule="!(has(self.version) && has(self.versions))",message="version is the single-version form: list the versions under versions instead"
type BundleAPI struct {
	// group is the API group of the kind: a DNS subdomain with at least one
	// dot, neither stencil.dev nor a subdomain of it. A group of
	// Kubernetes' own (k8s.io, kubernetes.io and their subdomains) is
	// served only where a cluster admin made the kind's CRD, with the
	// api-approved.kubernetes.io annotation the API server requires there,
	// and labelled it stencil.dev/bundle: <this Bundle>; stencil never
	// makes a CRD in such a group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	// +kubebuilder:validation:XValidation:rule="self != 'stencil.dev' && !self.endsWith('.stencil.dev')",message="stencil.dev and its subdomains are stencil's own"
	Group string `json:"group"`

	// kind is the kind's name in CamelCase, such as AppService.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// version is the kind's only API version, such as v1 or v1beta2;
	// v1alpha1 when empty. Unset when versions is.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`
	Version string `json:"version,omitempty"`

	// versions lists the kind's API versions, each with its own schema,
	// printer columns and conversion to the storage version (exactly one
	// has storage: true), in place of version. Instances may be written
	// in any served version; the templates always see the spec in
	// renderVersion.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.filter(v, has(v.storage) && v.storage).size() == 1",message="exactly one version has storage: true"
	Versions []APIVersion `json:"versions,omitempty"`

	// renderVersion names the version of versions whose spec the
	// templates are written against (and the controller reads instances
	// in); the storage version when unset. It must be served.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RenderVersion string `json:"renderVersion,omitempty"`

	// plural is the kind's resource name, lower case; when empty, the
	// English plural of the lower-cased kind (appservices, policies,
	// boxes).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Plural string `json:"plural,omitempty"`

	// shortNames are short resource names kubectl accepts, such as [as].
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	ShortNames []string `json:"shortNames,omitempty"`

	// categories are groups of resources the kind belongs to, such as [all]
	// (kubectl get all).
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Categories []string `json:"categories,omitempty"`

	// printerColumns are extra columns of kubectl get, shown before Ready,
	// Status and Age; their JSON paths usually point into .spec.
	// +optional
	// +listType=atomic
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`

	// deletionPolicy says what happens to the CRD when the Bundle is deleted
	// or stops publishing the kind: Orphan (the default) keeps it, with every
	// instance and their children; Delete deletes it, and so every instance
	// and, as each instance is deleted, its children.
	// +optional
	// +kubebuilder:default=Orphan
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// defaults are the knobs a Composition sets in its spec, for every
	// instance of the kind; an instance overrides them with the annotations
	// stencil.dev/suspend, stencil.dev/prune, stencil.dev/deletion-policy and
	// stencil.dev/service-account-name.
	// +optional
	Defaults InstanceDefaults `json:"defaults,omitempty"`
}

// InstanceDefaults are the knobs a Composition has in its spec, for the
// instances of a published kind.
type InstanceDefaults struct {
	// serviceAccountName, when set, makes every apply and prune of an
	// instance impersonate that ServiceAccount of the instance's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// suspend stops every write for the instances while true; status is
	// still reported.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// prune deletes members an instance no longer renders; true when unset.
	// +optional
	Prune *bool `json:"prune,omitempty"`

	// deletionPolicy says what happens to an instance's children when the
	// instance is deleted: Delete (the default) removes them, Orphan leaves
	// them in place.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
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

	// adopt lists the kinds whose existing objects a Composition of this
	// bundle may adopt: an object the render names that exists and belongs
	// to no ApplySet is then labelled a member and applied over (forced
	// ownership), and later pruned like any member. Without it, such an
	// object is adopted only when it carries the annotation
	// stencil.dev/adopt naming the parent; otherwise the parent is Stalled
	// (reason AdoptionRefused) and the object left as it is. A member of
	// another ApplySet is never adopted. A kind of "*" allows every kind
	// of the group.
	// +optional
	// +listType=atomic
	Adopt []GroupKind `json:"adopt,omitempty"`
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
	// A Bundle with a source holds SourceReady too: True when the last
	// resolve pulled the chart, False with the reason it failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// source is the chart last pulled for spec.source: parents render it
	// until a resolve pulls another.
	// +optional
	Source *SourceStatus `json:"source,omitempty"`

	// rollouts is the rollout of the Bundle's revisions to its parents,
	// one per shard of controllers (one entry, shard "", without shards).
	// +optional
	// +listType=map
	// +listMapKey=shard
	Rollouts []RolloutStatus `json:"rollouts,omitempty"`

	// storage is the storage migration of the published kind's
	// instances (see StorageStatus), and the versions they were last
	// written in.
	// +optional
	Storage *StorageStatus `json:"storage,omitempty"`
}

// SourceStatus is the chart a Bundle's source resolved to.
type SourceStatus struct {
	// url is where the chart was pulled from: the OCI reference or the
	// chart archive's URL.
	// +optional
	URL string `json:"url,omitempty"`
	// version is the chart's version (its tag, or the chart repository
	// index's version).
	// +optional
	Version string `json:"version,omitempty"`
	// digest is the sha256 digest of the chart archive pulled
	// (sha256:HEX); parents render the chart of this digest.
	// +optional
	Digest string `json:"digest,omitempty"`
	// size is the chart archive's size in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// resolvedAt is when the source was last resolved to this digest.
	// +optional
	ResolvedAt metav1.Time `json:"resolvedAt,omitempty"`
	// sourceGeneration is the Bundle's generation this digest was resolved
	// for: a change of the Bundle resolves the source again.
	// +optional
	SourceGeneration int64 `json:"sourceGeneration,omitempty"`
	// verified is the spec.source.verify provider (cosign or helm) whose
	// check this chart passed, empty when none was asked or when the
	// chart failed its check since (SourceReady then says why). Parents
	// of a Bundle whose spec.source.verify names a provider render the
	// recorded chart only when it passed that provider's check with the
	// keys of keysFingerprint for this generation, so adding verify to a
	// Bundle, changing its source or rotating its keys never keeps an
	// unchecked chart in use.
	// +optional
	Verified string `json:"verified,omitempty"`
	// keysFingerprint is the sha256 (sha256:HEX) of the key material of
	// spec.source.verify's Secret that the chart's signature verified
	// with. When the Secret's keys change, the chart is verified again
	// before parents render it again; empty while that check is pending.
	// +optional
	KeysFingerprint string `json:"keysFingerprint,omitempty"`
	// verifiedGeneration is the Bundle's generation whose
	// spec.source.verify the chart last passed: a change of the Bundle
	// has it verified again before parents render it again.
	// +optional
	VerifiedGeneration int64 `json:"verifiedGeneration,omitempty"`
}

// Bundle is a cluster-scoped folder of Go templates that Compositions render.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=bdl,categories=stencil
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.source.version`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollouts[*].phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.rollouts[*].summary`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.status.storage.phase`,priority=1
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
