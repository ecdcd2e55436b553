package conversion_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
)

// AppService a year on: v1 (spec.size, a list of ports, a note only v1
// has) deprecated and still served, v2 (spec.replicas, a map of ports)
// stored, and the templates written against v2.

const deprecation = "AppService v1 is deprecated: write v2 (replicas, a map of ports)"

// v1Schema is v1's spec.
const v1Schema = `{"type":"object","properties":{
  "size":{"type":"integer"},
  "note":{"type":"string"},
  "ports":{"type":"array","items":{"type":"object","required":["name","port"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}}}}`

// v2Schema is v2's, the values schema.
const v2Schema = `{"type":"object","properties":{
  "replicas":{"type":"integer"},
  "ports":{"type":"object","additionalProperties":{"type":"integer"}}}}`

// overLimit is the expression that fails on a size over 100.
const overLimit = "self.size > 100 ? int(string(self.size) + ' is over 100') : self.size"

func appServiceFiles() map[string]string {
	return map[string]string{
		"values.yaml": "replicas: 1\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-app
data:
  replicas: {{ .Values.replicas | quote }}
{{- range $name, $port := .Values.ports }}
  port-{{ $name }}: {{ $port | quote }}
{{- end }}
`,
	}
}

func appServiceAPI(group string) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) {
		s.Schema = &apiextensionsv1.JSON{Raw: []byte(v2Schema)}
		s.API = &v1alpha1.BundleAPI{Group: group, Kind: "AppService", Versions: []v1alpha1.APIVersion{
			{Name: "v1", Deprecated: true, DeprecationWarning: deprecation,
				Schema: &apiextensionsv1.JSON{Raw: []byte(v1Schema)},
				Conversion: &v1alpha1.VersionConversion{
					ToStorage: []v1alpha1.ConversionRule{
						{Set: &v1alpha1.FieldSet{Path: "replicas", Expression: overLimit}},
						{Delete: &v1alpha1.FieldDelete{Path: "size"}},
						{Set: &v1alpha1.FieldSet{Path: "ports", Expression: "has(self.ports) ? self.ports.transformMapEntry(i, p, {p.name: p.port}) : null"}},
					},
					FromStorage: []v1alpha1.ConversionRule{
						{Move: &v1alpha1.FieldMove{From: "replicas", To: "size"}},
						{Set: &v1alpha1.FieldSet{Path: "ports", Expression: "has(self.ports) ? self.ports.transformList(name, port, {'name': name, 'port': port}) : null"}},
					},
				}},
			{Name: "v2", Storage: true},
		}}
	}
}

// appService is instance ns/name in group's version, with spec (YAML).
func appService(t *testing.T, group, version, ns, name, spec string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if spec != "" {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(spec), &m); err != nil {
			t.Fatal(err)
		}
		u.Object["spec"] = m
	}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: "AppService"})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// get reads ns/name in version.
func get(t *testing.T, group, version, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := appService(t, group, version, ns, name, "")
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatalf("get %s %s/%s: %v", version, ns, name, err)
	}
	return u
}

// publishAppService publishes AppService in a group of the test's own
// and waits until its instances are admitted and checked.
func publishAppService(t *testing.T) (ns, group string) {
	t.Helper()
	ns = testenv.Namespace(t, env.Client)
	group = "app-" + ns + ".example.com"
	env.GrantKind(t, group, "appservices")
	b := env.Bundle(t, "appservice-"+ns, appServiceFiles(), appServiceAPI(group))
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	testenv.WaitKindChecked(t, env.Client, appService(t, group, "v2", ns, testenv.AdmissionProbe, "replicas: 1"), 0)
	return ns, group
}

func TestAppServiceVersions(t *testing.T) {
	ns, group := publishAppService(t)
	ctx := context.Background()

	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(ctx, suite.Key("", "appservices."+group), crd); err != nil {
		t.Fatal(err)
	}
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil ||
		c.Webhook.ClientConfig.URL == nil || !strings.Contains(*c.Webhook.ClientConfig.URL, "/convert/") || len(c.Webhook.ClientConfig.CABundle) == 0 {
		t.Fatalf("the CRD's conversion: %+v", crd.Spec.Conversion)
	}
	if _, ok := publish.ConversionToken(crd); !ok {
		t.Fatalf("the CRD's conversion: %+v", crd.Spec.Conversion)
	}

	warned, warnings := env.WarningClient(t)
	if err := warned.Create(ctx, appService(t, group, "v1", ns, "web", "size: 3\nnote: keep me\nports: [{name: http, port: 80}]")); err != nil {
		t.Fatalf("create web in v1: %v", err)
	}
	if w := warnings.Take(); !slices.Contains(w, deprecation) {
		t.Errorf("a write through v1 got warnings %q, want the deprecation warning", w)
	}
	if err := warned.Create(ctx, appService(t, group, "v2", ns, "db", "replicas: 2\nports: {pg: 5432}")); err != nil {
		t.Fatalf("create db in v2: %v", err)
	}
	if w := warnings.Take(); slices.Contains(w, deprecation) {
		t.Errorf("a write through v2 got the deprecation warning: %q", w)
	}

	t.Run("both render the v2 spec", func(t *testing.T) {
		for name, want := range map[string]map[string]string{
			"web": {"replicas": "3", "port-http": "80"},
			"db":  {"replicas": "2", "port-pg": "5432"},
		} {
			cm := &corev1.ConfigMap{}
			testenv.Eventually(t, 0, "ConfigMap "+name+"-app", func() (bool, error) {
				err := env.Get(ctx, suite.Key(ns, name+"-app"), cm)
				return err == nil && cmp.Equal(want, cm.Data), client.IgnoreNotFound(err)
			})
		}
	})

	t.Run("get through either version, losslessly", func(t *testing.T) {
		web1, web2 := get(t, group, "v1", ns, "web"), get(t, group, "v2", ns, "web")
		if diff := cmp.Diff(map[string]any{"size": int64(3), "note": "keep me", "ports": []any{map[string]any{"name": "http", "port": int64(80)}}}, web1.Object["spec"]); diff != "" {
			t.Errorf("web through v1 (-written +read):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"replicas": int64(3), "ports": map[string]any{"http": int64(80)}}, web2.Object["spec"]); diff != "" {
			t.Errorf("web through v2 (-want +got):\n%s", diff)
		}
		db1 := get(t, group, "v1", ns, "db")
		if diff := cmp.Diff(map[string]any{"size": int64(2), "ports": []any{map[string]any{"name": "pg", "port": int64(5432)}}}, db1.Object["spec"]); diff != "" {
			t.Errorf("db through v1 (-want +got):\n%s", diff)
		}
	})

	t.Run("kubectl explain shows each version", func(t *testing.T) {
		dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		for version, fields := range map[string][]string{"v1": {"size", "note"}, "v2": {"replicas"}} {
			testenv.Eventually(t, 0, "the OpenAPI v3 document of "+version, func() (bool, error) {
				raw, err := dc.RESTClient().Get().AbsPath("/openapi/v3/apis", group, version).Do(ctx).Raw()
				if err != nil {
					return false, nil //nolint:nilerr // not published yet
				}
				spec, ok := openAPISpec(raw, group, version)
				if !ok {
					return false, nil
				}
				for _, f := range fields {
					if _, ok := spec[f]; !ok {
						return false, nil
					}
				}
				_, hasReplicas := spec["replicas"]
				return hasReplicas == (version == "v2"), nil
			})
		}
	})

	t.Run("a GitOps tool's dry run of the v1 YAML changes nothing", func(t *testing.T) {
		const manager = "argocd-controller"
		app := appService(t, group, "v1", ns, "gitops", "size: 2\nnote: from git\nports: [{name: http, port: 8080}, {name: metrics, port: 9090}]")
		if err := env.Apply(ctx, client.ApplyConfigurationFromUnstructured(app.DeepCopy()), client.FieldOwner(manager), client.ForceOwnership); err != nil {
			t.Fatalf("apply the v1 YAML: %v", err)
		}
		// Once the controller wrote what it writes (finalizer, ApplySet
		// metadata, status), nothing but the dry run could change it.
		testenv.WaitFor(t, env.Client, appService(t, group, "v2", ns, "gitops", ""), 0,
			testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue})
		before := get(t, group, "v1", ns, "gitops")
		dry := app.DeepCopy()
		if err := env.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry), client.FieldOwner(manager), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Fatalf("dry run the v1 YAML: %v", err)
		}
		after := get(t, group, "v1", ns, "gitops")
		if before.GetGeneration() != after.GetGeneration() {
			t.Errorf("generation %d, then %d", before.GetGeneration(), after.GetGeneration())
		}
		if diff := cmp.Diff(before.Object["spec"], after.Object["spec"]); diff != "" {
			t.Errorf("the live spec changed (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(before.GetAnnotations(), after.GetAnnotations()); diff != "" {
			t.Errorf("the live annotations changed (-before +after):\n%s", diff)
		}
		// What Argo CD and Flux diff: the dry run's result against live.
		if diff := cmp.Diff(before.Object["spec"], dry.Object["spec"]); diff != "" {
			t.Errorf("the dry run's spec differs from live (-live +dry run):\n%s", diff)
		}
		if before.GetGeneration() != dry.GetGeneration() {
			t.Errorf("the dry run's generation %d, live %d", dry.GetGeneration(), before.GetGeneration())
		}
	})

	t.Run("a conversion that fails names the expression", func(t *testing.T) {
		err := env.Create(ctx, appService(t, group, "v1", ns, "huge", "size: 101"))
		if err == nil {
			t.Fatal("created an instance whose conversion fails")
		}
		t.Logf("refused: %v", err)
		if !strings.Contains(err.Error(), overLimit) {
			t.Errorf("error %v does not name the expression %q", err, overLimit)
		}
	})
}

// openAPISpec returns the properties of the spec of AppService in an
// OpenAPI v3 document of group/version.
func openAPISpec(raw []byte, group, version string) (map[string]any, bool) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Properties map[string]any `json:"properties"`
				} `json:"properties"`
				GVK []map[string]string `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, false
	}
	for _, s := range doc.Components.Schemas {
		for _, gvk := range s.GVK {
			if gvk["group"] == group && gvk["version"] == version && gvk["kind"] == "AppService" {
				return s.Properties["spec"].Properties, true
			}
		}
	}
	return nil, false
}
