package v1alpha1

// Condition types of a Composition, an instance of a published kind and a
// Bundle, after kstatus: Ready is always present; Reconciling and Stalled
// appear only while True, never both.
const (
	// ConditionReady is True when every member is Current (a Bundle: when
	// it parses, lints and its published kind is served).
	ConditionReady = "Ready"
	// ConditionReconciling is True while a member is still in progress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the parent cannot progress without a
	// change: a failed render, a refused or failed write, a failed member.
	ConditionStalled = "Stalled"
	// ConditionOutputsReady, on a parent whose Bundle declares outputs
	// (spec.outputs), is True when every output has a value, and False
	// naming each one that has none and why (a member missing, a field
	// absent). It does not change Ready.
	ConditionOutputsReady = "OutputsReady"
)

// Reasons of the OutputsReady condition.
const (
	// ReasonOutputsComputed: every output has a value.
	ReasonOutputsComputed = "OutputsComputed"
	// ReasonOutputFailed: an output could not be computed; the message
	// names it and says why.
	ReasonOutputFailed = "OutputFailed"
	// ReasonUpdated is the reason of the event a parent records when an
	// output's value changes ("phase: creating → ready").
	ReasonUpdated = "Updated"
)

// Reasons of the conditions of a parent (a Composition or an instance of
// a published kind).
const (
	// ReasonReady: every member is Current.
	ReasonReady = "Ready"
	// ReasonProgressing: a member is in progress (Reconciling=True).
	ReasonProgressing = "Progressing"
	// ReasonMemberFailed: a member's kstatus is Failed; the message names it.
	ReasonMemberFailed = "MemberFailed"
	// ReasonRenderFailed: the Bundle does not render with these values;
	// the message names the template file and line or the values' field.
	ReasonRenderFailed = "RenderFailed"
	// ReasonRenderTimeout: the render ran past its deadline.
	ReasonRenderTimeout = "RenderTimeout"
	// ReasonRenderTooLarge: the render ran past one of its size bounds
	// (memory, output bytes, objects, loop iterations, template calls).
	ReasonRenderTooLarge = "RenderTooLarge"
	// ReasonRefused: the render has an object the Bundle's permissions do
	// not allow (another namespace, a cluster-scoped kind), or two objects
	// that are one once placed.
	ReasonRefused = "Refused"
	// ReasonBundleNotFound: spec.bundle names no Bundle.
	ReasonBundleNotFound = "BundleNotFound"
	// ReasonApplyFailed: a member could not be applied (transient: retried).
	ReasonApplyFailed = "ApplyFailed"
	// ReasonPruneFailed: a former member could not be deleted (retried).
	ReasonPruneFailed = "PruneFailed"
	// ReasonReconcileFailed: a pass failed for another transient reason.
	ReasonReconcileFailed = "ReconcileFailed"
	// ReasonSuspended: spec.suspend is true; nothing is rendered or written.
	ReasonSuspended = "Suspended"
	// ReasonDeleting: the parent is being deleted with its members.
	ReasonDeleting = "Deleting"
	// ReasonHookFailed: a hook failed (a Job with Failed=True, a Pod in
	// phase Failed, another kind whose kstatus is Failed): nothing after the
	// hook is applied, and the hook is not run again, until the spec or the
	// Bundle changes.
	ReasonHookFailed = "HookFailed"
)

// Reasons of Stalled=True that no retry can fix: stencil writes nothing
// more of the parent until its spec or its Bundle changes (Forbidden: or a
// periodic recheck passes, since RBAC changes raise no event). The message
// names the object, and for Forbidden the verb, the kind and who lacks the
// permission.
const (
	// ReasonForbidden: the controller may not list or watch a member kind
	// (cluster-wide, as its cache needs), or the parent's ServiceAccount
	// may not create, patch or delete one, or the API server forbade a
	// write (RBAC, a quota, an admission plugin).
	ReasonForbidden = "Forbidden"
	// ReasonInvalid: the API server rejected an object as invalid (422).
	ReasonInvalid = "Invalid"
	// ReasonBadRequest: the API server could not accept the request (400)
	// or decode the object (a 500 saying so, as for a Secret whose data is
	// not base64).
	ReasonBadRequest = "BadRequest"
	// ReasonTooLarge: an object is too large for the API server (413) or etcd.
	ReasonTooLarge = "RequestEntityTooLarge"
	// ReasonEmptyRender: the render produced no object while the set has
	// members; nothing is pruned unless the Composition or the Bundle is
	// annotated stencil.dev/allow-empty-render: "true".
	ReasonEmptyRender = "EmptyRender"
	// ReasonFlapping: one member was written several times within a short
	// window with no change of input: something else keeps changing fields
	// stencil sets. The message names the member and those fields.
	ReasonFlapping = "Flapping"
	// ReasonWaiting: objects are held back until values of other members
	// they read are observed (stencil.dev/wait-for), or the render runs
	// again because a value it read changed; Ready is False until then.
	ReasonWaiting = "Waiting"
	// ReasonAdoptionRefused: an object the render names exists and is not
	// a member of this set (no part-of label of its own, or not managed by
	// stencil), and nothing consents to its adoption: neither the object
	// (annotation stencil.dev/adopt naming the parent) nor the Bundle
	// (spec.permissions.adopt naming its kind). It is not written, labelled
	// or deleted; the message names it as Kind/namespace/name. Looked at
	// again after a minute, as for Forbidden, since the object's consent
	// raises no event of the parent's.
	ReasonAdoptionRefused = "AdoptionRefused"
	// ReasonNoServiceAccount: the parent names no ServiceAccount and the
	// controller has no default one to write as (and may not write as
	// itself): nothing is applied, pruned or deleted.
	ReasonNoServiceAccount = "NoServiceAccount"
	// ReasonNotAdmitted: stencil cannot tell that the use of the parent's
	// ServiceAccount was admitted by its ValidatingAdmissionPolicy (the
	// policy or its binding is missing, the parent predates them, or the
	// account it would use changed without a change of the parent):
	// nothing is read, applied, pruned or deleted as the account. The
	// message says what admits it (usually: any change of the parent made
	// by someone who may use the account).
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonNotAllowed: the Bundle's spec.namespaceSelector does not
	// select the parent's namespace: nothing is applied or pruned.
	ReasonNotAllowed = "NotAllowed"
	// ReasonGeneratedKeyLost: a store of the set's generated values was
	// written with another key than the controller's (its Secret
	// stencil-generated-key, in the controller's namespace, was made
	// again or replaced), or that Secret holds no key: nothing is
	// rendered, applied or pruned, so no generated value is made anew in
	// place of one a store keeps. The message names the store and how
	// to recover (restore the key, or delete the set's stores).
	ReasonGeneratedKeyLost = "GeneratedKeyLost"
)

// Reasons of a Bundle's Ready=False about the kind it publishes (spec.api).
const (
	// ReasonInvalidAPI: spec.api (or the Bundle's name) cannot name a CRD,
	// or the API server refused the CRD built from it.
	ReasonInvalidAPI = "InvalidAPI"
	// ReasonNotStructural: the values schema cannot be a CRD's schema.
	ReasonNotStructural = "NotStructural"
	// ReasonKindConflict: the CRD of the kind exists and is not kept for
	// this Bundle (another Bundle's, or not stencil's), its group is one
	// the API server, an aggregated API server or Kubernetes itself
	// serves, or the API server refused its names (NamesAccepted=False).
	// A parent is Stalled with this reason when its render has a CRD
	// that would define a kind the cluster serves otherwise (built in,
	// aggregated, or a CRD not of its own set).
	ReasonKindConflict = "KindConflict"
	// ReasonConversionUnavailable: the kind has several versions, whose
	// instances convert through stencil's conversion webhook, and the
	// controller cannot point the CRD at it: its webhook server is off,
	// or the ValidatingWebhookConfiguration has no base entry (or no CA
	// yet) to send it as. The message says which; the CRD is left as it
	// was.
	ReasonConversionUnavailable = "ConversionUnavailable"
	// ReasonEstablishing: the CRD is applied and not Established yet.
	ReasonEstablishing = "Establishing"
)

// Reasons of the summary events a pass records on its parent.
const (
	// ReasonApplied: the pass created or configured members; the note
	// counts them and names them.
	ReasonApplied = "Applied"
	// ReasonPruned: the pass deleted members it no longer renders.
	ReasonPruned = "Pruned"
)

// ConditionRevisionHeld, on a parent, is present only when the parent
// renders another revision than its Bundle's rollout assigns it, or
// pins one its Bundle refuses: True with reason Pinned (its pin) or
// ValuesRefused (the assigned revision refuses its values: it stays on
// the revision it is on), False with reason PinRefused (the pin is
// ignored: the parent follows the Bundle). A parent that follows the
// rollout has none, so a rollout that moves others changes no parent's
// status. It does not change Ready.
const ConditionRevisionHeld = "RevisionHeld"

// Reasons of RevisionHeld.
const (
	// ReasonPinned: the parent pins a revision (spec.bundleRevision, or
	// an instance's stencil.dev/bundle-revision annotation).
	ReasonPinned = "Pinned"
	// ReasonValuesRefused: the revision the Bundle assigns refuses the
	// parent's values: it stays on the revision it is on (the message
	// names the field paths), until its values or the Bundle change,
	// where the Bundle's spec.revisions.holding is Allowed. Otherwise
	// it is the reason of Stalled=True: nothing is rendered, applied or
	// pruned, and the message names the field paths and the revision.
	ReasonValuesRefused = "ValuesRefused"
	// ReasonValuesMigrated is the reason of the Normal event a parent
	// records when the values migrations its render applies change
	// (status.valuesMigrations): its values, refused by the revision's
	// schemas as they are, are rendered migrated.
	ReasonValuesMigrated = "ValuesMigrated"
	// ReasonPinRefused: the pinned revision is withdrawn, or the Bundle
	// disallows pinning: the parent follows the Bundle instead.
	ReasonPinRefused = "PinRefused"
)

// Reasons of a parent's Stalled=True about revisions and pruning.
const (
	// ReasonRevisionNotFound: the pinned revision is not a revision of
	// the parent's Bundle (never recorded, or deleted): nothing is
	// rendered, applied or pruned.
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonPruneBlocked: the pass would prune more members than the
	// prune budget allows, or a member of a protected kind
	// (PersistentVolumeClaim, PersistentVolume, Namespace,
	// CustomResourceDefinition): it pruned nothing. The message and a
	// Warning event name what it would delete; the annotation
	// stencil.dev/allow-prune: "true" on the parent or its Bundle, or the
	// Bundle's spec.pruning, allows it.
	ReasonPruneBlocked = "PruneBlocked"
)

// Reasons of the events a pass and a rollout record.
const (
	// ReasonDriftRepaired: a pass applied over fields another field
	// manager had changed in a member; the note names the member, the
	// fields and the managers (never values).
	ReasonDriftRepaired = "DriftRepaired"
	// ReasonRolloutStarted, ReasonWaveStarted, ReasonRolloutComplete,
	// ReasonRolloutHalted, ReasonRolledBack, ReasonValuesIncompatible:
	// events of a Bundle's rollout.
	ReasonRolloutStarted     = "RolloutStarted"
	ReasonWaveStarted        = "WaveStarted"
	ReasonRolloutComplete    = "RolloutComplete"
	ReasonRolloutHalted      = "RolloutHalted"
	ReasonRolledBack         = "RolledBack"
	ReasonValuesIncompatible = "ValuesIncompatible"
	// ReasonFailureTolerated: parents of fewer tenants than the rollout's
	// failureThreshold failed; the rollout goes on without them.
	ReasonFailureTolerated = "FailureTolerated"
	// ReasonRevisionRecorded: a new BundleRevision was recorded.
	ReasonRevisionRecorded = "RevisionRecorded"
)
