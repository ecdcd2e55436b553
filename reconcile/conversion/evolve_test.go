package conversion_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// The story a platform team lives with a kind it published: AppService
// first in the single-version form (v1: size, a list of ports), three
// teams' instances of it, then v2 (replicas, a map of ports) stored with
// v1 deprecated beside it, the stored instances migrated without a write
// to any child, and at last v1 removed.

// v1Files are the Bundle as first published: the template of
// appServiceFiles written against v1's spec, rendering the same
// ConfigMap from it.
func v1Files() map[string]string {
	return map[string]string{
		"values.yaml": "size: 1\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-app
data:
  replicas: {{ .Values.size | quote }}
{{- range .Values.ports }}
  port-{{ .name }}: {{ .port | quote }}
{{- end }}
`,
	}
}

// publishedV1 publishes AppService in the single-version form: version
// v1, whose spec is the values schema (v1Schema).
func publishedV1(group string) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) {
		s.Schema = &apiextensionsv1.JSON{Raw: []byte(v1Schema)}
		s.API = &v1alpha1.BundleAPI{Group: group, Kind: "AppService", Version: "v1"}
	}
}

// evolved is the Bundle a year on: appServiceFiles and appServiceAPI
// (v1 deprecated, v2 stored and rendered), with v1's size renamed as
// docs/versions.md renames it, by a move.
func evolved(group string) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) {
		s.Files = appServiceFiles()
		appServiceAPI(group)(s)
		c := s.API.Versions[0].Conversion
		c.ToStorage = slices.DeleteFunc(c.ToStorage, func(r v1alpha1.ConversionRule) bool {
			return (r.Set != nil && r.Set.Path == "replicas") || (r.Delete != nil && r.Delete.Path == "size")
		})
		c.ToStorage = slices.Insert(c.ToStorage, 0, v1alpha1.ConversionRule{Move: &v1alpha1.FieldMove{From: "size", To: "replicas"}})
	}
}

// tenant is an instance a team wrote in v1, and the ConfigMap's data it
// renders whichever version the templates read.
type tenant struct {
	name, spec string
	data       map[string]string
}

var tenants = []tenant{
	{"web", "size: 3\nnote: keep me\nports: [{name: http, port: 80}]", map[string]string{"replicas": "3", "port-http": "80"}},
	{"db", "size: 2\nports: [{name: pg, port: 5432}, {name: metrics, port: 9187}]",
		map[string]string{"replicas": "2", "port-pg": "5432", "port-metrics": "9187"}},
	{"cache", "size: 1", map[string]string{"replicas": "1"}},
}

// written is the tenant's spec as written, in the types a read decodes
// (integers as int64).
func (tn tenant) written(t *testing.T) map[string]any {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(tn.spec))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// stamp is what must not move while the kind evolves: the resourceVersion
// of each tenant's ConfigMap and each tenant's generation.
type stamp struct{ child, generation map[string]string }

// stamps reads them, the instances in version.
func stamps(t *testing.T, group, version, ns string) stamp {
	t.Helper()
	s := stamp{child: map[string]string{}, generation: map[string]string{}}
	for _, tn := range tenants {
		cm := &corev1.ConfigMap{}
		if err := env.Get(context.Background(), suite.Key(ns, tn.name+"-app"), cm); err != nil {
			t.Fatal(err)
		}
		s.child[tn.name] = cm.ResourceVersion
		s.generation[tn.name] = fmt.Sprint(get(t, group, version, ns, tn.name).GetGeneration())
	}
	return s
}

// onRevision reports whether instance ns/name, read in version, is
// Ready at its generation on Bundle revision rev.
func onRevision(group, version, ns, name, rev string) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(group + "/" + version)
	u.SetKind("AppService")
	if err := env.Get(context.Background(), suite.Key(ns, name), u); err != nil {
		return false, err
	}
	s, err := testenv.StatusOf(u)
	if err != nil {
		return false, err
	}
	if ok, err := (testenv.Condition{Type: v1alpha1.ConditionReady}).Holds(s); !ok {
		return false, fmt.Errorf("%s: %v", name, err)
	}
	got, _, _ := unstructured.NestedString(u.Object, "status", "bundleRevision")
	return got == rev, fmt.Errorf("%s: on revision %q, want %q", name, got, rev)
}

// bundleRevision waits until Bundle name is Ready at its generation and
// returns its revision.
func bundleRevision(t *testing.T, name string) string {
	t.Helper()
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	b := &v1alpha1.Bundle{}
	if err := env.Get(context.Background(), suite.Key("", name), b); err != nil {
		t.Fatal(err)
	}
	return b.Status.Revision
}

// allOnRevision waits until every tenant, read in version, is Ready on
// revision rev, with its ConfigMap's data the tenant's.
func allOnRevision(t *testing.T, group, version, ns, rev string) {
	t.Helper()
	for _, tn := range tenants {
		testenv.Eventually(t, 0, tn.name+" Ready on revision "+rev+" with its ConfigMap", func() (bool, error) {
			if ok, err := onRevision(group, version, ns, tn.name, rev); !ok {
				return false, err
			}
			cm := &corev1.ConfigMap{}
			err := env.Get(context.Background(), suite.Key(ns, tn.name+"-app"), cm)
			return err == nil && cmp.Equal(tn.data, cm.Data), fmt.Errorf("ConfigMap %s-app: %v %v", tn.name, cm.Data, err)
		})
	}
}

// versionNames are the names of crd's versions, and of its storage one.
func versionNames(crd *apiextensionsv1.CustomResourceDefinition) (names []string, storage string) {
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	slices.Sort(names)
	return names, storage
}

// lostStored names a version crd's status.storedVersions holds that its
// spec no longer lists, or no longer serves: the state stencil's
// refusal (VersionStillStored) and the API server exist to prevent.
func lostStored(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, stored := range crd.Status.StoredVersions {
		i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == stored })
		if i < 0 || !crd.Spec.Versions[i].Served {
			return fmt.Sprintf("status.storedVersions %v holds %s, spec.versions %v", crd.Status.StoredVersions, stored, crd.Spec.Versions)
		}
	}
	return ""
}

// crdUntil polls the kind's CRD and Bundle until done holds of them,
// checking on every read that the CRD never lost a version its
// storedVersions held (lostStored); it returns the CRD as it then was.
func crdUntil(t *testing.T, what, crdName, bundle string, done func(*apiextensionsv1.CustomResourceDefinition, *v1alpha1.Bundle) error) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	var lost string
	testenv.Eventually(t, 0, what, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := env.Get(context.Background(), suite.Key("", crdName), crd); err != nil {
			return false, err
		}
		if lost = lostStored(crd); lost != "" {
			return true, nil
		}
		if err := env.Get(context.Background(), suite.Key("", bundle), b); err != nil {
			return false, err
		}
		err := done(crd, b)
		return err == nil, err
	})
	if lost != "" {
		t.Fatalf("while waiting for %s, the CRD lost a stored version: %s", what, lost)
	}
	return crd
}

// migratedToV2 is crdUntil's end of the storage migration: v1 and v2
// served, v2 stored, the Bundle's status.storage Migrated to v2 at the
// CRD's generation and status.storedVersions [v2].
func migratedToV2(crd *apiextensionsv1.CustomResourceDefinition, b *v1alpha1.Bundle) error {
	names, storage := versionNames(crd)
	st := b.Status.Storage
	switch {
	case !slices.Equal(names, []string{"v1", "v2"}) || storage != "v2":
		return fmt.Errorf("CRD versions %v, storage %s", names, storage)
	case st == nil || st.Phase != v1alpha1.StorageMigrated || st.TargetVersion != "v2" || st.CRDGeneration != crd.Generation:
		return fmt.Errorf("status.storage %+v, CRD generation %d", st, crd.Generation)
	case !slices.Equal(crd.Status.StoredVersions, []string{"v2"}):
		return fmt.Errorf("status.storedVersions %v", crd.Status.StoredVersions)
	}
	return nil
}

// onlyV2 is crdUntil's end of v1's removal: v2 alone, stored.
func onlyV2(crd *apiextensionsv1.CustomResourceDefinition, _ *v1alpha1.Bundle) error {
	names, storage := versionNames(crd)
	if !slices.Equal(names, []string{"v2"}) || storage != "v2" || !slices.Equal(crd.Status.StoredVersions, []string{"v2"}) {
		return fmt.Errorf("CRD versions %v, storage %s, status.storedVersions %v", names, storage, crd.Status.StoredVersions)
	}
	return nil
}

// unchanged checks that no tenant's ConfigMap was written (its
// resourceVersion) and no tenant's generation moved since before, and
// that the controller sent no write to a ConfigMap of ns since mark.
func unchanged(t *testing.T, group, ns string, before stamp, mark testenv.Mark) {
	t.Helper()
	if diff := cmp.Diff(before, stamps(t, group, "v2", ns), cmp.AllowUnexported(stamp{})); diff != "" {
		t.Errorf("children's resourceVersions or instances' generations moved (-before +now):\n%s", diff)
	}
	writes := slices.DeleteFunc(env.Controller.WritesSince(mark, ns), func(r string) bool { return !strings.Contains(r, "/configmaps") })
	if len(writes) > 0 {
		t.Errorf("the controller wrote children: %q", writes)
	}
}

// publishV1 is step 1: the Bundle in the single-version form, the
// tenants created in v1, Ready with their children.
func publishV1(t *testing.T) (ns, group, bundle string) {
	t.Helper()
	ns = testenv.Namespace(t, env.Client)
	group = "evolve-" + ns + ".example.com"
	env.GrantKind(t, group, "appservices")
	bundle = env.Bundle(t, "evolve-"+ns, v1Files(), publishedV1(group)).Name
	rev := bundleRevision(t, bundle)
	testenv.WaitKindChecked(t, env.Client, appService(t, group, "v1", ns, testenv.AdmissionProbe, "size: 1"), 0)
	for _, tn := range tenants {
		env.MustCreate(t, appService(t, group, "v1", ns, tn.name, tn.spec))
	}
	allOnRevision(t, group, "v1", ns, rev)
	return ns, group, bundle
}

func TestEvolveAPublishedKind(t *testing.T) {
	ns, group, bundle := publishV1(t)
	crdName := "appservices." + group
	// What a pass of the first revision still sends is no write of the
	// evolution's.
	env.Controller.Settle(t, ns)
	mark := env.Controller.Mark()
	before := stamps(t, group, "v1", ns)

	// Step 2: v2 stored and rendered, v1 deprecated beside it.
	env.UpdateBundle(t, bundle, evolved(group))
	rev := bundleRevision(t, bundle)
	crd := crdUntil(t, "the storage migration to v2", crdName, bundle, migratedToV2)
	if v1 := crd.Spec.Versions[slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1" })]; !v1.Served || !v1.Deprecated {
		t.Errorf("v1 in the CRD: served %t, deprecated %t; want both", v1.Served, v1.Deprecated)
	}
	allOnRevision(t, group, "v2", ns, rev)
	// The passes the migration's rewrites wake render the same objects:
	// let them run before counting their writes.
	env.Controller.Settle(t, ns)
	unchanged(t, group, ns, before, mark)
	for _, tn := range tenants {
		u := get(t, group, "v1", ns, tn.name)
		if diff := cmp.Diff(tn.written(t), u.Object["spec"]); diff != "" {
			t.Errorf("%s through v1 after the migration (-written +read):\n%s", tn.name, diff)
		}
		for k := range u.GetAnnotations() {
			if strings.HasPrefix(k, "conversion.stencil.dev/") {
				t.Errorf("%s through v1 shows annotation %s", tn.name, k)
			}
		}
	}
	if got := get(t, group, "v2", ns, "web").Object["spec"]; !cmp.Equal(map[string]any{"replicas": int64(3), "ports": map[string]any{"http": int64(80)}}, got) {
		t.Errorf("web through v2: %v", got)
	}

	// Step 4: v1 removed, now that nothing is stored in it.
	env.UpdateBundle(t, bundle, func(s *v1alpha1.BundleSpec) {
		s.API.Versions = slices.DeleteFunc(s.API.Versions, func(v v1alpha1.APIVersion) bool { return v.Name == "v1" })
	})
	rev = bundleRevision(t, bundle)
	crdUntil(t, "v1 to leave the CRD", crdName, bundle, onlyV2)
	testenv.Eventually(t, 0, "a get through v1 to fail", func() (bool, error) {
		err := env.Get(context.Background(), suite.Key(ns, "web"), appService(t, group, "v1", ns, "web", ""))
		return apierrors.IsNotFound(err) || meta.IsNoMatchError(err), fmt.Errorf("get through v1: %v", err)
	})
	allOnRevision(t, group, "v2", ns, rev)
	env.Controller.Settle(t, ns)
	unchanged(t, group, ns, before, mark)
	for _, tn := range tenants {
		get(t, group, "v2", ns, tn.name)
	}
}
