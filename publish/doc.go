// Package publish turns a Bundle's spec.api into what the cluster needs to
// serve the kind it publishes, and an instance of that kind into the
// CompositionSpec it stands for. It is pure: no client, no cluster reads,
// so the controller, `stencil bundle lint` and `stencil bundle rbac` agree.
//
// # Responsibilities
//
//   - Names: Defaulted fills in the version (the render version: the
//     single version, v1alpha1 when unset, or of several versions the
//     renderVersion, else the storage version) and the plural (the English
//     plural of the lower-cased kind); CRDName and GVK name the CRD and the
//     kind in its render version, the one the controller reads instances
//     in; Serves matches the kind in any of its versions. Validate checks
//     spec.api and reports field paths under spec.api (a version's under
//     spec.api.versions[i]).
//   - The CRD (crd.go): CRD builds the CustomResourceDefinition stencil keeps
//     for a published kind: namespaced, one CRD version per version of the
//     api (each with its own spec schema, served, storage, deprecation and
//     printer columns; the single-version form one served and stored
//     version), with a Webhook conversion when there are several, whose
//     clientConfig the controller fills in (ConversionPath, with the
//     CRD's own token; ParseConversionPath reads it back); the
//     status subresource, the values schema as spec (the Bundle's
//     spec.schema, or its values.schema.json converted from JSON Schema by
//     jsonschema.go, or any object when it has neither), stencil's status
//     (the Composition CRD's own status schema, generated into
//     zz_generated.statusschema.go by hack/statusschema) and the printer
//     columns. It then checks the CRD as the API server's create validation
//     does (structural schema, defaults, CEL rules) and returns an *Error
//     naming field paths, never values.
//   - Instances (instance.go): InstanceSpec resolves an instance's
//     effective CompositionSpec: the Bundle, the instance's spec as values,
//     and the knobs (suspend, prune, deletion policy, service account) from
//     spec.api.defaults overridden by the instance's stencil.dev/*
//     annotations.
//   - RBAC (rbac.go): ClusterRoles gives the ClusterRoles that let the
//     controller serve a kind (aggregated into its stencil-apply role; it
//     also names the kind's binding of stencil's admission policy,
//     AccessBindingName, the only binding of a published kind the
//     controller may write) and let namespace admins, editors and viewers
//     use it (aggregated into the admin, edit and view roles).
//   - Storage (storage.go): CheckVersionRemoval refuses a CRD that drops
//     a version the live CRD's status.storedVersions still holds
//     (*VersionStillStoredError); StorageVersionOf names a CRD's storage
//     version.
//
// # Invariants
//
// What a Bundle holds is never changed: defaults are filled in on copies,
// so `stencil bundle pack` prints the api as written. A required value
// that the Bundle's values.yaml provides is not required of an instance:
// rendering merges values.yaml under the instance's spec, as it does for a
// Composition's values, so the same spec renders the same way through a
// Composition and through the published kind.
package publish
