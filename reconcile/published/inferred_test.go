package published_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/schema/infer"
)

// inferredFiles is a bundle without a schema: values.yaml concrete but
// for labels ({}, ranged over) and resources (written out whole).
var inferredFiles = map[string]string{
	"values.yaml": `size: 1
color: red
ports:
  - name: http
    port: 80
labels: {}
resources:
  requests:
    cpu: 10m
`,
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-conf
data:
  size: {{ .Values.size | quote }}
  color: {{ .Values.color | quote }}
  {{- range .Values.ports }}
  port-{{ .name }}: {{ .port | quote }}
  {{- end }}
  {{- range $k, $v := .Values.labels }}
  label-{{ $k }}: {{ $v | quote }}
  {{- end }}
  resources: {{ toJson .Values.resources | quote }}
`,
}

// TestPublishedKindOfAnInferredSchema: a kind published with the schema
// `stencil bundle schema` infers as its values.schema.json. Where
// values.yaml is concrete the CRD's schema is closed: an unknown field
// is refused by a server-side apply (`kubectl apply --server-side`,
// with field validation Strict or none) and by a create with field
// validation Strict (kubectl's default), and pruned under the API
// server's default (Warn); the free-form parts keep what they are given, Strict too; a
// wrong type is refused; an instance renders.
func TestPublishedKindOfAnInferredSchema(t *testing.T) {
	ctx := context.Background()
	files := withInferredSchema(t, inferredFiles)
	ns, group := servePublished(t, "inferred", files)

	apply := func(name, spec string, opts ...client.PatchOption) error {
		obj := suite.Gadget(group, ns, name, spec)
		data, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, client.FieldOwner("kubectl"), client.ForceOwnership)
		return env.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, data), opts...)
	}
	strict := client.FieldValidation(metav1.FieldValidationStrict)
	for _, c := range []struct{ spec, field string }{
		{`{"size": 2, "colour": "blue"}`, "spec.colour"},
		{`{"size": 2, "ports": [{"name": "h", "port": 1, "hostPort": 5}]}`, "spec.ports[0].hostPort"},
	} {
		// kubectl apply --server-side: refused, Strict or not (a
		// server-side apply is typed by the schema).
		for _, opts := range [][]client.PatchOption{{strict}, nil} {
			if err := apply("typo", c.spec, opts...); err == nil || !strings.Contains(err.Error(), "."+c.field+": field not declared in schema") {
				t.Errorf("apply --server-side of %s (options %v): %v, want %s refused", c.spec, opts, err, c.field)
			}
		}
		// kubectl create (and client-side apply), which ask for Strict.
		err := env.Create(ctx, suite.Gadget(group, ns, "typo", c.spec), client.FieldValidation(metav1.FieldValidationStrict))
		if err == nil || !strings.Contains(err.Error(), `unknown field "`+c.field+`"`) {
			t.Errorf("create (Strict) of %s: %v, want unknown field %q refused", c.spec, err, c.field)
		}
	}
	if err := env.Create(ctx, suite.Gadget(group, ns, "bad", `{"size": "three"}`)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("create of size three: %v, want Invalid naming spec.size", err)
	}

	// Under the API server's default (Warn), the unknown field is pruned.
	if err := env.Create(ctx, suite.Gadget(group, ns, "pruned", `{"size": 2, "colour": "blue"}`)); err != nil {
		t.Fatalf("create (Warn): %v", err)
	}
	pruned := suite.Gadget(group, ns, "pruned", "")
	if err := env.Get(ctx, client.ObjectKeyFromObject(pruned), pruned); err != nil {
		t.Fatal(err)
	}
	if _, kept, _ := unstructured.NestedFieldNoCopy(pruned.Object, "spec", "colour"); kept {
		t.Errorf("spec %v: the unknown field colour was kept, want it pruned", pruned.Object["spec"])
	}

	// The free-form parts take any key, and the instance renders them.
	if err := apply("w", `{"size": 3, "labels": {"team": "a"}, "resources": {"limits": {"nvidia.com/gpu": 1}}}`, strict); err != nil {
		t.Fatalf("apply --server-side (Strict) into the free-form parts: %v", err)
	}
	env.InstanceReady(t, group, ns, "w", metav1.ConditionTrue)
	cm := &corev1.ConfigMap{}
	if err := env.Get(ctx, suite.Key(ns, "w-conf"), cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["size"] != "3" || cm.Data["label-team"] != "a" || !strings.Contains(cm.Data["resources"], "nvidia.com/gpu") || cm.Data["port-http"] != "80" {
		t.Errorf("ConfigMap data %v: want size 3, label-team a, the gpu limit and port-http 80", cm.Data)
	}
}

// withInferredSchema returns files with the values.schema.json inferred
// from them.
func withInferredSchema(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	b, err := templates.LoadObject(&v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := infer.Bundle(b)
	if err != nil {
		t.Fatal(err)
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{templates.SchemaFileJSON: string(js)}
	for p, c := range files {
		out[p] = c
	}
	return out
}

// servePublished publishes kind Gadget of a Bundle of files (its schema
// its values.schema.json) in a group of the test's own, and waits until
// the API server admits its instances; it returns the namespace and the
// group.
func servePublished(t *testing.T, prefix string, files map[string]string) (ns, group string) {
	t.Helper()
	ns = testenv.Namespace(t, env.Client)
	group = prefix + "-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")
	b := env.Bundle(t, prefix+"-"+ns, files, func(s *v1alpha1.BundleSpec) {
		s.API = &v1alpha1.BundleAPI{Group: group, Kind: "Gadget", Version: "v1"}
	})
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.GadgetChecked(t, group, ns)
	return ns, group
}
