package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// APIVersion is one version of a published kind, as a CRD's version:
// its own schema, whether the API server serves it, whether instances
// are stored in it, deprecation, and its own printer columns. Every
// version but the storage version says how its instances convert to and
// from the storage version (conversion); the API server asks stencil's
// conversion webhook, which applies those rules, whenever an instance is
// read or written in a version other than the one it is stored in.
type APIVersion struct {
	// name is the version, such as v1 or v2beta1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`
	Name string `json:"name"`

	// served says whether the API server serves the version; true when
	// unset. A version no longer served keeps converting the instances
	// stored in it until the storage migration rewrote them.
	// +optional
	Served *bool `json:"served,omitempty"`

	// storage marks the version instances are stored in: exactly one
	// version has it. When it moves to another version, stencil rewrites
	// every stored instance in the new one (status.storage reports it)
	// and then drops the old one from the CRD's status.storedVersions.
	// +optional
	Storage bool `json:"storage,omitempty"`

	// deprecated makes the API server warn every request of this
	// version.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`

	// deprecationWarning replaces the API server's default warning of a
	// deprecated version.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DeprecationWarning string `json:"deprecationWarning,omitempty"`

	// schema is the OpenAPI v3 schema of an instance's spec in this
	// version, in the dialect of a CRD's openAPIV3Schema. At most one of
	// schema and schemaFile is set; with neither, the version's spec is
	// the Bundle's values schema (spec.schema or values.schema.json).
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Schema *apiextensionsv1.JSON `json:"schema,omitempty"`

	// schemaFile names a file of the bundle (such as schemas/v1.json)
	// holding a JSON Schema of the version's spec, converted as
	// values.schema.json is.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SchemaFile string `json:"schemaFile,omitempty"`

	// printerColumns are the version's extra columns of kubectl get; the
	// api's printerColumns when unset.
	// +optional
	// +listType=atomic
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`

	// conversion says how an instance's spec converts between this
	// version and the storage version. The storage version has none;
	// every other version needs one unless its spec is the storage
	// version's as it is (then it may be omitted: fields convert by
	// name).
	// +optional
	Conversion *VersionConversion `json:"conversion,omitempty"`
}

// VersionConversion converts an instance's spec between one version and
// the storage version, as data. Rules apply in order to a copy of the
// spec being converted; a field no rule names keeps its path. What the
// target version cannot hold (a field it lacks, or drops) is kept in the
// object's annotation conversion.stencil.dev/<version>, so that a round
// trip (v1 to v2 to v1) returns what was written.
type VersionConversion struct {
	// toStorage converts a spec of this version to the storage
	// version's.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	ToStorage []ConversionRule `json:"toStorage,omitempty"`

	// fromStorage converts a spec of the storage version to this
	// version's. When unset, it is the inverse of toStorage: its moves
	// reversed, in reverse order; it must be set when toStorage sets a
	// field with an expression.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	FromStorage []ConversionRule `json:"fromStorage,omitempty"`
}

// ConversionRule is one step of a conversion, or of a values migration:
// exactly one of move, default, set and delete. Paths are dot-separated
// field names from the root of the spec (or of the values), such as
// ports or service.port.
// +kubebuilder:validation:XValidation:rule="[has(self.move), has(self.default), has(self.set), has(self.delete)].filter(x, x).size() == 1",message="exactly one of move, default, set and delete"
type ConversionRule struct {
	// move moves (renames) the field at from to the path to, replacing
	// what is there; nothing happens when from is absent.
	// +optional
	Move *FieldMove `json:"move,omitempty"`

	// default sets the field at path to value when it is absent.
	// +optional
	Default *FieldDefault `json:"default,omitempty"`

	// set sets the field at path to the result of a CEL expression over
	// self, the spec (or the values) as they were before the first rule;
	// a null result removes the field. Expressions are bounded in cost as
	// a CRD's validation rules are.
	// +optional
	Set *FieldSet `json:"set,omitempty"`

	// delete removes the field at path.
	// +optional
	Delete *FieldDelete `json:"delete,omitempty"`
}

// FieldMove moves a field from one path to another.
type FieldMove struct {
	// from is the path moved from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	From string `json:"from"`
	// to is the path moved to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	To string `json:"to"`
}

// FieldDefault gives a field a value when it is absent.
type FieldDefault struct {
	// path is the field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
	// value is the field's value when absent: any JSON value.
	// +required
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Value apiextensionsv1.JSON `json:"value"`
}

// FieldSet sets a field to the result of a CEL expression.
type FieldSet struct {
	// path is the field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
	// expression is CEL over self (the spec or values before the first
	// rule), such as
	// self.ports.map(p, [p.name, p.port]) or has(self.image) ? self.image.split(':')[0] : null.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
}

// FieldDelete removes a field.
type FieldDelete struct {
	// path is the field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
}

// ValuesMigration turns values an earlier schema of the Bundle accepted
// into values the current schema accepts. A parent whose values the
// current revision's schema refuses is rendered with its values migrated
// (every migration in order, each over the result of the one before,
// until the schema accepts them) instead of being refused or held on an
// earlier revision; its status says which migrations applied. The
// parent's own spec is never rewritten.
type ValuesMigration struct {
	// name names the migration in the parent's status, such as
	// size-to-replicas.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// rules are the steps, over the values (not merged with values.yaml).
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Rules []ConversionRule `json:"rules"`
}
