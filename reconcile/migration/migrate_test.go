package migration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/migration"
)

// widgetCRD is a hand-made CRD of kind Widget in group, labelled for
// Bundle bundle, with versions v1 (the storage version) and v2, of the
// same schema and no conversion but the apiVersion's (strategy None):
// the migration does not care how versions convert.
func widgetCRD(group, bundle string) *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Labels: map[string]string{publish.LabelBundle: bundle}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema.DeepCopy()},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
		},
	}
}

// widget is Widget ns/name of group in version, with spec size.
func widget(group, version, ns, name string, size int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(size)}}}
	u.SetAPIVersion(group + "/" + version)
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// makeStorage makes version the storage version of CRD name.
func makeStorage(t *testing.T, name, version string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Retry(context.Background(), crd, func() error {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		return env.Update(context.Background(), crd)
	}); err != nil {
		t.Fatalf("make %s the storage version of %s: %v", version, name, err)
	}
}

// stamps are the resourceVersions and generations of the Widgets of ns.
func stamps(t *testing.T, group, ns string) map[string][2]any {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(group + "/v2")
	list.SetKind("WidgetList")
	if err := env.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]any{}
	for _, u := range list.Items {
		out[u.GetName()] = [2]any{u.GetResourceVersion(), u.GetGeneration()}
	}
	return out
}

// migrator is a Migrator of pages of three, as the controller (its
// ServiceAccount and RBAC), whose Updates of instances wrote records.
func migrator(t *testing.T, wrote *[]string, mu *sync.Mutex) *migration.Migrator {
	t.Helper()
	return migratorAs(t, env.ControllerConfig, wrote, mu)
}

// migratorAs is migrator as cfg authenticates.
func migratorAs(t *testing.T, cfg *rest.Config, wrote *[]string, mu *sync.Mutex) *migration.Migrator {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	counted := interceptor.NewClient(c, interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if _, ok := obj.(*unstructured.Unstructured); ok {
			mu.Lock()
			*wrote = append(*wrote, obj.GetNamespace()+"/"+obj.GetName())
			mu.Unlock()
		}
		return c.Update(ctx, obj, opts...)
	}})
	m, err := migration.New(counted, c, cfg, events.NewFakeRecorder(100),
		migration.Options{PageSize: 3, WritesPerSecond: 1000, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// migrateUntil runs passes of m for Bundle bundle and CRD crdName, as its
// controller would (again after an error or a requeue), until the
// Bundle's status.storage satisfies done, and returns it.
func migrateUntil(t *testing.T, m *migration.Migrator, bundle, crdName string, done func(*v1alpha1.StorageStatus) bool) v1alpha1.StorageStatus {
	t.Helper()
	var got v1alpha1.StorageStatus
	testenv.Eventually(t, 0, "the storage migration of "+crdName, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Get(context.Background(), client.ObjectKey{Name: bundle}, b); err != nil {
			return false, err
		}
		if b.Status.Storage != nil && done(b.Status.Storage) {
			got = *b.Status.Storage
			return true, nil
		}
		if err := env.Get(context.Background(), client.ObjectKey{Name: crdName}, crd); err != nil {
			return false, err
		}
		_, err := m.Migrate(context.Background(), b, crd)
		return false, err
	})
	return got
}

func TestMigrationResumesAfterTheLastKey(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	group := "res-" + ns + ".example.com"
	// A Bundle that publishes nothing: the controller's own migration
	// leaves its hand-made CRD alone, and only the test's Migrators run.
	b := env.Bundle(t, "res-"+ns, suite.TwoConfigMaps())
	crd := widgetCRD(group, b.Name)
	env.MustCreate(t, crd)
	t.Cleanup(func() { _ = env.Delete(context.Background(), crd) })
	env.Established(t, crd.Name)
	env.GrantKind(t, group, "widgets")
	var names []string
	for i := range 7 {
		names = append(names, fmt.Sprintf("w%d", i))
		env.MustCreate(t, widget(group, "v1", ns, names[i], i+1))
	}
	before := stamps(t, group, ns)
	makeStorage(t, crd.Name, "v2")

	// The first Migrator stops after its first page of three.
	var mu sync.Mutex
	var wrote []string
	first := migrator(t, &wrote, &mu)
	migration.SetAfterPage(first, func(v1alpha1.StorageStatus) bool { return false })
	st := migrateUntil(t, first, b.Name, crd.Name, func(st *v1alpha1.StorageStatus) bool { return st.LastKey != "" })
	if st.Phase != v1alpha1.StorageMigrating || st.TargetVersion != "v2" || st.Migrated != 3 || st.Listed != 3 || st.LastKey != ns+"/w2" || st.StartTime == nil {
		t.Fatalf("status.storage after the first page: %+v; want Migrating to v2, 3 migrated and listed, last key %s/w2", st, ns)
	}
	if diff := cmp.Diff([]string{ns + "/w0", ns + "/w1", ns + "/w2"}, wrote); diff != "" {
		t.Errorf("instances the first Migrator wrote (-want +got):\n%s", diff)
	}
	mid := stamps(t, group, ns)
	for i, n := range names {
		if changed := mid[n][0] != before[n][0]; changed != (i < 3) {
			t.Errorf("%s: resourceVersion %v, was %v: want it changed only for the first page (stored again in v2)", n, mid[n][0], before[n][0])
		}
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(crd), live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "v2"}, live.Status.StoredVersions); diff != "" {
		t.Errorf("status.storedVersions mid-migration (-want +got):\n%s", diff)
	}

	// A new Migrator (a restarted controller) resumes after the last key.
	wrote = nil
	second := migrator(t, &wrote, &mu)
	done := migrateUntil(t, second, b.Name, crd.Name, func(st *v1alpha1.StorageStatus) bool { return st.Phase == v1alpha1.StorageMigrated })
	if diff := cmp.Diff([]string{ns + "/w3", ns + "/w4", ns + "/w5", ns + "/w6"}, wrote); diff != "" {
		t.Errorf("instances the resumed Migrator wrote (-want +got): the first page must not be written again:\n%s", diff)
	}
	if done.Migrated != 7 || done.Listed != 7 || done.LastKey != ns+"/w6" || done.CompletionTime == nil || !done.StartTime.Equal(st.StartTime) {
		t.Errorf("status.storage once migrated: %+v; want 7 migrated and listed, last key %s/w6, completed, started when the first Migrator started", done, ns)
	}
	if diff := cmp.Diff([]v1alpha1.VersionCount{{Version: "v1", Instances: 7}}, done.WrittenIn); diff != "" {
		t.Errorf("writtenIn (-want +got):\n%s", diff)
	}
	testenv.Eventually(t, 0, "status.storedVersions [v2]", func() (bool, error) {
		err := env.Get(context.Background(), client.ObjectKeyFromObject(crd), live)
		return err == nil && slices.Equal(live.Status.StoredVersions, []string{"v2"}), err
	})
	after := stamps(t, group, ns)
	for _, n := range names {
		if after[n][0] == before[n][0] || after[n][1] != before[n][1] {
			t.Errorf("%s: resourceVersion, generation %v, were %v: want it stored again (a new resourceVersion) at the same generation", n, after[n], before[n])
		}
	}
}

// TestMigrationForbidden runs a migration as a controller that may read
// the kind's instances and write the Bundle's status, not update the
// instances (the test's controller writes as itself, and may write
// anything): status.storage says why, the pass looks again after
// ForbiddenRecheck, and status.storedVersions is not trimmed.
func TestMigrationForbidden(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	group := "forbid-" + ns + ".example.com"
	b := env.Bundle(t, "forbid-"+ns, suite.TwoConfigMaps())
	crd := widgetCRD(group, b.Name)
	env.MustCreate(t, crd)
	t.Cleanup(func() { _ = env.Delete(context.Background(), crd) })
	env.Established(t, crd.Name)
	env.MustCreate(t, widget(group, "v1", ns, "w0", 1))
	makeStorage(t, crd.Name, "v2")

	user := "storage-" + ns
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"get"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"bundles/status"}, Verbs: []string{"patch"}},
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	env.MustCreate(t, role)
	env.MustCreate(t, binding)
	t.Cleanup(func() { _ = env.Delete(context.Background(), binding); _ = env.Delete(context.Background(), role) })
	testenv.WaitGranted(t, env.Client, testenv.Subject{User: user, Groups: []string{"system:authenticated"}}, "", 0, rules...)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}

	var mu sync.Mutex
	var wrote []string
	m := migratorAs(t, cfg, &wrote, &mu)
	testenv.Eventually(t, 0, "a pass refused by RBAC", func() (bool, error) {
		got := &v1alpha1.Bundle{}
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Get(context.Background(), client.ObjectKeyFromObject(b), got); err != nil {
			return false, err
		}
		if err := env.Get(context.Background(), client.ObjectKeyFromObject(crd), live); err != nil {
			return false, err
		}
		res, err := m.Migrate(context.Background(), got, live)
		return err == nil && res.RequeueAfter == migration.ForbiddenRecheck, err
	})
	got := &v1alpha1.Bundle{}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if st := got.Status.Storage; st == nil || st.Phase != v1alpha1.StorageMigrating || !strings.Contains(st.Message, "forbidden") || st.Migrated != 0 {
		t.Errorf("status.storage %+v: want Migrating, nothing migrated, and the refusal", st)
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(crd), live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "v2"}, live.Status.StoredVersions); diff != "" {
		t.Errorf("status.storedVersions (-want +got):\n%s", diff)
	}
}
