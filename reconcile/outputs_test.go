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
	"github.com/stencil-dev/stencil/internal/testenv/suite"
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

// setReadyReplicas sets the StatefulSet's status as its controller would,
// over the StatefulSet as it then is (again on a conflict).
func setReadyReplicas(t *testing.T, ns, name string, ready int32) {
	t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.UpdateStatus(t, k, sts, func() {
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 3, ReadyReplicas: ready, CurrentReplicas: 3, UpdatedReplicas: 3,
			AvailableReplicas: ready, CurrentRevision: "r1", UpdateRevision: "r1"}
	})
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
	// The outputs of a pass that read the StatefulSet with its status (a
	// pass before, with none, may say the same, or name the member not yet
	// observed): readyReplicas cannot be computed, the phase can.
	comp := compositionWith(t, ns, "cm",
		testenv.Condition{Type: v1alpha1.ConditionOutputsReady, Status: metav1.ConditionFalse, Message: testenv.Says("spec.outputs[0]", "readyReplicas")},
		testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse})
	eventually(t, "outputs with no replica ready", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
			return false, err
		}
		got := outputsOf(t, comp)
		return got["phase"] == "creating" && got["readyReplicas"] == nil, fmt.Errorf("outputs %v", got)
	})
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
	// RenderFailed naming the output: not the stall of a controller whose
	// cache has not yet seen the Bundle just made (BundleNotFound).
	compositionWith(t, ns, "cm", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonRenderFailed},
		Message: testenv.Says("spec.outputs[0].value:1:")})
	consistently(t, "nothing applied", 2*time.Second, func() (bool, error) {
		return env.Absent(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-db"}})
	})
}

// TestPublishedKindOutputs: an instance of a published kind has the
// Bundle's outputs at the top of its status, typed and described in its
// CRD's status schema.
func TestPublishedKindOutputs(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	group := "outgadgets-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")
	b := bundle(t, "outgadgets-"+ns, suite.GadgetFiles(""), suite.Publishing(group), func(s *v1alpha1.BundleSpec) {
		s.Outputs = []v1alpha1.BundleOutput{{Name: "size", Type: "string", Description: "the size, as the ConfigMap holds it",
			Value: `members["ConfigMap/" + parent.metadata.name + "-conf"].data.size`}}
	})
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil {
		t.Fatal(err)
	}
	if p := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["size"]; p.Type != "string" || p.Description != "the size, as the ConfigMap holds it" {
		t.Errorf("the CRD's status.size = %+v, want the declared string", p)
	}
	// The first instance of the kind waits for the API server to serve it
	// and stencil's admission policy to check it (a Bundle's Ready says
	// neither).
	testenv.WaitKindChecked(t, k, suite.Gadget(group, ns, testenv.AdmissionProbe, `{"size":3}`), 0)
	mustCreate(t, suite.Gadget(group, ns, "w1", `{"size":3}`))
	inst := env.InstanceReady(t, group, ns, "w1", metav1.ConditionTrue)
	eventually(t, "status.size", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(inst), inst); err != nil {
			return false, err
		}
		size, _, _ := unstructured.NestedString(inst.Object, "status", "size")
		_, nested, _ := unstructured.NestedMap(inst.Object, "status", "outputs")
		return size == "3" && !nested, fmt.Errorf("status.size = %q, status.outputs present: %v", size, nested)
	})
}
