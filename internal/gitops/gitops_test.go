package gitops_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/internal/gitops"
	"github.com/stencil-dev/stencil/internal/testenv"
)

func loadArgoCD(t *testing.T) *gitops.ArgoCD {
	t.Helper()
	a, err := gitops.LoadArgoCD(filepath.Join(testenv.Root(), "config", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func fixture(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	u := &unstructured.Unstructured{} // integers as int64, as the API server's are read
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return u
}

// TestHealth: in every state stencil leaves a parent (a Composition or an
// instance of a published kind) or a Bundle, Argo CD with
// config/argocd's health check shows it Healthy, Progressing, Degraded or
// Suspended, and Flux's kstatus reads it Current, InProgress or Failed
// (Terminating while deleted).
func TestHealth(t *testing.T) {
	a := loadArgoCD(t)
	for _, tc := range []struct {
		fixture           string
		argo, argoMessage string // what Argo CD shows
		lua               string // the script's own verdict, where Argo CD decides before it
		flux              kstatus.Status
	}{
		// Compositions, in each state.
		{"composition-ready.yaml", gitops.Healthy, "4/4 ready", "", kstatus.CurrentStatus},
		{"composition-reconciling.yaml", gitops.Progressing, "Progressing: 3/4 ready; waiting for Deployment/default/store", "", kstatus.InProgressStatus},
		{"composition-stalled.yaml", gitops.Degraded, "RenderFailed: values: replicas", "", kstatus.FailedStatus},
		{"composition-member-failed.yaml", gitops.Degraded, "MemberFailed: Job/default/migrate: Failed", "", kstatus.FailedStatus},
		{"composition-suspended.yaml", gitops.Suspended, "Suspended: suspended: generation 5 is not applied", "", kstatus.InProgressStatus},
		{"composition-deleting.yaml", gitops.Progressing, "Pending deletion", gitops.Progressing, kstatus.TerminatingStatus},
		{"composition-generation-behind.yaml", gitops.Progressing, "generation 3 (status is of generation 2)", "", kstatus.InProgressStatus},
		// kstatus counts an object with no status as Current: Flux may
		// pass a Composition created a moment before stencil's first pass.
		{"composition-new.yaml", gitops.Progressing, "Waiting for stencil's first pass", "", kstatus.CurrentStatus},
		// Instances of published kinds, whatever their group.
		{"appservice-ready.yaml", gitops.Healthy, "2/2 ready", "", kstatus.CurrentStatus},
		{"crontab-stalled.yaml", gitops.Degraded, "Forbidden: ServiceAccount team-a/stencil may not create", "", kstatus.FailedStatus},
		{"foo-reconciling.yaml", gitops.Progressing, "Progressing: 0/1 ready", "", kstatus.InProgressStatus},
		// Bundles.
		{"bundle-ready.yaml", gitops.Healthy, "kind AppService.app.example.com is served", "", kstatus.CurrentStatus},
		{"bundle-invalid.yaml", gitops.Degraded, "NotStructural: values schema", "", kstatus.InProgressStatus},
		{"bundle-establishing.yaml", gitops.Progressing, "Establishing: CRD crontabs.stable.example.com", "", kstatus.InProgressStatus},
	} {
		t.Run(strings.TrimSuffix(tc.fixture, ".yaml"), func(t *testing.T) {
			obj := fixture(t, tc.fixture)
			h, err := a.Health(obj)
			if err != nil {
				t.Fatal(err)
			}
			if h == nil || h.Status != tc.argo || !strings.Contains(h.Message, tc.argoMessage) {
				t.Errorf("Argo CD: %+v, want %s with %q", h, tc.argo, tc.argoMessage)
			}
			if tc.lua != "" {
				h, err := a.Lua(obj)
				if err != nil || h == nil || h.Status != tc.lua {
					t.Errorf("the health check alone: %+v (%v), want %s", h, err, tc.lua)
				}
			}
			res, err := kstatus.Compute(obj)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.flux {
				t.Errorf("kstatus (Flux): %s (%s), want %s", res.Status, res.Message, tc.flux)
			}
		})
	}
}

// TestArgoCDCoverage: the health check applies to stencil's own kinds and
// to every kind the examples' Bundles publish, each through exactly one
// customization, and to no kind Argo CD judges itself or another
// project's: a customization replaces Argo CD's own check.
func TestArgoCDCoverage(t *testing.T) {
	a := loadArgoCD(t)
	stencil := []schema.GroupVersionKind{
		{Group: "stencil.dev", Version: "v1alpha1", Kind: "Composition"},
		{Group: "stencil.dev", Version: "v1alpha1", Kind: "Bundle"},
	}
	for _, gvk := range append(stencil, publishedKinds(t)...) {
		if keys, err := a.Matches(gvk); err != nil || len(keys) != 1 {
			t.Errorf("%s: health checks %v (%v), want one", gvk.GroupKind(), keys, err)
		}
	}
	for _, gk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
		{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "batch", Version: "v1", Kind: "Job"}, {Group: "batch", Version: "v1", Kind: "CronJob"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
		{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
	} {
		if keys, _ := a.Matches(gk); len(keys) > 0 {
			t.Errorf("%s: matched by %v, whose check would replace Argo CD's own", gk.GroupKind(), keys)
		}
	}
}

// publishedKinds are the kinds the example Bundles publish (the api: of
// examples/bundles/*/stencil.yaml).
func publishedKinds(t *testing.T) []schema.GroupVersionKind {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.Root(), "examples", "bundles", "*", "stencil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.GroupVersionKind
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			API *struct{ Group, Version, Kind string } `json:"api"`
		}
		if err := yaml.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.API != nil {
			out = append(out, schema.GroupVersionKind{Group: s.API.Group, Version: s.API.Version, Kind: s.API.Kind})
		}
	}
	if len(out) < 4 {
		t.Fatalf("found %d published kinds in examples/bundles, want the four articles' at least", len(out))
	}
	return out
}
