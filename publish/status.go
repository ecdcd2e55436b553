package publish

import (
	"encoding/json"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// stencilStatus is parsed once from zz_generated.statusschema.go; callers
// get deep copies.
var stencilStatus = sync.OnceValue(func() statusParts {
	var p statusParts
	if err := json.Unmarshal([]byte(compositionStatusSchema), &p.schema); err != nil {
		panic("publish: zz_generated.statusschema.go: status schema: " + err.Error())
	}
	if err := json.Unmarshal([]byte(compositionColumns), &p.columns); err != nil {
		panic("publish: zz_generated.statusschema.go: printer columns: " + err.Error())
	}
	return p
})

type statusParts struct {
	schema  apiextensionsv1.JSONSchemaProps
	columns []apiextensionsv1.CustomResourceColumnDefinition
}

// StatusSchema is the schema of an instance's status: a Composition's
// status, as the generated Composition CRD defines it.
func StatusSchema() apiextensionsv1.JSONSchemaProps {
	s := stencilStatus().schema
	return *s.DeepCopy()
}

// statusColumns are the Composition CRD's Ready and Status printer columns.
func statusColumns() []apiextensionsv1.CustomResourceColumnDefinition {
	cols := stencilStatus().columns
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, len(cols))
	for i := range cols {
		cols[i].DeepCopyInto(&out[i])
	}
	return out
}
