package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// childTemplates are the members a benchmark Bundle renders, in turn: five
// kinds that are Current as soon as they exist. %[1]d tells copies of a
// kind apart when a Bundle renders more than five children.
var childTemplates = []string{
	`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-%[1]d
data:
  greeting: {{ .Values.greeting | quote }}
  owner: {{ .Composition.Name | quote }}
`,
	`apiVersion: v1
kind: Secret
metadata:
  name: {{ .Composition.Name }}-%[1]d
type: Opaque
data:
  token: {{ printf "%%s-token" .Composition.Name | b64enc }}
`,
	`apiVersion: v1
kind: Service
metadata:
  name: {{ .Composition.Name }}-%[1]d
spec:
  type: ClusterIP
  selector:
    app: {{ .Composition.Name }}
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
`,
	`apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Composition.Name }}-%[1]d
`,
	`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Composition.Name }}-%[1]d
rules:
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [{{ .Composition.Name }}-%[1]d]
  verbs: [get]
`,
}

// benchBundle is the Bundle of the converge measurement: children members
// taken in turn from childTemplates.
func benchBundle(name string, children int) *v1alpha1.Bundle {
	files := map[string]string{"values.yaml": "greeting: hello\n"}
	for i := range children {
		files[fmt.Sprintf("templates/child-%03d.yaml", i)] = fmt.Sprintf(childTemplates[i%len(childTemplates)], i)
	}
	return newBundle(name, files)
}

// rollBundle is the Bundle of the status latency measurement: one
// Deployment whose image comes from the values, rolled one pod at a time.
func rollBundle(name string) *v1alpha1.Bundle {
	return newBundle(name, map[string]string{
		"values.yaml": "image: registry.example/app:0\nreplicas: 2\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: {{ .Composition.Name }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app: {{ .Composition.Name }}
    spec:
      nodeSelector:
        type: kwok
      tolerations:
      - key: kwok.x-k8s.io/node
        operator: Exists
        effect: NoSchedule
      containers:
      - name: app
        image: {{ .Values.image | quote }}
`,
	})
}

// outputName is the output of outputsBundle.
const outputName = "extra"

// outputsBundle is the Bundle of the outputs latency: one ConfigMap
// (id cm) and one output copying its data.extra, a key the template does
// not set (so another writer's change of it is no drift to undo).
func outputsBundle(name string) *v1alpha1.Bundle {
	b := newBundle(name, map[string]string{
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
  annotations:
    stencil.dev/id: cm
data:
  fixed: "1"
`,
	})
	b.Spec.Outputs = []v1alpha1.BundleOutput{{Name: outputName, Type: "string",
		Value: `has(members.cm.data.extra) ? members.cm.data.extra : ""`}}
	return b
}

func newBundle(name string, files map[string]string) *v1alpha1.Bundle {
	b := &v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Files: files}}
	b.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Bundle"))
	b.Name = name
	return b
}

// inProcess renders in the harness's own process: the floor needs the
// objects, not the sandbox the controller renders in.
type inProcess struct{}

func (inProcess) Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	return templates.RenderContext(ctx, b, in)
}
