package migration_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// crdVersions are the names of the versions of CRD name, its storage
// version and its status.storedVersions.
func crdVersions(t *testing.T, name string) (versions []string, storage string, stored []string, generation int64) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	return versions, storage, crd.Status.StoredVersions, crd.Generation
}

// storageStatus waits until the Bundle's status.storage satisfies ok and
// returns it.
func storageStatus(t *testing.T, bundle, what string, ok func(*v1alpha1.StorageStatus) bool) v1alpha1.StorageStatus {
	t.Helper()
	var got v1alpha1.StorageStatus
	testenv.Eventually(t, 0, "status.storage of Bundle "+bundle+" to say "+what, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := env.Get(context.Background(), client.ObjectKey{Name: bundle}, b); err != nil {
			return false, err
		}
		if b.Status.Storage == nil || !ok(b.Status.Storage) {
			return false, fmt.Errorf("status.storage is %+v", b.Status.Storage)
		}
		got = *b.Status.Storage
		return true, nil
	})
	return got
}

// TestRenamingAStoredVersionIsRefused renames a published kind's single
// version (v1 to v2) while its instances are stored in v1: the API
// server would refuse the CRD, and the instances would be lost to every
// client. The Bundle says VersionStillStored with the count, the CRD is
// left as it was, and the removal of v1, in which the instances were
// last written, is warned of.
func TestRenamingAStoredVersionIsRefused(t *testing.T) {
	ns, group, name, _ := env.ServeGadgets(t, "ren")
	for i := range 3 {
		env.MustCreate(t, suite.Gadget(group, ns, fmt.Sprintf("g%d", i), `{"size":1}`))
	}
	crdName := "gadgets." + group
	versions, _, stored, gen := crdVersions(t, crdName)

	env.UpdateBundle(t, name, func(s *v1alpha1.BundleSpec) { s.API.Version = "v2" })
	ready := env.BundleReady(t, name, metav1.ConditionFalse, v1alpha1.ReasonVersionStillStored)
	for _, want := range []string{"version v1 is still in status.storedVersions of CustomResourceDefinition " + crdName,
		"(v1 is its storage version)", "up to 3 instances remain to be rewritten"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready's message %q: want it to say %q", ready.Message, want)
		}
	}
	nowVersions, _, nowStored, nowGen := crdVersions(t, crdName)
	if !slices.Equal(nowVersions, versions) || !slices.Equal(nowStored, stored) || nowGen != gen {
		t.Errorf("CRD %s: versions %v, stored %v, generation %d; want it as it was (%v, %v, %d)", crdName, nowVersions, nowStored, nowGen, versions, stored, gen)
	}

	// The instances were last written in v1, which the Bundle no longer
	// serves: a warning, in status.storage and as an event.
	st := storageStatus(t, name, "the warning of v1", func(st *v1alpha1.StorageStatus) bool {
		return strings.Contains(st.Message, "no longer serves (3 in v1)")
	})
	if st.Phase != v1alpha1.StorageMigrated || st.TargetVersion != "v1" {
		t.Errorf("status.storage %+v: want Migrated, in v1 (the CRD was not changed)", st)
	}
	testenv.Eventually(t, 0, "a VersionStillWritten event of Bundle "+name, func() (bool, error) {
		list := &eventsv1.EventList{}
		if err := env.List(context.Background(), list); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == v1alpha1.ReasonVersionStillWritten && e.Regarding.Name == name && e.Type == "Warning" && strings.Contains(e.Note, "3 in v1")
		}), nil
	})

	// Back to v1: published again, and no warning.
	env.UpdateBundle(t, name, func(s *v1alpha1.BundleSpec) { s.API.Version = "v1" })
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	storageStatus(t, name, "no warning", func(st *v1alpha1.StorageStatus) bool {
		return !strings.Contains(st.Message, "no longer serves")
	})
}

// gadgetCRD is a hand-made CRD of kind Gadget in group with the single
// version v1, labelled for Bundle bundle, as a cluster admin makes it for
// a Bundle to take over.
func gadgetCRD(group, bundle string) *apiextensionsv1.CustomResourceDefinition {
	crd := widgetCRD(group, bundle)
	crd.Name = "gadgets." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", ListKind: "GadgetList", Plural: "gadgets", Singular: "gadget"}
	crd.Spec.Versions = crd.Spec.Versions[:1]
	return crd
}

// TestVersionDroppedOnceMigrated has a Bundle take over a CRD whose
// instances are stored in v1, while v2 is its storage version, and which
// the Bundle publishes at v2 alone: dropping v1 waits for the storage
// migration (VersionStillStored on the way), which rewrites every
// instance in v2 and trims status.storedVersions; then the CRD holds v2
// alone and the kind is served.
func TestVersionDroppedOnceMigrated(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	group, name := "drop-"+ns+".example.com", "drop-"+ns
	env.GrantKind(t, group, "gadgets")
	crd := gadgetCRD(group, name)
	env.MustCreate(t, crd)
	t.Cleanup(func() { _ = env.Delete(context.Background(), crd) })
	env.Established(t, crd.Name)
	for i := range 3 {
		g := suite.Gadget(group, ns, fmt.Sprintf("g%d", i), `{"size":1}`)
		env.MustCreate(t, g)
	}
	live := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}}
	if err := env.Retry(context.Background(), live, func() error {
		v2 := *live.Spec.Versions[0].DeepCopy()
		v2.Name = "v2"
		live.Spec.Versions[0].Storage = false
		live.Spec.Versions = append(live.Spec.Versions, v2)
		return env.Update(context.Background(), live)
	}); err != nil {
		t.Fatal(err)
	}
	before := gadgetStamps(t, group, "v1", ns)

	env.Bundle(t, name, suite.GadgetFiles(""), suite.Publishing(group, func(api *v1alpha1.BundleAPI) { api.Version = "v2" }))
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	versions, storage, stored, _ := crdVersions(t, crd.Name)
	if !slices.Equal(versions, []string{"v2"}) || storage != "v2" || !slices.Equal(stored, []string{"v2"}) {
		t.Errorf("CRD %s: versions %v (storage %s), stored %v; want v2 alone", crd.Name, versions, storage, stored)
	}
	st := storageStatus(t, name, "Migrated to v2", func(st *v1alpha1.StorageStatus) bool {
		return st.Phase == v1alpha1.StorageMigrated && st.TargetVersion == "v2"
	})
	if st.Migrated != 3 || st.Listed != 3 || st.StartTime == nil || st.CompletionTime == nil {
		t.Errorf("status.storage %+v: want 3 instances migrated and listed, started and completed", st)
	}
	// The kind's controller, serving the instances from now on, writes
	// their metadata and status: only their generation says that the
	// migration did not change them.
	after := gadgetStamps(t, group, "v2", ns)
	for n, was := range before {
		if after[n][1] != was[1] {
			t.Errorf("%s: generation %v, was %v: want the rewrite to keep it", n, after[n][1], was[1])
		}
	}
}

// gadgetStamps are the resourceVersions and generations of the Gadgets
// g0, g1 and g2 of ns, read in version (once the API server serves it).
func gadgetStamps(t *testing.T, group, version, ns string) map[string][2]any {
	t.Helper()
	out := map[string][2]any{}
	testenv.Eventually(t, 0, "the Gadgets of "+ns+" in "+version, func() (bool, error) {
		for i := range 3 {
			g := suite.Gadget(group, ns, fmt.Sprintf("g%d", i), "")
			g.SetAPIVersion(group + "/" + version)
			if err := env.Get(context.Background(), client.ObjectKeyFromObject(g), g); err != nil {
				return false, err
			}
			out[g.GetName()] = [2]any{g.GetResourceVersion(), g.GetGeneration()}
		}
		return true, nil
	})
	return out
}

// TestMigrationWritesNoChild moves the storage of a served kind whose
// instances converged (a cluster admin adds v2 to its CRD as the storage
// version, which the Bundle, publishing v1 alone, then cannot drop:
// VersionStillStored): the migration rewrites every instance, at the
// same generation, and the instances' children get no write.
func TestMigrationWritesNoChild(t *testing.T) {
	ns, group, name, _ := env.ServeGadgets(t, "kid")
	for i := range 3 {
		env.MustCreate(t, suite.Gadget(group, ns, fmt.Sprintf("g%d", i), fmt.Sprintf(`{"size":%d}`, i+1)))
	}
	for i := range 3 {
		env.InstanceReady(t, group, ns, fmt.Sprintf("g%d", i), metav1.ConditionTrue)
	}
	env.Controller.Settle(t, ns)
	children := childStamps(t, ns)
	before := gadgetStamps(t, group, "v1", ns)
	mark := env.Controller.Mark()

	crdName := "gadgets." + group
	live := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}}
	if err := env.Retry(context.Background(), live, func() error {
		v2 := *live.Spec.Versions[0].DeepCopy()
		v2.Name = "v2"
		live.Spec.Versions[0].Storage = false
		live.Spec.Versions = append(live.Spec.Versions, v2)
		return env.Update(context.Background(), live)
	}); err != nil {
		t.Fatal(err)
	}
	st := storageStatus(t, name, "Migrated to v2", func(st *v1alpha1.StorageStatus) bool {
		return st.Phase == v1alpha1.StorageMigrated && st.TargetVersion == "v2"
	})
	if st.Migrated != 3 {
		t.Errorf("status.storage %+v: want 3 instances migrated", st)
	}
	if _, _, stored, _ := crdVersions(t, crdName); !slices.Equal(stored, []string{"v2"}) {
		t.Errorf("status.storedVersions %v; want [v2]", stored)
	}
	ready := env.BundleReady(t, name, metav1.ConditionFalse, v1alpha1.ReasonVersionStillStored)
	if !strings.Contains(ready.Message, "version v2 is still in status.storedVersions") {
		t.Errorf("Ready's message %q: want it to name v2", ready.Message)
	}

	for i := range 3 {
		env.InstanceReady(t, group, ns, fmt.Sprintf("g%d", i), metav1.ConditionTrue)
	}
	env.Controller.Settle(t, ns)
	after := gadgetStamps(t, group, "v1", ns)
	for n, was := range before {
		if after[n][0] == was[0] || after[n][1] != was[1] {
			t.Errorf("%s: resourceVersion, generation %v, were %v: want it stored again at the same generation", n, after[n], was)
		}
	}
	var childWrites []string
	rewritten := map[string]bool{}
	writes := env.Controller.WritesSince(mark, ns)
	for _, w := range writes {
		if path, ok := strings.CutPrefix(w, "PUT /apis/"+group+"/v2/namespaces/"+ns+"/gadgets/"); ok {
			instance, _, _ := strings.Cut(path, "?")
			rewritten[instance] = true
		}
		if !strings.Contains(w, "/gadgets/") && !strings.Contains(w, "/events") {
			childWrites = append(childWrites, w)
		}
	}
	if len(rewritten) != 3 {
		t.Errorf("the controller rewrote %v in v2 (its writes: %v); want g0, g1 and g2 (as itself)", rewritten, writes)
	}
	if len(childWrites) > 0 {
		t.Errorf("the controller wrote besides the instances and events: %v; want no write of a child", childWrites)
	}
	if got := childStamps(t, ns); !maps.Equal(got, children) {
		t.Errorf("the children's resourceVersions %v, were %v: want them unchanged", got, children)
	}
}

// childStamps are the resourceVersions of the instances' ConfigMaps in
// ns, by name.
func childStamps(t *testing.T, ns string) map[string]string {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := env.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		if strings.HasSuffix(cm.Name, "-conf") {
			out[cm.Name] = cm.ResourceVersion
		}
	}
	if len(out) != 3 {
		t.Fatalf("children %v: want the 3 instances' ConfigMaps", out)
	}
	return out
}
