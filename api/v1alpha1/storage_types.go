package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StoragePhase is where the storage migration of a published kind is.
// +kubebuilder:validation:Enum=Migrating;Migrated
type StoragePhase string

const (
	// StorageMigrating: the instances are being rewritten in the storage
	// version; the CRD's status.storedVersions still holds the versions
	// they were stored in before.
	StorageMigrating StoragePhase = "Migrating"
	// StorageMigrated: every instance is stored in the storage version,
	// the only entry of the CRD's status.storedVersions.
	StorageMigrated StoragePhase = "Migrated"
)

// StorageStatus is the storage migration of the kind a Bundle publishes
// (package reconcile/migration): when the storage version of the kind's
// CRD changes, every stored instance is rewritten in it, in pages, and
// the CRD's status.storedVersions is then trimmed to it. A restart of the
// controller resumes after lastKey. Once the kind's CRD is Established,
// every pass of the migration counts writtenIn, Migrated or not.
type StorageStatus struct {
	// phase is Migrating while instances are rewritten, Migrated once
	// status.storedVersions of the CRD holds targetVersion alone.
	// +optional
	Phase StoragePhase `json:"phase,omitempty"`

	// targetVersion is the storage version the instances are rewritten
	// in. When the storage version changes again, the migration starts
	// over for the new one.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`

	// crdGeneration is the metadata.generation of the CRD when this
	// migration began: a change of the CRD's spec since (its storage
	// version may have moved away and back) starts it over.
	// +optional
	CRDGeneration int64 `json:"crdGeneration,omitempty"`

	// migrated is how many instances this migration has rewritten (or
	// found rewritten since it listed them, or deleted).
	// +optional
	Migrated int64 `json:"migrated,omitempty"`

	// listed is how many instances the migration listed so far (all of
	// them once Migrated), those it skipped on a resume included.
	// +optional
	Listed int64 `json:"listed,omitempty"`

	// lastKey is the namespace/name (the name of a cluster-scoped kind)
	// of the last instance done, in the order the API server lists them;
	// after a restart, the instances listed up to it are not written
	// again.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	LastKey string `json:"lastKey,omitempty"`

	// startTime is when this migration started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when status.storedVersions was trimmed to
	// targetVersion.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// writtenIn counts, per version, the instances whose latest write
	// (the newest entry of their managedFields) was made in it, as
	// counted at the last listing of the kind's instances: a version a
	// client still writes in (a GitOps repository's YAML) cannot be
	// removed without breaking that client.
	// +optional
	// +listType=map
	// +listMapKey=version
	WrittenIn []VersionCount `json:"writtenIn,omitempty"`

	// message says what the migration does or waits for, and warns of a
	// version removed (or no longer served) while instances were last
	// written in it.
	// +optional
	Message string `json:"message,omitempty"`
}

// VersionCount is a number of instances of one version.
type VersionCount struct {
	// version is the version, such as v1.
	// +required
	Version string `json:"version"`
	// instances is how many instances it counts.
	// +required
	Instances int64 `json:"instances"`
}

// The reasons of a Bundle's Ready condition and events that storage
// migration (package reconcile/migration) gives.
const (
	// ReasonVersionStillStored: the Bundle removes a version (drops it
	// from spec.api.versions, or renames its single version) that the
	// live CRD's status.storedVersions still holds: the CRD is left as
	// it was until the storage migration rewrote every instance stored
	// in it.
	ReasonVersionStillStored = "VersionStillStored"
	// ReasonVersionStillWritten (a Warning event): the Bundle removed, or
	// stopped serving, a version in which instances were last written:
	// their writers must move to a version served.
	ReasonVersionStillWritten = "VersionStillWritten"
	// ReasonStorageMigrated (an event): every instance is stored in the
	// storage version and status.storedVersions was trimmed to it.
	ReasonStorageMigrated = "StorageMigrated"
)
