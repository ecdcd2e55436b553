package publish

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// crdNamePaths map CRD fields to the spec.api fields they come from.
var crdNamePaths = []struct{ crd, api string }{
	{"spec.group", "spec.api.group"},
	{"spec.names.kind", "spec.api.kind"},
	{"spec.names.listKind", "spec.api.kind"},
	{"spec.names.singular", "spec.api.kind"},
	{"spec.names.plural", "spec.api.plural"},
	{"spec.names.shortNames", "spec.api.shortNames"},
	{"spec.names.categories", "spec.api.categories"},
	{"spec.conversion", "spec.api.versions"},
	{"metadata.name", "spec.api.plural"},
}

// bundlePath maps a field path of the CRD to the field of the Bundle it
// comes from, and reports whether it lies in a spec schema. sources are
// the fields each version's spec schema comes from, in the versions'
// order. The API server's validation finds the schemas and the printer
// columns per version (spec.versions[i]...), or at the top of the
// internal type's spec when every version has the same (then they are
// the first version's).
func bundlePath(p string, api v1alpha1.BundleAPI, sources []string) (string, bool) {
	i, rest := 0, ""
	if r, ok := strings.CutPrefix(p, "spec.versions["); ok {
		n, tail, _ := strings.Cut(r, "]")
		var err error
		if i, err = strconv.Atoi(n); err != nil || i >= len(sources) {
			return p, false
		}
		rest = tail
	} else if r, ok := strings.CutPrefix(p, "spec."); ok && (strings.HasPrefix(r, "validation") || strings.HasPrefix(r, "additionalPrinterColumns")) {
		rest = "." + r
	}
	if rest == "" {
		return namePath(p), false
	}
	if tail, ok := cutPath(rest, ".validation.openAPIV3Schema.properties[spec]"); ok && sources[i] != "" {
		return sources[i] + tail, true
	}
	if tail, ok := cutPath(rest, ".schema.openAPIV3Schema.properties[spec]"); ok && sources[i] != "" {
		return sources[i] + tail, true
	}
	if tail, ok := strings.CutPrefix(rest, ".additionalPrinterColumns["); ok {
		n, after, _ := strings.Cut(tail, "]")
		cols, at := api.PrinterColumns, "spec.api.printerColumns"
		if len(api.Versions) > i && len(api.Versions[i].PrinterColumns) > 0 {
			cols, at = api.Versions[i].PrinterColumns, fmt.Sprintf("spec.api.versions[%d].printerColumns", i)
		}
		if c, err := strconv.Atoi(n); err == nil && c < len(cols) {
			return fmt.Sprintf("%s[%d]%s", at, c, after), false
		}
		return p, false
	}
	if len(api.Versions) == 0 {
		if tail, ok := cutPath(rest, ".name"); ok {
			return "spec.api.version" + tail, false
		}
		return p, false
	}
	return fmt.Sprintf("spec.api.versions[%d]%s", i, rest), false
}

// namePath maps a CRD field outside its versions to the spec.api field
// it comes from (p itself when none).
func namePath(p string) string {
	for _, m := range crdNamePaths {
		if rest, ok := cutPath(p, m.crd); ok {
			return m.api + rest
		}
	}
	return p
}

// cutPath cuts root off p when p is root or a path below it.
func cutPath(p, root string) (string, bool) {
	rest, ok := strings.CutPrefix(p, root)
	if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
		return "", false
	}
	return rest, true
}
