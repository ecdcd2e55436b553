package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// patchOnly is what the forger of issue 37 item 1 may do to ConfigMaps:
// read and patch them, never delete them.
var patchOnly = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}

// forger returns a client of a user of namespace ns who may patch but not
// delete ConfigMaps there, and a forge that labels an object a member of
// the set id as `kubectl label ... --field-manager=stencil` would: the
// set's part-of label, written under stencil's field manager name. Each
// forge also bumps an annotation, so it is a change the controller sees
// every time (see testenv.Controller.PassAfter).
func forger(t *testing.T, ns string) func(obj client.Object, id string, extra map[string]string) func() error {
	t.Helper()
	env.Grant(t, ns, "patch-configmaps", "mallory", patchOnly)
	mallory := env.AsUser(t, "mallory")
	var n atomic.Int64
	return func(obj client.Object, id string, extra map[string]string) func() error {
		return func() error {
			labels := map[string]string{applyset.LabelPartOf: id}
			annotations := map[string]string{"forged": fmt.Sprint(n.Add(1))}
			for k, v := range extra {
				annotations[k] = v
			}
			patch := map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}}
			if err := mallory.Patch(context.Background(), obj.DeepCopyObject().(client.Object), forgedPatch(patch), client.FieldOwner(applyset.FieldManager)); err != nil {
				return fmt.Errorf("label %s a member: %w", obj.GetName(), err)
			}
			return nil
		}
	}
}

// forgedPatch is a merge patch of content, as kubectl label sends it.
func forgedPatch(content map[string]any) client.Patch {
	data, err := json.Marshal(content)
	if err != nil {
		panic(err)
	}
	return client.RawPatch(types.MergePatchType, data)
}

// adminConfigMap is a ConfigMap an admin made, which the forger labels.
func adminConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"owner": "admin"}}
	mustCreate(t, cm)
	return cm
}

// survives checks that the admin's ConfigMap is still the one the admin
// made (same UID, the admin's data) and, when version is not "", that
// stencil wrote nothing to it since it read that resourceVersion.
func survives(t *testing.T, cm *corev1.ConfigMap, version string) {
	t.Helper()
	live := &corev1.ConfigMap{}
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatalf("the admin's ConfigMap %s: %v", cm.Name, err)
	}
	if live.UID != cm.UID || live.Data["owner"] != "admin" {
		t.Fatalf("the admin's ConfigMap %s was replaced or changed: uid %s (want %s), data %v", cm.Name, live.UID, cm.UID, live.Data)
	}
	if version != "" && live.ResourceVersion != version {
		t.Errorf("the admin's ConfigMap %s was written (resourceVersion %s → %s): labels %v, managers %v",
			cm.Name, version, live.ResourceVersion, live.Labels, managers(live.ManagedFields))
	}
}

// versionOf reads obj and returns its resourceVersion.
func versionOf(t *testing.T, obj client.Object) string {
	t.Helper()
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetResourceVersion()
}

// renamed renders one ConfigMap named by the values.
var renamed = map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\ndata:\n  v: \"1\"\n"}

// TestForgedMemberIsNotOurs (issue 37 item 1): a user who may patch but
// not delete ConfigMaps labels an admin's ConfigMap into a set, with
// field manager stencil. The label and the manager's name are no proof
// of membership: the set's passes (which prune what they no longer
// render) leave it, a suspended set's status does not list it, and the
// set's deletion neither deletes it (deletionPolicy Delete) nor writes it
// (Orphan). Before the fix the prune deleted it as the set's writer.
func TestForgedMemberIsNotOurs(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	forge := forger(t, ns)
	b := bundle(t, "forged-"+ns, renamed)

	t.Run("prune, status and deletion", func(t *testing.T) {
		admin := adminConfigMap(t, ns, "settings")
		comp := composition(ns, "blog", b.Name, `{"name":"one"}`)
		mustCreate(t, comp)
		condition(t, ns, "blog", v1alpha1.ConditionReady, metav1.ConditionTrue)
		id := applyset.ID("blog", ns, applyset.CompositionGroupKind)
		// A pass that saw the forged label (the label is an event of the
		// member watch) ...
		controller.PassAfter(t, ns, "blog", forge(admin, id, nil))
		// ... and one that prunes: the member it no longer renders goes.
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"two"}`) })
		gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}})
		condition(t, ns, "blog", v1alpha1.ConditionReady, metav1.ConditionTrue)
		controller.Settle(t, ns)
		version := versionOf(t, &corev1.ConfigMap{ObjectMeta: admin.ObjectMeta})
		survives(t, admin, version)

		// Suspended, the status lists the set's members as found live:
		// the forged one is none of them.
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Suspend = true })
		c := condition(t, ns, "blog", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended)
		for _, m := range c.Status.Members {
			if m.Name == "settings" {
				t.Errorf("a suspended set's status lists the forged ConfigMap: %+v", c.Status.Members)
			}
		}
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Suspend = false })
		condition(t, ns, "blog", v1alpha1.ConditionReady, metav1.ConditionTrue)

		// Deleted, the set takes its own members and leaves the forged one.
		controller.PassAfter(t, ns, "blog", forge(admin, id, nil))
		version = versionOf(t, &corev1.ConfigMap{ObjectMeta: admin.ObjectMeta})
		if err := k.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		gone(t, comp)
		gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"}})
		survives(t, admin, version)
	})

	t.Run("deletion policy Orphan writes nothing to it", func(t *testing.T) {
		admin := adminConfigMap(t, ns, "orphan-settings")
		comp := composition(ns, "kept", b.Name, `{"name":"kept-one"}`)
		comp.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
		mustCreate(t, comp)
		condition(t, ns, "kept", v1alpha1.ConditionReady, metav1.ConditionTrue)
		controller.PassAfter(t, ns, "kept", forge(admin, applyset.ID("kept", ns, applyset.CompositionGroupKind), nil))
		version := versionOf(t, &corev1.ConfigMap{ObjectMeta: admin.ObjectMeta})
		if err := k.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		gone(t, comp)
		mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-one"}}
		eventually(t, "the set's own member orphaned", func() (bool, error) {
			err := k.Get(ctx, client.ObjectKeyFromObject(mine), mine)
			return err == nil && mine.Labels[applyset.LabelPartOf] == "", err
		})
		survives(t, admin, version)
	})
}

// TestForgedHookIsNotReplaced (issue 37 item 1): a hook's
// before-hook-creation deletes the hook object of an earlier revision
// and makes it again. An admin's ConfigMap of the hook's name that a
// patcher labelled into the set (field manager stencil) is not that
// object: the parent stalls AdoptionRefused naming it, and it is neither
// deleted nor replaced. Before the fix it was deleted as the set's
// writer.
func TestForgedHookIsNotReplaced(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	forge := forger(t, ns)
	admin := adminConfigMap(t, ns, "settings")
	id := applyset.ID("web", ns, applyset.CompositionGroupKind)
	if err := forge(admin, id, map[string]string{"stencil.dev/hook-revision": "1/earlier"})(); err != nil {
		t.Fatal(err)
	}
	b := bundle(t, "forged-hook-"+ns, map[string]string{"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.hook }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
data:
  owner: hook
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-app
`})
	mustCreate(t, composition(ns, "web", b.Name, `{"hook":"settings"}`))
	msg := stalled(t, ns, "web", v1alpha1.ReasonAdoptionRefused, "ConfigMap/"+ns+"/settings").Message
	if !strings.Contains(msg, applyset.AnnotationAdopt) {
		t.Errorf("message %q does not say how to consent", msg)
	}
	consistently(t, "the admin's ConfigMap stays", 2*time.Second, func() (bool, error) {
		live := &corev1.ConfigMap{}
		if err := k.Get(ctx, client.ObjectKeyFromObject(admin), live); err != nil {
			return false, err
		}
		if live.UID != admin.UID || live.Data["owner"] != "admin" {
			return false, fmt.Errorf("uid %s (want %s), data %v", live.UID, admin.UID, live.Data)
		}
		return true, nil
	})
}

// TestForgedMemberIsNotObserved (issue 37 item 1): a template may read
// its own members' observed state. An admin's ConfigMap of a member's
// name that a patcher labelled into the set (field manager stencil) is no
// member: its values never reach the render (the tenant would read the
// admin's data through its own objects), and the parent stalls
// AdoptionRefused naming it. Before the fix the render read it.
func TestForgedMemberIsNotObserved(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	forge := forger(t, ns)
	admin := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}, Data: map[string]string{"owner": "admin", "secret": "admin-only"}}
	mustCreate(t, admin)
	if err := forge(admin, applyset.ID("app", ns, applyset.CompositionGroupKind), nil)(); err != nil {
		t.Fatal(err)
	}
	b := bundle(t, "forged-observed-"+ns, map[string]string{"templates/cms.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: source
data:
  owner: admin
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: result
data:
  seen: {{ observed "ConfigMap/source" "data.secret" | default "nothing" | quote }}
`})
	mustCreate(t, composition(ns, "app", b.Name, ""))
	consistently(t, "the render never sees the admin's data", 3*time.Second, func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := k.Get(ctx, key(ns, "result"), cm)
		if err == nil && cm.Data["seen"] == "admin-only" {
			return false, fmt.Errorf("ConfigMap result holds the admin's value")
		}
		return true, nil
	})
	stalled(t, ns, "app", v1alpha1.ReasonAdoptionRefused, "ConfigMap/"+ns+"/source")
	survives(t, admin, "")
}

// TestPlantedStoreIsNotRead (issue 37 item 1): a Secret writer of the
// namespace plants a store of generated values for a set before its
// first pass (a copy of a real store, labelled a member, written under
// field manager stencil, holding values of the writer's choosing). The
// set never reads it: its generated values are not the planted ones, and
// the store, not the set's, is not written (the parent stalls
// AdoptionRefused naming it). Before the fix the render used the planted
// values.
func TestPlantedStoreIsNotRead(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "planted-"+ns, map[string]string{"templates/creds.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: {{ randAlphaNum 24 | quote }}
`})
	// A real store of the set's name, to copy: what the set of this name
	// keeps (before it is deleted with the set).
	comp := composition(ns, "app", b.Name, "")
	mustCreate(t, comp)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	var stores []corev1.Secret
	list := &corev1.SecretList{}
	if err := k.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Annotations[valuestore.AnnotationStore] == "true" {
			stores = append(stores, s)
		}
	}
	if len(stores) == 0 {
		t.Fatal("the set keeps no store of generated values")
	}
	if err := k.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	gone(t, comp)
	// A store keeps each value as JSON.
	const planted = "planted-by-a-secret-writer"
	plantedJSON, _ := json.Marshal(planted)
	var storeNames []string
	for _, s := range stores {
		gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}})
		forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Annotations: s.Annotations}, Data: map[string][]byte{}}
		for key := range s.Data {
			forged.Data[key] = plantedJSON
		}
		if err := k.Create(ctx, forged, client.FieldOwner(applyset.FieldManager)); err != nil {
			t.Fatal(err)
		}
		storeNames = append(storeNames, "Secret/"+s.Namespace+"/"+s.Name)
	}

	mustCreate(t, composition(ns, "app", b.Name, ""))
	consistently(t, "no Secret holds the planted value", 3*time.Second, func() (bool, error) {
		s := &corev1.Secret{}
		err := k.Get(ctx, key(ns, "creds"), s)
		if err == nil && strings.Contains(string(s.Data["password"]), planted) {
			return false, fmt.Errorf("Secret creds holds the planted password")
		}
		return true, nil
	})
	stalled(t, ns, "app", v1alpha1.ReasonAdoptionRefused, storeNames[0])
	for _, s := range stores {
		live := &corev1.Secret{}
		if err := k.Get(ctx, client.ObjectKeyFromObject(&s), live); err != nil {
			t.Fatal(err)
		}
		for key, v := range live.Data {
			if string(v) != string(plantedJSON) {
				t.Errorf("the planted store %s was written: key %s", s.Name, key)
			}
		}
	}
}

// TestCreateReplaceWritesOnlyItsOwnCRDs (issue 37 item 5): under
// spec.crds CreateReplace, a chart's crds/ CRD that the set did not
// create (an admin's, of the same name) is left as it is: no field of the
// chart's, no label of the chart's. Before the fix it was force-applied.
func TestCreateReplaceWritesOnlyItsOwnCRDs(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	group := "r" + ns + ".example.com"
	name := "widgets." + group
	t.Cleanup(func() { _ = k.Delete(context.Background(), suite.CRDObject(name)) })
	admins := &apiextensionsv1.CustomResourceDefinition{}
	if err := yamlInto(suite.WidgetCRD(group, ""), admins); err != nil {
		t.Fatal(err)
	}
	admins.Labels = map[string]string{"owner": "admin"}
	mustCreate(t, admins)
	eventually(t, "the admin's CRD to be Established", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(admins), admins)
		for _, c := range admins.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, err
	})
	version := admins.ResourceVersion

	chart := strings.Replace(suite.WidgetCRD(group, "{name: Size, type: integer, jsonPath: .spec.size}"), "  name: "+name+"\n",
		"  name: "+name+"\n  labels:\n    stencil.dev/bundle: someone-else\n", 1)
	b := bundle(t, "crds-replace-"+ns, map[string]string{
		"Chart.yaml":           "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"crds/widget.yaml":     chart,
		"templates/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
	}, func(s *v1alpha1.BundleSpec) {
		s.Permissions.ClusterScoped = []v1alpha1.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}}
		s.CRDs = v1alpha1.CRDsCreateReplace
	})
	mustCreate(t, composition(ns, "app", b.Name, ""))
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.Get(ctx, client.ObjectKeyFromObject(admins), live); err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != version || live.Labels["stencil.dev/bundle"] != "" || len(live.Spec.Versions[0].AdditionalPrinterColumns) != 0 {
		t.Errorf("the admin's CRD was written: resourceVersion %s → %s, labels %v, printer columns %v",
			version, live.ResourceVersion, live.Labels, live.Spec.Versions[0].AdditionalPrinterColumns)
	}
}

// yamlInto decodes a YAML manifest into obj.
func yamlInto(manifest string, obj client.Object) error {
	return yaml.Unmarshal([]byte(manifest), obj)
}

// recordedUIDs reads status.inventory.members.uids of Composition ns/name
// as the API server holds it; ok is false when there is no members record.
func recordedUIDs(t *testing.T, ns, name string) (uids []string, ok bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	if err := k.Get(context.Background(), key(ns, name), u); err != nil {
		t.Fatal(err)
	}
	members, ok, _ := unstructured.NestedMap(u.Object, "status", "inventory", "members")
	if !ok {
		return nil, false
	}
	list, _, _ := unstructured.NestedStringSlice(members, "uids")
	return list, true
}

// TestRecordSeededFromAnEarlierVersion (issue 37 item 1): a parent
// recorded by a stencil before the members record (a status.inventory
// with no members) is seeded once from its labelled members that
// stencil's field manager manages, the rule of that version: its member
// is pruned as before, and the record then names the set's members.
func TestRecordSeededFromAnEarlierVersion(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "seeded-"+ns, renamed)
	comp := composition(ns, "web", b.Name, `{"name":"one"}`)
	mustCreate(t, comp)
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	restartController(t, func() {
		// What a stencil before the record left: an inventory, no members.
		if err := k.Status().Patch(ctx, comp, forgedPatch(map[string]any{"status": map[string]any{"inventory": map[string]any{"members": nil}}})); err != nil {
			t.Fatal(err)
		}
		if _, ok := recordedUIDs(t, ns, "web"); ok {
			t.Fatal("the members record is still there")
		}
	})
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"two"}`) })
	gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}})
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	two := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"}}
	exists(t, two)
	eventually(t, "the record to name the member", func() (bool, error) {
		uids, ok := recordedUIDs(t, ns, "web")
		return ok && slices.Contains(uids, string(two.UID)), fmt.Errorf("recorded %v (record: %v), want %s", uids, ok, two.UID)
	})
}

// conflictOnce answers the first status write of Composition ns/name
// with a Conflict, as the API server does when another writer changed the
// parent since it was read, and passes every other request on.
type conflictOnce struct {
	next http.RoundTripper
	path string
	done atomic.Bool
}

func (c *conflictOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && req.URL.Path == c.path && c.done.CompareAndSwap(false, true) {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,` +
			`"message":"Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again"}`
		return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": []string{"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
	return c.next.RoundTrip(req)
}

// TestRecordSurvivesAStatusConflict (issue 37 item 1): the first pass of
// a set creates its member, and its status write meets a Conflict. The
// UIDs it created are recorded all the same (written into the parent's
// status as it then is), so the next pass takes the member as the set's
// own: no AdoptionRefused, and it is pruned when no longer rendered.
func TestRecordSurvivesAStatusConflict(t *testing.T) {
	const shardName = "record-conflict"
	ns := testenv.Namespace(t, k)
	inject := &conflictOnce{path: "/apis/stencil.dev/v1alpha1/namespaces/" + ns + "/compositions/web/status"}
	env.StartWith(t, testenv.ControllerOptions{Shard: shardName, WriteAsController: true,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { inject.next = rt; return inject }})
	b := bundle(t, "record-conflict-"+ns, renamed)
	comp := composition(ns, "web", b.Name, `{"name":"one"}`)
	comp.Labels = map[string]string{shard.Label: shardName}
	testenv.WaitAdmitted(t, k, ns, comp.Labels, 0)
	mustCreate(t, comp)
	// The pass after the Conflict takes the member for its own: the set
	// never stalls refusing it (a stall is kept for ForbiddenRecheck, a
	// minute, so the polls see one if it comes).
	var refused *metav1.Condition
	eventually(t, "web Ready", func() (bool, error) {
		got := &v1alpha1.Composition{}
		if err := k.Get(context.Background(), key(ns, "web"), got); err != nil {
			return false, err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonAdoptionRefused {
			refused = c.DeepCopy()
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == got.Generation, fmt.Errorf("Ready is %v", ready)
	})
	if refused != nil {
		t.Errorf("after the Conflict the set refused its own member: %s", refused.Message)
	}
	if !inject.done.Load() {
		t.Fatal("no status write met the Conflict")
	}
	one := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}
	exists(t, one)
	if uids, _ := recordedUIDs(t, ns, "web"); !slices.Contains(uids, string(one.UID)) {
		t.Errorf("recorded %v, want the member %s", uids, one.UID)
	}
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"two"}`) })
	gone(t, one)
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// TestUnrecordedMemberAfterACrash (issue 37 item 1): a member whose
// record a hard crash lost (created, and the controller gone before its
// status write) is not the set's: nothing but the controller's record
// proves membership, and anyone who may create objects could make one
// that looks like it. The next pass refuses it (AdoptionRefused, naming
// it and the stencil.dev/adopt annotation that consents); once it
// consents, it is adopted and recorded.
func TestUnrecordedMemberAfterACrash(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "crashed-"+ns, renamed)
	comp := composition(ns, "web", b.Name, `{"name":"one"}`)
	mustCreate(t, comp)
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	restartController(t, func() {
		if err := k.Status().Patch(ctx, comp, forgedPatch(map[string]any{"status": map[string]any{"inventory": map[string]any{"members": map[string]any{"uids": []any{}}}}})); err != nil {
			t.Fatal(err)
		}
	})
	// A change of values brings the full pass.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"one","touch":"1"}`) })
	consent := "compositions.stencil.dev/" + ns + "/web"
	stalled(t, ns, "web", v1alpha1.ReasonAdoptionRefused, "ConfigMap/"+ns+"/one", consent)
	one := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}
	if err := updateFresh(ctx, one, func() error {
		one.Annotations = map[string]string{applyset.AnnotationAdopt: consent}
		return k.Update(ctx, one)
	}); err != nil {
		t.Fatal(err)
	}
	// Consent on an object raises no event of the parent's: the parent
	// looks again within ForbiddenRecheck, or at once when it changes. The
	// test changes it rather than wait the minute.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"one","touch":"2"}`) })
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	eventually(t, "the adopted member to be recorded", func() (bool, error) {
		uids, _ := recordedUIDs(t, ns, "web")
		return slices.Contains(uids, string(one.UID)), fmt.Errorf("recorded %v, want %s", uids, one.UID)
	})
}
