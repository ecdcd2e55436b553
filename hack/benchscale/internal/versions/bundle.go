package versions

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
)

// The kind of the benchmark, as examples/versions publishes it.
const (
	group   = "app.example.com"
	kind    = "AppService"
	plural  = "appservices"
	crdName = plural + "." + group
	// bundleName publishes it; valuesBundleName is the plain Bundle of
	// the values migration.
	bundleName       = "bench-appservice"
	valuesBundleName = "bench-appservice-values"
	// fieldManager creates the instances and applies them again, as a
	// GitOps tool holding their v1 YAML would.
	fieldManager = "bench-versions"
	// namespaces is how many namespaces the instances are spread over.
	namespaces = 10
)

// gvr is the kind's resource in version.
func gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
}

// namespace is the i-th namespace of the instances; valuesNamespace
// holds the values migration's Composition.
func namespace(i int) string { return fmt.Sprintf("bench-appservice-%02d", i) }

const valuesNamespace = "bench-appservice-values"

// example is examples/versions/appservice: AppService a year on (v1
// deprecated and served, v2 stored), read from the repository so that
// the benchmark converts with the example's very rules.
type example struct {
	// api is stencil.yaml's api (v1 with its schema and conversion, v2).
	api v1alpha1.BundleAPI
	// migrations are stencil.yaml's valuesMigrations.
	migrations []v1alpha1.ValuesMigration
	// schema is values.schema.json: v2's spec, and the values the
	// Bundle's Compositions are refused or migrated by.
	schema string
	// composition is compositions/appservice.yaml: a Composition written
	// for the first values.
	composition *v1alpha1.Composition
}

// loadExample reads examples/versions under the repository root.
func loadExample(root string) (example, error) {
	dir := filepath.Join(root, "examples", "versions")
	var ex example
	var spec v1alpha1.BundleSpec
	if err := readYAML(filepath.Join(dir, "appservice", "stencil.yaml"), &spec); err != nil {
		return ex, err
	}
	if spec.API == nil || len(spec.API.Versions) != 2 || spec.API.Versions[0].Name != "v1" || spec.API.Versions[0].Schema == nil || !spec.API.Versions[1].Storage {
		return ex, fmt.Errorf("%s: want api.versions v1 (with its schema) and v2 (storage)", filepath.Join(dir, "appservice", "stencil.yaml"))
	}
	ex.api, ex.migrations = *spec.API, spec.ValuesMigrations
	schemaJSON, err := os.ReadFile(filepath.Join(dir, "appservice", "values.schema.json"))
	if err != nil {
		return ex, err
	}
	ex.schema = string(schemaJSON)
	ex.composition = &v1alpha1.Composition{}
	return ex, readYAML(filepath.Join(dir, "compositions", "appservice.yaml"), ex.composition)
}

func readYAML(path string, into any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// The members an AppService renders: its Service, as
// examples/versions/appservice/templates/service.yaml writes it, and a
// ConfigMap of its replicas and image in place of the example's
// Deployment (so that N instances start no pods). The first revision
// reads v1's spec (size, ports as a list), the next ones v2's
// (replicas, ports as a map); both render the same objects, so that a
// child written when the Bundle changes is a write too many.
const (
	configMapV1 = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
  labels:
    app: {{ .Composition.Name }}
data:
  replicas: {{ .Values.size | quote }}
  image: {{ .Values.image | quote }}
`
	configMapV2 = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
  labels:
    app: {{ .Composition.Name }}
data:
  replicas: {{ .Values.replicas | quote }}
  image: {{ .Values.image | quote }}
`
	// serviceV1 ranges over the list, in its order: the instances list
	// their ports by name, the order in which v2's map is ranged over.
	serviceV1 = `{{- if .Values.ports }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Composition.Name }}
  labels:
    app: {{ .Composition.Name }}
spec:
  selector:
    app: {{ .Composition.Name }}
  ports:
  {{- range .Values.ports }}
  - name: {{ .name }}
    port: {{ .port }}
    targetPort: {{ .name }}
  {{- end }}
{{- end }}
`
	serviceV2 = `{{- if .Values.ports }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Composition.Name }}
  labels:
    app: {{ .Composition.Name }}
spec:
  selector:
    app: {{ .Composition.Name }}
  ports:
  {{- range $name, $port := .Values.ports }}
  - name: {{ $name }}
    port: {{ $port }}
    targetPort: {{ $name }}
  {{- end }}
{{- end }}
`
)

// firstSpec is the Bundle as first published, in the single-version
// form: AppService v1, whose spec is the values schema (v1's schema of
// the example), with v1's printer columns.
func (ex example) firstSpec() v1alpha1.BundleSpec {
	v1 := ex.api.Versions[0]
	return v1alpha1.BundleSpec{
		Files:  map[string]string{"values.yaml": "size: 1\n", "templates/configmap.yaml": configMapV1, "templates/service.yaml": serviceV1},
		Schema: &apiextensionsv1.JSON{Raw: slices.Clone(v1.Schema.Raw)},
		API: &v1alpha1.BundleAPI{Group: ex.api.Group, Kind: ex.api.Kind, Plural: ex.api.Plural, Version: v1.Name,
			PrinterColumns: v1.PrinterColumns},
	}
}

// evolvedSpec is the example's Bundle: v1 deprecated and served, v2
// stored and rendered, the conversions and values migrations of
// stencil.yaml.
func (ex example) evolvedSpec() v1alpha1.BundleSpec {
	return v1alpha1.BundleSpec{
		Files: map[string]string{"values.yaml": "replicas: 1\nimage: nginx:1.27\n", "values.schema.json": ex.schema,
			"templates/configmap.yaml": configMapV2, "templates/service.yaml": serviceV2},
		API:              ex.api.DeepCopy(),
		ValuesMigrations: slices.Clone(ex.migrations),
	}
}

// v2OnlySpec is evolvedSpec with v1 removed.
func (ex example) v2OnlySpec() v1alpha1.BundleSpec {
	s := ex.evolvedSpec()
	s.API.Versions = slices.DeleteFunc(s.API.Versions, func(v v1alpha1.APIVersion) bool { return v.Name != "v2" })
	return s
}

// valuesFirstSpec is the plain Bundle of the values migration as first
// written: v1's schema as its values schema, no kind published.
func (ex example) valuesFirstSpec() v1alpha1.BundleSpec {
	s := ex.firstSpec()
	s.API = nil
	return s
}

// valuesNextSpec is its next revision: v2's schema, which refuses size,
// and the example's valuesMigrations.
func (ex example) valuesNextSpec() v1alpha1.BundleSpec {
	s := ex.evolvedSpec()
	s.API = nil
	return s
}

// bundle is a Bundle named name with spec.
func bundle(name string, spec v1alpha1.BundleSpec) *v1alpha1.Bundle {
	b := fixture.NewBundle(name, nil)
	b.Spec = spec
	return b
}

// instanceName names the i-th instance.
func instanceName(i int) string { return fmt.Sprintf("app-%05d", i) }

// v1Spec is the spec the i-th instance is written with, in v1: sizes 1
// to 3; one port, two (by name, as v2's map is ordered), or none every
// fifth (it renders no Service).
func v1Spec(i int) map[string]any {
	spec := map[string]any{"size": int64(i%3 + 1), "image": "nginx:1.27"}
	switch {
	case i%5 == 4:
	case i%2 == 0:
		spec["ports"] = []any{map[string]any{"name": "http", "port": int64(80)}}
	default:
		spec["ports"] = []any{map[string]any{"name": "http", "port": int64(80)}, map[string]any{"name": "metrics", "port": int64(9090)}}
	}
	return spec
}

// v1Instance is the i-th instance's v1 YAML, as an object to apply.
func v1Instance(i, nss int) map[string]any {
	return map[string]any{
		"apiVersion": group + "/v1", "kind": kind,
		"metadata": map[string]any{"name": instanceName(i), "namespace": namespace(i % nss)},
		"spec":     v1Spec(i),
	}
}
