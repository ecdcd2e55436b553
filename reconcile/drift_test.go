package reconcile_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// TestDriftNamesItsAuthor: when stencil sets back a member someone else
// changed, its DriftRepaired event names the fields and the field manager
// that changed them, never a value.
func TestDriftNamesItsAuthor(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "drift-"+ns, map[string]string{
		"templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  mode: fast\n  size: \"3\"\n",
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: first-secret-91c\n",
	})
	mustCreate(t, composition(ns, "app", b.Name, ""))
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// Edits as other managers, again on a conflict (stencil writes both).
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	testenv.Update(t, k, cm, func() { cm.Data["mode"] = "slow" }, client.FieldOwner("kubectl-edit"))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}}
	testenv.Update(t, k, secret, func() { secret.Data["password"] = []byte("hand-edited-4e2") }, client.FieldOwner("ops-script"))
	eventually(t, "the ConfigMap set back", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["mode"] == "fast", err
	})
	eventually(t, "a DriftRepaired event naming kubectl-edit", func() (bool, error) {
		return hasEvent(ns, v1alpha1.ReasonDriftRepaired, "ConfigMap/"+ns+"/cfg repaired (data.mode changed by kubectl-edit (Update))")
	})
	eventually(t, "a DriftRepaired event naming ops-script", func() (bool, error) {
		return hasEvent(ns, v1alpha1.ReasonDriftRepaired, "Secret/"+ns+"/creds repaired (data.password changed by ops-script (Update))")
	})
	if ok, _ := hasEvent(ns, v1alpha1.ReasonDriftRepaired, "size"); ok {
		t.Error("a field nobody changed is named as drift")
	}
	for _, v := range []string{"hand-edited-4e2", "first-secret-91c", "slow"} {
		if ok, _ := hasEvent(ns, v1alpha1.ReasonDriftRepaired, v); ok {
			t.Errorf("a DriftRepaired event quotes the value %q", v)
		}
	}
	// A change of the render is no drift.
	env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) {
		s.Files["templates/cm.yaml"] = strings.Replace(s.Files["templates/cm.yaml"], "fast", "medium", 1)
	})
	eventually(t, "the ConfigMap to follow the Bundle", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["mode"] == "medium", err
	})
	if ok, _ := hasEvent(ns, v1alpha1.ReasonDriftRepaired, "medium"); ok {
		t.Error("a render's change is named as drift")
	}
}
