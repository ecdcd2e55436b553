package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeletionPolicy says what happens to a Composition's members when it is deleted.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes every member, in reverse apply order.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan leaves every member in place, without its ApplySet label.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// CompositionSpec selects a Bundle and gives it values.
type CompositionSpec struct {
	// bundle is the name of the cluster-scoped Bundle to render.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Bundle string `json:"bundle"`

	// values are merged over the bundle's values.yaml (maps merge, lists and
	// scalars replace, null deletes a key), then defaulted and validated with
	// the bundle's schema, and given to the templates as .Values.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// serviceAccountName is the ServiceAccount of the Composition's
	// namespace that every apply, prune, hook and delete of its members
	// impersonates, so its RBAC bounds what the Composition can change.
	// Unset, the controller's default one (--default-service-account,
	// "stencil") is used; the controller's own identity only when its
	// admin chose --write-as-controller. Whoever creates or changes the
	// Composition must be allowed to use the account (impersonate it, or
	// create pods in the namespace): the admission webhook checks.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// suspend stops every write (apply, prune, delete) for this Composition
	// while true; status is still reported.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// prune deletes members that are no longer rendered. When false, they are
	// left in place (and stay in the ApplySet).
	// +optional
	// +kubebuilder:default=true
	Prune *bool `json:"prune,omitempty"`

	// deletionPolicy says what happens to the members when the Composition is
	// deleted: Delete (the default) removes them, Orphan leaves them in place.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// bundleRevision pins the Composition to a revision of its Bundle (the
	// name of a BundleRevision, as kubectl get bundlerevisions lists
	// them): it renders that revision whatever the Bundle's rollout does.
	// Unset, it follows the Bundle. A pin the Bundle does not allow (its
	// spec.revisions withdraws the revision or disallows pinning) is
	// refused at admission and ignored by the controller, which then
	// renders what the Bundle assigns.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	BundleRevision string `json:"bundleRevision,omitempty"`
}

// MemberStatus is one rendered object and its readiness.
type MemberStatus struct {
	// group is the object's API group, "" for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// version is the object's API version within its group.
	// +optional
	Version string `json:"version,omitempty"`
	// kind is the object's kind.
	Kind string `json:"kind"`
	// namespace is the object's namespace, "" for a cluster-scoped object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name is the object's name.
	Name string `json:"name"`
	// status is the object's kstatus: Current, InProgress, Failed,
	// Terminating, NotFound or Unknown.
	Status string `json:"status"`
	// message explains the status when the object is not Current.
	// +optional
	Message string `json:"message,omitempty"`
}

// LookupStatus is one lookup a render made: the object (or, with no
// name, the list) it asked for and what it found.
type LookupStatus struct {
	// apiVersion of what was looked up.
	APIVersion string `json:"apiVersion"`

	// kind of what was looked up.
	Kind string `json:"kind"`

	// namespace looked in ("" cluster-scoped, or every namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// name looked up ("" a list).
	// +optional
	Name string `json:"name,omitempty"`

	// answer is Found, NotFound, Listed or Denied.
	// +kubebuilder:validation:Enum=Found;NotFound;Listed;Denied
	Answer string `json:"answer"`

	// message says why a lookup was Denied.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// The answers of LookupStatus.
const (
	// LookupFound: the object looked up exists and was given.
	LookupFound = "Found"
	// LookupNotFound: no such object; the render got an empty answer.
	LookupNotFound = "NotFound"
	// LookupListed: a list was given (it may be empty).
	LookupListed = "Listed"
	// LookupDenied: the parent's identity may not read it; the render got
	// an empty answer.
	LookupDenied = "Denied"
)

// CompositionStatus is what the controller observed of a Composition, rebuilt
// on every reconcile. It follows kstatus conventions: Ready is always present;
// Reconciling and Stalled appear only when True.
type CompositionStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions holds Ready, and Reconciling or Stalled while true.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// bundleRevision is the revision of the Bundle last rendered (its
	// content hash; the BundleRevision of it is named
	// <bundle>-<its first 10 hex digits>).
	// +optional
	BundleRevision string `json:"bundleRevision,omitempty"`

	// valuesMigrations names the Bundle's values migrations
	// (spec.valuesMigrations) the last render applied to the parent's
	// values, in order: the revision's schemas refused the values as
	// they are and accepted them migrated. Absent when the values were
	// rendered as they are. The parent's own spec.values are never
	// rewritten: the migrated values exist only in the render.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	ValuesMigrations []string `json:"valuesMigrations,omitempty"`

	// notes is what the Bundle's templates/NOTES.txt printed in the last
	// render, as Helm's install keeps a release's notes (the root chart's,
	// spaces around trimmed): at most 4096 bytes, longer notes cut at a
	// line with a marker saying how long they were. A render that looked
	// up objects, read observed values or called a generator records a
	// line saying so instead of the text, which may hold what it read:
	// that never reaches a status. Absent when the Bundle has no
	// NOTES.txt or it printed nothing. `stencil render --notes` prints
	// the notes whole.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Notes string `json:"notes,omitempty"`

	// lookups lists what the last render looked up (Helm's lookup
	// function), sorted, with what it found: Found, NotFound, Listed (a
	// list, found or empty) or Denied (the parent's ServiceAccount may not
	// read it, so the render was given an empty answer; message says
	// why). Only the keys are recorded, never what was read. At most 50
	// entries; lookupsOmitted counts the rest. Absent when the render
	// looked nothing up. `stencil trace` prints them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Lookups []LookupStatus `json:"lookups,omitempty"`

	// lookupsOmitted counts the lookups of the last render beyond the 50
	// that lookups lists.
	// +optional
	LookupsOmitted int32 `json:"lookupsOmitted,omitempty"`

	// summary counts ready members, such as "4/5 ready".
	// +optional
	Summary string `json:"summary,omitempty"`

	// members lists every object of the last render with its readiness.
	// +optional
	// +listType=atomic
	Members []MemberStatus `json:"members,omitempty"`

	// hooks records the Helm hooks (objects annotated helm.sh/hook) run for
	// the current revision of the inputs, so each runs once per revision
	// even when its delete policy removed it. It is carried from pass to
	// pass and replaced when the revision changes.
	// +optional
	Hooks *HooksStatus `json:"hooks,omitempty"`

	// inventory is the controller's own record of where the set's members
	// may be, of which it writes the parent's ApplySet annotations
	// (applyset.kubernetes.io/contains-group-kinds and
	// additional-namespaces) as a copy for kubectl. Prune, deletion and
	// .Release.IsUpgrade act on it alone: an entry added to the
	// annotations by hand is ignored, one removed by hand narrows nothing.
	// Its members are what the set owns: the objects stencil created or
	// applied as members.
	// +optional
	Inventory *InventoryStatus `json:"inventory,omitempty"`

	// admission is the controller's record that the use of the parent's
	// ServiceAccount was admitted by stencil's ValidatingAdmissionPolicy
	// (see docs/security.md): stencil reads, applies, prunes and deletes
	// as the account only while it holds. It is carried from pass to pass.
	// +optional
	Admission *AdmissionStatus `json:"admission,omitempty"`

	// outputs holds the status fields the Bundle declares (spec.outputs),
	// computed from the members' live objects. An instance of a published
	// kind has them at the top of its status instead.
	// +optional
	Outputs map[string]apiextensionsv1.JSON `json:"outputs,omitempty"`
}

// AdmissionStatus is the controller's record of the admission of a
// parent's ServiceAccount. The API server checks, with stencil's
// ValidatingAdmissionPolicy, every create of a parent and every update that
// changes its spec, labels or annotations: the requester must be allowed
// to use the ServiceAccount the parent will be written as. stencil acts as
// that account only when it can tell that the parent as it stands passed
// that check: it was created, or changed after this record was made, while
// the check (the policy, its binding and the default ServiceAccounts it
// reads, the epoch) was the one it is now.
type AdmissionStatus struct {
	// policy names the check as "<policy uid>/<binding uid>": the
	// ValidatingAdmissionPolicy and the binding of the parent's kind; ""
	// when there was none to tell.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Policy string `json:"policy"`

	// epoch is when the check last changed for this parent: the policy or
	// its binding was created, or the default ServiceAccount the parent
	// would use changed.
	// +optional
	Epoch *metav1.Time `json:"epoch,omitempty"`

	// admitted is true once the parent is known to have passed the check
	// of this epoch: it was created after the epoch, or changed after this
	// record was made, or an earlier stencil reconciled it.
	// +optional
	Admitted bool `json:"admitted,omitempty"`

	// generation is the parent's metadata.generation when this record was
	// made while it was not admitted; a change of it since proves that the
	// check of this epoch passed.
	// +optional
	Generation int64 `json:"generation,omitempty"`

	// metadata is a digest of the parent's labels and annotations (but
	// those stencil itself writes) when this record was made while it was
	// not admitted; a change of it since proves the check passed too.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Metadata string `json:"metadata,omitempty"`
}

// InventoryStatus is the controller's record of an ApplySet's inventory.
type InventoryStatus struct {
	// groupKinds lists the group-kinds members may have, as Kind.group
	// (Kind alone for the core group), sorted.
	// +optional
	// +listType=atomic
	GroupKinds []string `json:"groupKinds,omitempty"`
	// namespaces lists the namespaces, other than the parent's, where
	// members may be, sorted.
	// +optional
	// +listType=atomic
	Namespaces []string `json:"namespaces,omitempty"`
	// members is the controller's record of the objects that are the
	// set's members: the only proof of membership (an object's part-of
	// label and its field managers are anyone's to write, and serve only
	// to find members). Every apply over an existing object, prune,
	// deletion, orphaning, hook replacement and read of the set's
	// generated values is limited to the objects it names. Absent on a
	// parent a stencil before this record reconciled: its next pass
	// seeds it, once, from the labelled members stencil's field manager
	// manages.
	// +optional
	Members *MemberRecord `json:"members,omitempty"`
}

// MaxRecordedMembers is the most members a set's record holds: five
// times the most objects one render may make (templates.MaxObjects),
// room for a render that replaces all of them while the ones it
// replaces wait to be pruned.
const MaxRecordedMembers = 10000

// MemberRecord is the controller's record of which objects are an
// ApplySet's members, by UID (a UID names one object for its lifetime:
// an object made again under the same name is another object).
type MemberRecord struct {
	// uids lists the UIDs of the members stencil created or applied
	// (adopted, with consent), sorted. A UID is dropped once stencil no
	// longer finds its object among the set's labelled members in a
	// listing of the API server (deleted, or orphaned).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	UIDs []types.UID `json:"uids,omitempty"`
	// crds lists the UIDs of the chart's crds/ CustomResourceDefinitions
	// this set created (or adopted, with consent), sorted: the only ones
	// spec.crds CreateReplace updates. They are never members (no part-of
	// label, never deleted with the set).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2000
	CRDs []types.UID `json:"crds,omitempty"`
}

// HooksStatus records the Helm hooks run for one revision of a
// Composition's inputs.
type HooksStatus struct {
	// revision is the revision of the inputs the hooks ran for:
	// "<metadata.generation>/<bundle revision>".
	// +required
	// +kubebuilder:validation:MaxLength=256
	Revision string `json:"revision"`

	// event is which hooks run for this revision: install (pre-install and
	// post-install hooks: the Composition had never been applied) or
	// upgrade (pre-upgrade and post-upgrade hooks).
	// +required
	// +kubebuilder:validation:Enum=install;upgrade
	Event string `json:"event"`

	// completed lists the hooks of this revision that ran to an end.
	// +optional
	// +listType=atomic
	Completed []HookRecord `json:"completed,omitempty"`
}

// HookRecord is one Helm hook that ran to an end.
type HookRecord struct {
	// group is the hook object's API group, "" for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// kind is the hook object's kind.
	Kind string `json:"kind"`
	// namespace is the hook object's namespace, "" when cluster-scoped.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name is the hook object's name.
	Name string `json:"name"`
	// hook is the hook point it ran at, such as pre-install or post-upgrade.
	Hook string `json:"hook"`
	// result is Succeeded or Failed.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	Result string `json:"result"`
	// message says why a hook failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// Composition renders a Bundle with values and keeps the result applied: it is
// the ApplySet parent of every object it renders.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=comp,categories=stencil
// +kubebuilder:metadata:labels="applyset.kubernetes.io/is-parent-type=true"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Bundle",type=string,JSONPath=`.spec.bundle`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Composition struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec selects the Bundle and gives it values.
	// +required
	Spec CompositionSpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	Status CompositionStatus `json:"status,omitempty"`
}

// CompositionList is a list of Compositions.
// +kubebuilder:object:root=true
type CompositionList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Compositions.
	Items []Composition `json:"items"`
}
