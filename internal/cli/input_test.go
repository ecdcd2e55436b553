package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// identityBundle renders a ConfigMap of everything a render reads besides
// the values: the Composition's metadata and UID, .Release.IsUpgrade and
// .Capabilities.
const identityBundle = `apiVersion: stencil.dev/v1alpha1
kind: Bundle
metadata:
  name: %s
spec:
  files:
    templates/cm.yaml: |
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: identity
        labels: {{ toJson .Composition.Labels }}
      data:
        annotations: {{ toJson .Composition.Annotations | quote }}
        uid: {{ .Composition.UID | quote }}
        upgrade: {{ .Release.IsUpgrade | quote }}
        deployment: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
        kube: {{ .Capabilities.KubeVersion.Version | quote }}
        apis: {{ .Capabilities.APIVersions | toJson | sha256sum | quote }}
`

// renderedObjects parses `stencil render` output.
func renderedObjects(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// TestRenderIsWhatTheControllerApplies: online, `stencil render` of a
// Composition file prints what the controller applied for it, for
// templates that read the Composition's labels, annotations and UID,
// .Release.IsUpgrade and .Capabilities; `stencil diff` then sees nothing
// to change. Before the Composition exists, render shows an install with
// no UID, which is what the controller's first pass renders.
func TestRenderIsWhatTheControllerApplies(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	bundle := "identity-" + ns
	kubectl(t, fmt.Sprintf(identityBundle, bundle), "apply", "-f", "-")
	comp := fmt.Sprintf(`apiVersion: stencil.dev/v1alpha1
kind: Composition
metadata:
  name: id
  namespace: %s
  labels: {team: a}
  annotations: {note: x}
spec:
  bundle: %s
`, ns, bundle)

	out, errOut, code := stencil(t, comp, "render", "-f", "-")
	if code != 0 {
		t.Fatalf("render before the Composition exists: exit %d\n%s", code, errOut)
	}
	objs := renderedObjects(t, out)
	if len(objs) != 1 {
		t.Fatalf("render printed %d objects, want 1:\n%s", len(objs), out)
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	if data["uid"] != "" || data["upgrade"] != "false" || data["deployment"] != "true" {
		t.Errorf("render before the Composition exists: data %v, want no uid, an install, apps/v1/Deployment served", data)
	}
	if !strings.Contains(errOut, "does not exist yet") {
		t.Errorf("render before the Composition exists said nothing about it on stderr: %q", errOut)
	}

	// kubectl's client-side apply adds its last-applied annotation, and the
	// controller its ApplySet metadata: templates see neither.
	kubectl(t, comp, "apply", "-f", "-")
	live := &corev1.ConfigMap{}
	eventually(t, "the controller to apply the upgrade render", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "identity"}, live)
		return err == nil && live.Data["upgrade"] == "true", err
	})
	c := &v1alpha1.Composition{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "id"}, c); err != nil {
		t.Fatal(err)
	}
	if c.Annotations[applyset.AnnotationGroupKinds] == "" || c.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
		t.Fatalf("the live Composition lacks the metadata this test is about: %v", c.Annotations)
	}
	want := map[string]string{
		"annotations": `{"note":"x"}`, "uid": string(c.UID), "upgrade": "true", "deployment": "true", "kube": templates.BuiltinKubeVersion,
	}
	for key, v := range want {
		if live.Data[key] != v {
			t.Errorf("the controller applied %s = %q, want %q", key, live.Data[key], v)
		}
	}
	if live.Labels["team"] != "a" || len(live.Labels) != 2 {
		t.Errorf("the controller applied labels %v, want team=a and the part-of label", live.Labels)
	}

	out, errOut, code = stencil(t, comp, "render", "-f", "-")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	objs = renderedObjects(t, out)
	if len(objs) != 1 {
		t.Fatalf("render printed %d objects, want 1:\n%s", len(objs), out)
	}
	data, _, _ = unstructured.NestedStringMap(objs[0].Object, "data")
	if fmt.Sprint(data) != fmt.Sprint(live.Data) || fmt.Sprint(objs[0].GetLabels()) != fmt.Sprint(live.Labels) {
		t.Errorf("render printed labels %v and data %v;\nthe controller applied %v and %v", objs[0].GetLabels(), data, live.Labels, live.Data)
	}
	if out, errOut, code := stencil(t, comp, "diff", "-f", "-"); code != 0 {
		t.Errorf("diff after reconcile: exit %d, want 0\n%s%s", code, out, errOut)
	}
}

// TestRenderOfflineBuiltinKinds: with no cluster, render places every
// built-in kind, APIService and other cluster-scoped ones included, gives
// the built-in .Capabilities, and refuses an object rendered with and
// without the Composition's namespace.
func TestRenderOfflineBuiltinKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stencil.yaml", "permissions:\n  clusterScoped:\n  - {group: apiregistration.k8s.io, kind: APIService}\n  - {group: scheduling.k8s.io, kind: PriorityClass}\n  - {group: storage.k8s.io, kind: '*'}\n")
	write("templates/apiservice.yaml", "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1beta1.metrics.k8s.io\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n")
	write("templates/priority.yaml", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n")
	write("templates/storage.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: csi.example.com\nspec: {}\n")
	write("templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  deployment: {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" | quote }}\n  apiservice: {{ .Capabilities.APIVersions.Has \"apiregistration.k8s.io/v1/APIService\" | quote }}\n  upgrade: {{ .Release.IsUpgrade | quote }}\n  uid: {{ .Composition.UID | quote }}\n")

	comp := compositionYAML("default", "c", "b", `{}`)
	out, errOut, code := stencil(t, comp, "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 0 {
		t.Fatalf("offline render: exit %d\n%s", code, errOut)
	}
	got := map[string]string{}
	for _, o := range renderedObjects(t, out) {
		got[o.GetKind()+"/"+o.GetName()] = o.GetNamespace()
		if o.GetKind() == "ConfigMap" {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			if want := map[string]string{"deployment": "true", "apiservice": "true", "upgrade": "false", "uid": ""}; fmt.Sprint(data) != fmt.Sprint(want) {
				t.Errorf("offline ConfigMap data %v, want %v", data, want)
			}
		}
	}
	want := map[string]string{"APIService/v1beta1.metrics.k8s.io": "", "PriorityClass/high": "", "CSIDriver/csi.example.com": "", "ConfigMap/x": "default"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("offline render placed %v, want %v\n%s", got, want, out)
	}

	write("templates/cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n")
	_, errOut, code = stencil(t, comp, "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 1 || !strings.Contains(errOut, "ConfigMap") || !strings.Contains(errOut, "rendered twice") {
		t.Errorf("ConfigMap x with and without namespace default: exit %d, stderr %q; want exit 1 naming it rendered twice", code, errOut)
	}
}
