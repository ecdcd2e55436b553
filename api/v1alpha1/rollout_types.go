package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RolloutStrategy is how a new revision of a Bundle reaches its parents.
// +kubebuilder:validation:Enum=AllAtOnce;Waves
type RolloutStrategy string

const (
	// RolloutAllAtOnce moves every parent that follows the Bundle to a new
	// revision at its next pass, as stencil always did: the default.
	RolloutAllAtOnce RolloutStrategy = "AllAtOnce"
	// RolloutWaves moves them in waves: the canary, then batches, each
	// gated on its parents' health.
	RolloutWaves RolloutStrategy = "Waves"
)

// BatchGrowth is how the waves after the canary grow.
// +kubebuilder:validation:Enum=Linear;Exponential
type BatchGrowth string

const (
	// GrowthLinear: every wave moves batch.size more parents.
	GrowthLinear BatchGrowth = "Linear"
	// GrowthExponential: wave n moves batch.size × factor^n parents.
	GrowthExponential BatchGrowth = "Exponential"
)

// RolloutFailurePolicy is what a rollout does when a wave fails.
// +kubebuilder:validation:Enum=Halt;Rollback
type RolloutFailurePolicy string

const (
	// FailureHalt stops the rollout: the parents it moved stay on the new
	// revision, the others on the stable one.
	FailureHalt RolloutFailurePolicy = "Halt"
	// FailureRollback stops the rollout and sends the parents it moved
	// back to the stable revision.
	FailureRollback RolloutFailurePolicy = "Rollback"
)

// RolloutPolicy is how a new revision of a Bundle reaches the parents that
// follow it (a parent that pins a revision is never moved).
type RolloutPolicy struct {
	// strategy is AllAtOnce (the default: every following parent moves at
	// its next pass) or Waves.
	// +optional
	// +kubebuilder:default=AllAtOnce
	Strategy RolloutStrategy `json:"strategy,omitempty"`

	// canary selects the parents of the first wave, when set: those in a
	// namespace namespaceSelector selects (by the Namespaces' labels,
	// which tenants do not write) and, only where trustParentLabels
	// allows it, whose own labels selector selects. Without it the first
	// wave is the first batch. A failure in the canary wave stops the
	// rollout whatever failureThreshold says: the canaries are whom the
	// Bundle's author and the cluster admin chose.
	// +optional
	Canary *RolloutCanary `json:"canary,omitempty"`

	// batch sizes the waves after the canary. The parents are ordered by
	// a keyed hash (HMAC-SHA256, under a key only the controller holds:
	// the Secret stencil-rollout-order of its namespace) of the Bundle's
	// name and their kind, namespace and name: the same order in every
	// rollout of the Bundle, and none a tenant can choose by naming a
	// parent. The last wave takes every parent left.
	// +optional
	Batch RolloutBatch `json:"batch,omitempty"`

	// failureThreshold is how many tenants' parents must fail in the
	// batches of one rollout before it stops (onFailure); fewer are
	// tolerated: their parents are named in the status, counted once per
	// tenant, and neither hold the waves back nor enter the gates from
	// then on. A parent fails when it stalls after its wave started, or
	// is not Ready on the new revision within progressDeadline. 2 when
	// unset, so no single tenant stops a rollout of a Bundle others use;
	// at most the number of tenants the Bundle's parents belong to, so a
	// Bundle one tenant alone uses still stops on its failure.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`

	// tenantLabel is a label of Namespaces whose value names a parent's
	// tenant, for failureThreshold: parents in namespaces with the same
	// value are one tenant. Unset (or a namespace without the label),
	// each namespace is a tenant of its own.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	TenantLabel string `json:"tenantLabel,omitempty"`

	// soak is how long a wave's parents must have been Ready on the new
	// revision, with every gate true, before the next wave starts; 0 when
	// unset.
	// +optional
	Soak *metav1.Duration `json:"soak,omitempty"`

	// progressDeadline is how long a wave may take, from its start, until
	// its parents are Ready on the new revision and its gates hold; past
	// it a parent not Ready has failed (see failureThreshold), and gates
	// still false fail the wave. 10m when unset.
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// gates are CEL expressions over the wave (see docs/bundles.md), each
	// of which must be true before a wave is done, such as
	// wave.parents.all(p, p.outputs.availableReplicas >= 1).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Gates []RolloutGate `json:"gates,omitempty"`

	// onFailure is what a failed wave does: Rollback (the default) sends
	// the parents the rollout moved back to the stable revision; Halt
	// leaves them where they are. Either way no other parent moves until
	// the Bundle changes or the rollout is retried or promoted.
	// +optional
	// +kubebuilder:default=Rollback
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`

	// paused stops a rollout where it is: no wave starts, none fails.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// RolloutCanary selects the parents of a rollout's first wave: by what
// the Bundle's author and the cluster admin control, never by what a
// tenant writes unless the author says so.
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || (has(self.trustParentLabels) && self.trustParentLabels)",message="selector selects parents by their own labels, which their tenants write: set trustParentLabels to use it, or select namespaces (namespaceSelector; kubernetes.io/metadata.name names them)"
type RolloutCanary struct {
	// namespaceSelector selects the namespaces of the canary parents by
	// the Namespaces' labels (an explicit list: kubernetes.io/metadata.name
	// In [a, b], the label the API server sets).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// selector selects the canary parents by their own labels, which
	// their tenants write: a tenant could label its parent into the
	// canary and fail it. It is honoured only with trustParentLabels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// trustParentLabels lets selector choose canaries by the parents'
	// labels: the author trusts every tenant of the namespaces
	// namespaceSelector selects (all, without it) with the canary's
	// power to stop the rollout.
	// +optional
	TrustParentLabels bool `json:"trustParentLabels,omitempty"`
}

// RolloutBatch sizes the waves after the canary.
type RolloutBatch struct {
	// size is the first batch: a count (1) or a percent of the parents
	// ("10%", at least one parent); 1 when unset.
	// +optional
	// +kubebuilder:validation:XIntOrString
	Size *intstr.IntOrString `json:"size,omitempty"`
	// growth is Exponential (the default: size, size×factor,
	// size×factor², ...) or Linear (size every wave).
	// +optional
	// +kubebuilder:default=Exponential
	Growth BatchGrowth `json:"growth,omitempty"`
	// factor multiplies an Exponential batch from wave to wave; 2 when
	// unset.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	Factor int32 `json:"factor,omitempty"`
}

// RolloutGate is a condition a wave must meet before it is done.
type RolloutGate struct {
	// name names the gate in status and events.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9-]*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// expression is a CEL expression of type bool over wave: its parents
	// (wave.parents, each with kind, namespace, name, ready, revision,
	// conditions by type and outputs), wave.total and wave.ready, and
	// wave.number.
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
}

// RevisionPolicy says how many revisions a Bundle keeps and which of them
// parents may pin.
type RevisionPolicy struct {
	// historyLimit is how many revisions are kept besides those a parent
	// is on, pinned to, or a rollout needs; 10 when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	HistoryLimit *int32 `json:"historyLimit,omitempty"`
	// pinning is Allowed (the default: a parent may pin any revision kept
	// and not withdrawn) or Disallowed (every parent follows the Bundle;
	// a pin is refused at admission and ignored by the controller).
	// +optional
	// +kubebuilder:validation:Enum=Allowed;Disallowed
	// +kubebuilder:default=Allowed
	Pinning string `json:"pinning,omitempty"`
	// holding is what becomes of a parent whose values the revision the
	// Bundle assigns it (its current content, or a rollout's target)
	// refuses: Disallowed (the default) stalls it (reason ValuesRefused,
	// naming the field paths and the revision) and renders, applies and
	// prunes nothing of it until its values or the Bundle change; Allowed
	// keeps it on the revision it is on, as long as that one takes its
	// values and is not withdrawn (RevisionHeld, reason ValuesRefused).
	// A held parent, as a pinned one, renders within the Bundle's current
	// permissions and crds policy, never with one the author removed.
	// +optional
	// +kubebuilder:validation:Enum=Allowed;Disallowed
	// +kubebuilder:default=Disallowed
	Holding string `json:"holding,omitempty"`
	// withdrawn names revisions (BundleRevision names) no parent may stay
	// on: a pin of one is refused at admission, a parent pinned to one
	// follows the Bundle instead, and a parent on one moves to the stable
	// revision at its next pass, whatever the rollout's waves.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	Withdrawn []string `json:"withdrawn,omitempty"`
}

// Pinning values of RevisionPolicy.
const (
	PinningAllowed    = "Allowed"
	PinningDisallowed = "Disallowed"
)

// Holding values of RevisionPolicy.
const (
	HoldingAllowed    = "Allowed"
	HoldingDisallowed = "Disallowed"
)

// PrunePolicy bounds what one pass of a parent may delete.
type PrunePolicy struct {
	// budget is the most members one pass may prune, as a count or a
	// percent of the set's members (those rendered and those it would
	// prune); a pass that would prune more prunes nothing and stalls
	// (PruneBlocked) until the parent or the Bundle is annotated
	// stencil.dev/allow-prune: "true". 25% when unset; a pass may always
	// prune one member.
	// +optional
	// +kubebuilder:validation:XIntOrString
	Budget *intstr.IntOrString `json:"budget,omitempty"`
	// allowDelete lists protected kinds (PersistentVolumeClaim,
	// PersistentVolume, Namespace, CustomResourceDefinition) the parents'
	// passes may prune anyway. Without it, a pass that would prune one
	// prunes nothing and stalls (PruneBlocked).
	// +optional
	// +listType=atomic
	AllowDelete []GroupKind `json:"allowDelete,omitempty"`
}

// RolloutPhase is where a rollout is.
type RolloutPhase string

const (
	// RolloutComplete: every parent that follows the Bundle is on the
	// stable revision (but those its values refuse, see held).
	RolloutComplete RolloutPhase = "Complete"
	// RolloutProgressing: a wave is moving or soaking.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutPaused: spec.rollout.paused holds the rollout where it is.
	RolloutPaused RolloutPhase = "Paused"
	// RolloutHalted: a wave failed; the parents moved stay on the target.
	RolloutHalted RolloutPhase = "Halted"
	// RolloutRolledBack: a wave failed; every parent went back to stable.
	RolloutRolledBack RolloutPhase = "RolledBack"
)

// RolloutStatus is the rollout of one shard's parents of a Bundle.
type RolloutStatus struct {
	// shard is the shard whose parents these are ("" for the unsharded
	// controller): each shard rolls its own parents.
	// +required
	Shard string `json:"shard"`
	// stable is the revision (a BundleRevision name) every following
	// parent was last on together; parents not yet moved render it.
	// +optional
	Stable string `json:"stable,omitempty"`
	// target is the revision being rolled out, "" when none.
	// +optional
	Target string `json:"target,omitempty"`
	// phase is Complete, Progressing, Paused, Halted or RolledBack.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// wave is the wave under way, from 1; waves is how many the rollout has.
	// +optional
	Wave int32 `json:"wave,omitempty"`
	// +optional
	Waves int32 `json:"waves,omitempty"`
	// canary is true once the canary parents are moved.
	// +optional
	Canary bool `json:"canary,omitempty"`
	// bound is the rank (hex) up to which the waves' batches have moved
	// parents, "" for none, "max" for all: a parent whose rank is at most
	// bound is on the target.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Bound string `json:"bound,omitempty"`
	// previousBound is bound before the current wave: the wave's parents
	// are those ranked above it and at most bound.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PreviousBound string `json:"previousBound,omitempty"`
	// waveStarted is when the current wave started moving parents.
	// +optional
	WaveStarted *metav1.Time `json:"waveStarted,omitempty"`
	// waveReady is when the current wave's parents were all found Ready
	// on the target with every gate true: its soak started then.
	// +optional
	WaveReady *metav1.Time `json:"waveReady,omitempty"`
	// parents counts the parents that follow the Bundle (not pinned).
	// +optional
	Parents int32 `json:"parents"`
	// updated counts those on the target (on stable when there is none).
	// +optional
	Updated int32 `json:"updated"`
	// ready counts the updated parents that are Ready.
	// +optional
	Ready int32 `json:"ready"`
	// held counts the parents whose values the target's schema refuses,
	// named in heldParents: they stall, or stay on their revision where
	// the Bundle's spec.revisions.holding allows it.
	// +optional
	Held int32 `json:"held,omitempty"`
	// summary sums the rollout up for kubectl get: "wave 2/5: 11/1000
	// updated, 11 ready".
	// +optional
	Summary string `json:"summary,omitempty"`
	// message says what the rollout waits for, or why it stopped.
	// +optional
	Message string `json:"message,omitempty"`
	// failed names parents that failed (at most 10): those that stopped
	// the rollout, or, while it goes on, those of the tenants whose
	// failures it tolerates (see failedTenants).
	// +optional
	// +listType=atomic
	Failed []RolloutParent `json:"failed,omitempty"`
	// failedTenants are the tenants (namespaces, or the values of
	// spec.rollout.tenantLabel) with a parent that failed in this
	// rollout's batches, fewer than spec.rollout.failureThreshold: their
	// parents no longer hold waves back.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	FailedTenants []string `json:"failedTenants,omitempty"`
	// heldParents names parents whose values the target refuses (at
	// most 20).
	// +optional
	// +listType=atomic
	HeldParents []RolloutParent `json:"heldParents,omitempty"`
	// promoted and retried are the last values of the annotations
	// stencil.dev/rollout-promote and stencil.dev/rollout-retry acted on.
	// +optional
	Promoted string `json:"promoted,omitempty"`
	// +optional
	Retried string `json:"retried,omitempty"`
}

// RolloutParent names a parent in a rollout's status.
type RolloutParent struct {
	// kind is the parent's kind.
	Kind string `json:"kind"`
	// namespace is the parent's namespace.
	Namespace string `json:"namespace"`
	// name is the parent's name.
	Name string `json:"name"`
	// reason says in a word what happened to it.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says it in a sentence (never a value).
	// +optional
	Message string `json:"message,omitempty"`
}

// Annotations that act on a Bundle's rollout, after Flux's
// reconcile.fluxcd.io/requestedAt: each new value acts once, and the
// status records the value acted on.
const (
	// AnnotationRolloutPromote: the current wave is done now, its gates
	// and soak skipped; a halted rollout goes on with the next wave.
	AnnotationRolloutPromote = "stencil.dev/rollout-promote"
	// AnnotationRolloutRetry: a halted or rolled-back rollout tries the
	// wave it failed again.
	AnnotationRolloutRetry = "stencil.dev/rollout-retry"
	// AnnotationAllowPrune set to "true" on a parent or its Bundle lets
	// its passes prune past the budget and protected kinds.
	AnnotationAllowPrune = "stencil.dev/allow-prune"
)

// Finalizer keeps a parent (a Composition, or an instance of a published
// kind) until its members are deleted or orphaned.
const Finalizer = "stencil.dev/finalizer"

// AnnotationAllowEmptyRender set to "true" on a parent or on its Bundle
// lets a render of no objects prune every member of the set.
const AnnotationAllowEmptyRender = "stencil.dev/allow-empty-render"
