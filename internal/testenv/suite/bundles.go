package suite

import "github.com/stencil-dev/stencil/api/v1alpha1"

// Bundle files and spec changes more than one package's tests render.

// TwoConfigMaps renders ConfigMaps "keep" (its name values.name) and,
// while values.second, "second".
func TwoConfigMaps() map[string]string {
	return map[string]string{
		"values.yaml":           "second: true\nname: keep\n",
		"templates/keep.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\ndata:\n  a: \"1\"\n",
		"templates/second.yaml": "{{- if .Values.second }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\ndata:\n  b: \"2\"\n{{- end }}\n",
	}
}

// CRDYAML is a CustomResourceDefinition of group/kind with the given
// plural and scope, as a template would render it.
func CRDYAML(group, kind, plural, scope string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.` + group + `
  annotations:
    api-approved.kubernetes.io: "unapproved, test"
spec:
  group: ` + group + `
  names: {kind: ` + kind + `, plural: ` + plural + `}
  scope: ` + scope + `
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
}

// WidgetCRD is a CRD of kind Widget in group, with the printer columns
// given (a change a chart may make to it), as a chart's crds/ folder
// holds it.
func WidgetCRD(group, columns string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + group + `
spec:
  group: ` + group + `
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns: [` + columns + `]
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
}

// OnlyCRDs allows a Bundle to render CustomResourceDefinitions and no
// other cluster-scoped kind.
func OnlyCRDs(s *v1alpha1.BundleSpec) {
	s.Permissions.ClusterScoped = []v1alpha1.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}}
}

// WaiterFiles render a Service, and a ConfigMap that, while values.wait,
// waits for a label of the Service that no one has set yet (its
// stencil.dev/wait-for annotation, observed "Service/web").
func WaiterFiles() map[string]string {
	return map[string]string{
		"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n",
		"templates/waiter.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: waiter
  {{- if .Values.wait }}
  annotations:
    stencil.dev/wait-for: Service/web metadata.labels.go
  {{- end }}
data:
  go: {{ observed "Service/web" "metadata.labels.go" | default "no" | quote }}
`,
	}
}
