package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// databaseFiles renders a StatefulSet of 3 replicas with the id db.
var databaseFiles = map[string]string{
	"templates/db.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Composition.Name }}-db
  annotations:
    stencil.dev/id: db
spec:
  replicas: 3
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: mariadb
`,
}

// quorum is the CloudManager article's rule: a database is ready, and the
// CloudManager's phase ready, once a quorum of its replicas is.
const quorum = "has(self.status.readyReplicas) && self.status.readyReplicas >= self.spec.replicas / 2 + 1"

func withOutputs(s *v1alpha1.BundleSpec) {
	s.Outputs = []v1alpha1.BundleOutput{
		{Name: "readyReplicas", Type: "integer", Value: "members.db.status.readyReplicas"},
		{Name: "phase", Type: "string",
			Value: `has(members.db.status.readyReplicas) && members.db.status.readyReplicas >= members.db.spec.replicas / 2 + 1 ? "ready" : "creating"`},
	}
	s.Readiness = []v1alpha1.ReadinessRule{{Member: "db", ReadyWhen: quorum}}
}

// setReadyReplicas sets the StatefulSet's status as its controller would.
func setReadyReplicas(t *testing.T, ns, name string, ready int32) {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := updateFresh(context.Background(), &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func() error {
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
			return err
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 3, ReadyReplicas: ready, CurrentReplicas: 3, UpdatedReplicas: 3,
			AvailableReplicas: ready, CurrentRevision: "r1", UpdateRevision: "r1"}
		return k.Status().Update(context.Background(), sts)
	}); err != nil {
		t.Fatalf("status of StatefulSet %s: %v", name, err)
	}
}

// outputsOf reads the Composition's status.outputs as Go values.
func outputsOf(t *testing.T, comp *v1alpha1.Composition) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, raw := range comp.Status.Outputs {
		var v any
		if err := json.Unmarshal(raw.Raw, &v); err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	return out
}

// TestOutputsAndReadiness: a Bundle's outputs follow its members' live
// status, its readiness rule makes the parent Ready with a quorum where
// kstatus would wait for every replica, a change of an output records an
// Updated event, and an output that cannot be computed is unset with
// OutputsReady=False saying why.
func TestOutputsAndReadiness(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "outputs-"+ns, databaseFiles, withOutputs)
	mustCreate(t, composition(ns, "cm", b.Name, `{}`))

	// No replica ready: the rule says not ready, readyReplicas has no value.
	eventually(t, "the StatefulSet", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm-db"}, &appsv1.StatefulSet{})
		return err == nil, err
	})
	setReadyReplicas(t, ns, "cm-db", 0)
	comp := condition(t, ns, "cm", v1alpha1.ConditionOutputsReady, metav1.ConditionFalse)
	if c := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionOutputsReady); !strings.Contains(c.Message, "spec.outputs[0]") || !strings.Contains(c.Message, "readyReplicas") {
		t.Errorf("OutputsReady message = %q, want it to name spec.outputs[0] and why", c.Message)
	}
	if got := outputsOf(t, comp); got["phase"] != "creating" || got["readyReplicas"] != nil {
		t.Errorf("outputs = %v, want phase creating and no readyReplicas", got)
	}
	if c := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v with no replica ready, want False", c)
	}

	// Two of three: a quorum. Ready (kstatus alone would still wait), and
	// the outputs follow.
	setReadyReplicas(t, ns, "cm-db", 2)
	comp = condition(t, ns, "cm", v1alpha1.ConditionReady, metav1.ConditionTrue)
	eventually(t, "outputs with a quorum", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
			return false, err
		}
		got := outputsOf(t, comp)
		return got["phase"] == "ready" && got["readyReplicas"] == float64(2), fmt.Errorf("outputs %v", got)
	})
	if c := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionOutputsReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("OutputsReady = %+v, want True", c)
	}
	eventually(t, "an Updated event naming the phase change", func() (bool, error) {
		var list corev1.EventList
		if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == v1alpha1.ReasonUpdated && e.InvolvedObject.Name == "cm" && strings.Contains(e.Message, `phase: "creating" → "ready"`) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none Updated with the phase", len(list.Items))
	})

	// One of three: not a quorum any more.
	setReadyReplicas(t, ns, "cm-db", 1)
	comp = condition(t, ns, "cm", v1alpha1.ConditionReady, metav1.ConditionFalse)
	eventually(t, "phase creating again", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
			return false, err
		}
		got := outputsOf(t, comp)
		return got["phase"] == "creating" && got["readyReplicas"] == float64(1), fmt.Errorf("outputs %v", got)
	})
}

// TestOutputsThatDoNotCompile: a Bundle whose output does not compile
// stalls its Compositions, naming the output and the position, and
// nothing is applied.
func TestOutputsThatDoNotCompile(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "bad-outputs-"+ns, databaseFiles, func(s *v1alpha1.BundleSpec) {
		s.Outputs = []v1alpha1.BundleOutput{{Name: "phase", Type: "string", Value: "members.db.status.("}}
	})
	mustCreate(t, composition(ns, "cm", b.Name, `{}`))
	comp := condition(t, ns, "cm", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionStalled)
	if c.Reason != v1alpha1.ReasonRenderFailed || !strings.Contains(c.Message, "spec.outputs[0].value:1:") {
		t.Errorf("Stalled = %s: %q, want RenderFailed naming spec.outputs[0].value:1:<column>", c.Reason, c.Message)
	}
	consistently(t, "nothing applied", 2*time.Second, func() (bool, error) {
		return absent(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-db"}})
	})
}

// TestPublishedKindOutputs: an instance of a published kind has the
// Bundle's outputs at the top of its status, typed and described in its
// CRD's status schema.
func TestPublishedKindOutputs(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	group := "outgadgets-" + ns + ".example.com"
	grantKind(t, group, "gadgets")
	b := bundle(t, "outgadgets-"+ns, gadgetFiles(""), publishing(group), func(s *v1alpha1.BundleSpec) {
		s.Outputs = []v1alpha1.BundleOutput{{Name: "size", Type: "string", Description: "the size, as the ConfigMap holds it",
			Value: `members["ConfigMap/" + parent.metadata.name + "-conf"].data.size`}}
	})
	bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil {
		t.Fatal(err)
	}
	if p := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["size"]; p.Type != "string" || p.Description != "the size, as the ConfigMap holds it" {
		t.Errorf("the CRD's status.size = %+v, want the declared string", p)
	}
	mustCreate(t, gadget(group, ns, "w1", `{"size":3}`))
	inst := instanceReady(t, group, ns, "w1", metav1.ConditionTrue)
	eventually(t, "status.size", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(inst), inst); err != nil {
			return false, err
		}
		size, _, _ := unstructured.NestedString(inst.Object, "status", "size")
		_, nested, _ := unstructured.NestedMap(inst.Object, "status", "outputs")
		return size == "3" && !nested, fmt.Errorf("status.size = %q, status.outputs present: %v", size, nested)
	})
}
