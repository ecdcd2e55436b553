package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// appService is the seeds' AppService as a bundle: a Deployment and a
// Service from replicas, image and ports; the Service can be switched off.
func appService() map[string]string {
	return map[string]string{
		"values.yaml": "replicas: 1\nimage: nginx:1.27\nport: 80\nservice: true\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
  labels:
    app: {{ .Composition.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: {{ .Composition.Name }}
  template:
    metadata:
      labels:
        app: {{ .Composition.Name }}
    spec:
      containers:
      - name: app
        image: {{ .Values.image }}
        ports:
        - containerPort: {{ .Values.port }}
`,
		"templates/service.yaml": `{{- if .Values.service }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Composition.Name }}
spec:
  selector:
    app: {{ .Composition.Name }}
  ports:
  - port: {{ .Values.port }}
    targetPort: {{ .Values.port }}
{{- end }}
`,
	}
}

const appServiceSchema = `{"type":"object","properties":{"replicas":{"type":"integer","minimum":1},"image":{"type":"string"},"port":{"type":"integer"},"service":{"type":"boolean"}}}`

func withSchema(schema string) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) { s.Schema = &apiextensionsv1.JSON{Raw: []byte(schema)} }
}

func key(ns, name string) client.ObjectKey { return suite.Key(ns, name) }

func deployment(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func service(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// TestAppServiceLifecycle is the seeds' AppService end to end: it converges,
// follows a spec change, and prunes the Service when it is no longer rendered.
func TestAppServiceLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	bundle(t, "appservice-"+ns, appService(), withSchema(appServiceSchema))
	comp := composition(ns, "web", "appservice-"+ns, `{"replicas":2}`)
	mustCreate(t, comp)

	dep, svc := deployment(ns, "web"), service(ns, "web")
	exists(t, dep)
	exists(t, svc)
	id := applyset.ID("web", ns, schema.GroupKind{Group: "stencil.dev", Kind: "Composition"})

	t.Run("members carry the part-of label and the parent the ApplySet metadata", func(t *testing.T) {
		if got := dep.Labels[applyset.LabelPartOf]; got != id {
			t.Errorf("Deployment part-of = %q, want %q", got, id)
		}
		if got := *dep.Spec.Replicas; got != 2 {
			t.Errorf("replicas = %d, want 2 from the Composition's values", got)
		}
		eventually(t, "parent metadata", func() (bool, error) {
			if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
				return false, err
			}
			return comp.Annotations[applyset.AnnotationGroupKinds] == "Deployment.apps,Service", nil
		})
		want := map[string]string{
			applyset.AnnotationTooling:    "stencil/v0.0.0-test",
			applyset.AnnotationGroupKinds: "Deployment.apps,Service",
			applyset.AnnotationNamespaces: "",
		}
		got := map[string]string{}
		for k := range want {
			got[k] = comp.Annotations[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parent annotations (-want +got):\n%s", diff)
		}
		if comp.Labels[applyset.LabelApplySetID] != id {
			t.Errorf("parent id label = %q, want %q", comp.Labels[applyset.LabelApplySetID], id)
		}
		if !contains(comp.Finalizers, v1alpha1.Finalizer) {
			t.Errorf("finalizers = %v, want %s", comp.Finalizers, v1alpha1.Finalizer)
		}
		managed := false
		for _, mf := range dep.ManagedFields {
			managed = managed || (mf.Manager == applyset.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply)
		}
		if !managed {
			t.Errorf("Deployment is not server-side-applied by %q: %+v", applyset.FieldManager, dep.ManagedFields)
		}
	})

	t.Run("kubectl's label selector finds exactly the members", func(t *testing.T) {
		var deps appsv1.DeploymentList
		var svcs corev1.ServiceList
		sel := client.MatchingLabels{applyset.LabelPartOf: id}
		if err := k.List(ctx, &deps, client.InNamespace(ns), sel); err != nil {
			t.Fatal(err)
		}
		if err := k.List(ctx, &svcs, client.InNamespace(ns), sel); err != nil {
			t.Fatal(err)
		}
		if len(deps.Items) != 1 || len(svcs.Items) != 1 {
			t.Errorf("found %d Deployments and %d Services by part-of=%s, want 1 and 1", len(deps.Items), len(svcs.Items), id)
		}
	})

	t.Run("a values change updates the members", func(t *testing.T) {
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"replicas":3,"image":"nginx:1.28"}`) })
		eventually(t, "Deployment to follow the spec", func() (bool, error) {
			err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
			return err == nil && *dep.Spec.Replicas == 3 && dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", err
		})
		if err := k.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			t.Fatalf("Service after a spec change: %v", err)
		}
	})

	t.Run("a template no longer rendered is pruned", func(t *testing.T) {
		update(t, comp, func(c *v1alpha1.Composition) {
			c.Spec.Values.Raw = []byte(`{"replicas":3,"image":"nginx:1.28","service":false}`)
		})
		gone(t, svc)
		eventually(t, "the inventory to shrink", func() (bool, error) {
			err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp)
			return err == nil && comp.Annotations[applyset.AnnotationGroupKinds] == "Deployment.apps", err
		})
		if err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			t.Errorf("Deployment after pruning the Service: %v", err)
		}
	})
}

// TestBundleChangeRerenders shows that editing a Bundle re-renders every
// Composition that uses it.
func TestBundleChangeRerenders(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "rerender-"+ns, map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  greeting: hello\n",
	})
	mustCreate(t, composition(ns, "a", b.Name, ""))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	exists(t, cm)
	// Two Compositions in one namespace cannot both own ConfigMap "cfg": the
	// second is refused as another set's member, and stays Stalled.
	mustCreate(t, composition(ns, "b", b.Name, ""))
	eventually(t, "the second Composition refused as another set's member", func() (bool, error) {
		stalled := 0
		for _, name := range []string{"a", "b"} {
			c := &v1alpha1.Composition{}
			if err := k.Get(context.Background(), key(ns, name), c); err != nil {
				return false, err
			}
			if cond(c, v1alpha1.ConditionStalled) == metav1.ConditionTrue &&
				strings.Contains(condMessage(c, v1alpha1.ConditionReady), "belongs to another ApplySet") {
				stalled++
			}
		}
		return stalled == 1 && cond(mustGet(t, ns, "a"), v1alpha1.ConditionReady) == metav1.ConditionTrue, fmt.Errorf("%d stalled", stalled)
	})
	testenv.Update(t, k, b, func() {
		b.Spec.Files["templates/cm.yaml"] = strings.Replace(b.Spec.Files["templates/cm.yaml"], "hello", "bonjour", 1)
	})
	eventually(t, "ConfigMap to follow the Bundle", func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["greeting"] == "bonjour", err
	})
}

func mustGet(t *testing.T, ns, name string) *v1alpha1.Composition {
	t.Helper()
	return env.GetComposition(t, ns, name)
}

func cond(c *v1alpha1.Composition, typ string) metav1.ConditionStatus {
	for _, x := range c.Status.Conditions {
		if x.Type == typ {
			return x.Status
		}
	}
	return ""
}

func condMessage(c *v1alpha1.Composition, typ string) string {
	for _, x := range c.Status.Conditions {
		if x.Type == typ {
			return x.Message
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBundleStatus: a Bundle reports its revision and Ready when it loads,
// and Ready=False naming the file and line when a template does not parse.
func TestBundleStatus(t *testing.T) {
	ns := testenv.Namespace(t, k)
	good := bundle(t, "status-good-"+ns, appService())
	bad := bundle(t, "status-bad-"+ns, map[string]string{"templates/x.yaml": "a: 1\nb: {{ .Values.x\n"})
	for _, tt := range []struct {
		b      *v1alpha1.Bundle
		status metav1.ConditionStatus
		msg    string
	}{{good, metav1.ConditionTrue, ""}, {bad, metav1.ConditionFalse, "templates/x.yaml:2"}} {
		got := &v1alpha1.Bundle{}
		eventually(t, "status of Bundle "+tt.b.Name, func() (bool, error) {
			if err := k.Get(context.Background(), client.ObjectKeyFromObject(tt.b), got); err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == v1alpha1.ConditionReady && c.Status == tt.status && strings.Contains(c.Message, tt.msg) {
					return got.Status.ObservedGeneration == got.Generation, nil
				}
			}
			return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
		})
		if hasRevision := strings.HasPrefix(got.Status.Revision, "sha256:"); hasRevision != (tt.status == metav1.ConditionTrue) {
			t.Errorf("Bundle %s: revision %q", tt.b.Name, got.Status.Revision)
		}
	}
}
