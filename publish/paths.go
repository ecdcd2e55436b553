package publish

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// crdSchemaRoots are where the API server's validation finds the spec
// schema: per version, or at the top of the internal type's spec when
// every version has the same schema.
var crdSchemaRoots = []string{
	"spec.versions[0].schema.openAPIV3Schema.properties[spec]",
	"spec.validation.openAPIV3Schema.properties[spec]",
}

// crdColumnRoots are where it finds the printer columns.
var crdColumnRoots = []string{"spec.versions[0].additionalPrinterColumns[", "spec.additionalPrinterColumns["}

// crdNamePaths map CRD fields to the spec.api fields they come from.
var crdNamePaths = []struct{ crd, api string }{
	{"spec.group", "spec.api.group"},
	{"spec.names.kind", "spec.api.kind"},
	{"spec.names.listKind", "spec.api.kind"},
	{"spec.names.singular", "spec.api.kind"},
	{"spec.names.plural", "spec.api.plural"},
	{"spec.names.shortNames", "spec.api.shortNames"},
	{"spec.names.categories", "spec.api.categories"},
	{"spec.versions[0].name", "spec.api.version"},
	{"metadata.name", "spec.api.plural"},
}

// bundlePath maps a field path of the CRD to the field of the Bundle it
// comes from, and reports whether it lies in the values schema.
func bundlePath(p string, api v1alpha1.BundleAPI, source string) (string, bool) {
	for _, root := range crdSchemaRoots {
		if rest, ok := cutPath(p, root); ok && source != "" {
			return source + rest, true
		}
	}
	for _, root := range crdColumnRoots {
		if rest, ok := strings.CutPrefix(p, root); ok {
			i, tail, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(i); err == nil && n < len(api.PrinterColumns) {
				return fmt.Sprintf("spec.api.printerColumns[%d]%s", n, tail), false
			}
		}
	}
	for _, m := range crdNamePaths {
		if rest, ok := cutPath(p, m.crd); ok {
			return m.api + rest, false
		}
	}
	return p, false
}

// cutPath cuts root off p when p is root or a path below it.
func cutPath(p, root string) (string, bool) {
	rest, ok := strings.CutPrefix(p, root)
	if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
		return "", false
	}
	return rest, true
}
