package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	testImage  = "registry.example.com/platform/stencil"
	testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// TestInstallManifest: install.yaml holds everything config/default
// installs (CRDs, admission policy, RBAC, Deployment, webhook
// configurations, NetworkPolicy), with the controller image by digest
// and no image by tag; the overlay beside it names the same digest.
func TestInstallManifest(t *testing.T) {
	out := t.TempDir()
	if err := Write(out, "../../config/default", testImage, testDigest, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, filepath.Join(out, "install.yaml"))
	if last := objs[len(objs)-1].GetKind(); objs[0].GetKind() != "Namespace" || !strings.HasSuffix(last, "WebhookConfiguration") {
		t.Errorf("install.yaml starts with a %s and ends with a %s, want the Namespace first and the webhook configurations last (one kubectl apply creates them in order)",
			objs[0].GetKind(), objs[len(objs)-1].GetKind())
	}
	kinds := map[string][]string{}
	for _, o := range objs {
		kinds[o.GetKind()] = append(kinds[o.GetKind()], o.GetName())
	}
	for kind, names := range map[string][]string{
		"Namespace":                        {"stencil-system"},
		"CustomResourceDefinition":         {"bundles.stencil.dev", "compositions.stencil.dev"},
		"ServiceAccount":                   {"stencil"},
		"ClusterRole":                      {"stencil-manager", "stencil-apply"},
		"ClusterRoleBinding":               {"stencil-manager"},
		"Deployment":                       {"stencil-controller"},
		"Service":                          {"stencil-webhook", "stencil-metrics"},
		"ValidatingWebhookConfiguration":   {"stencil-validating"},
		"MutatingWebhookConfiguration":     {"stencil-mutating"},
		"ValidatingAdmissionPolicy":        {"stencil-access"},
		"ValidatingAdmissionPolicyBinding": nil,
		"NetworkPolicy":                    {"stencil-controller"},
		"Role":                             {"stencil-leader-election", "stencil-webhook-cert"},
	} {
		if len(kinds[kind]) == 0 {
			t.Errorf("install.yaml has no %s", kind)
		}
		for _, n := range names {
			if !slices.Contains(kinds[kind], n) {
				t.Errorf("install.yaml has no %s %s (has %v)", kind, n, kinds[kind])
			}
		}
	}
	want := testImage + "@" + testDigest
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if img := c.(map[string]any)["image"]; img != want {
				t.Errorf("Deployment %s runs %v, want %s", o.GetName(), img, want)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "# stencil v1.2.3, installed with\n") || !strings.Contains(string(raw), "# Controller image: "+want) {
		t.Errorf("install.yaml does not start with its header:\n%.300s", raw)
	}
	k, err := os.ReadFile(filepath.Join(out, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(k), "newName: "+testImage+"\n  digest: "+testDigest+"\n") {
		t.Errorf("kustomization.yaml does not name the image by digest:\n%s", k)
	}
	// Issue 37: the default release writes members as the parents'
	// ServiceAccounts, and the controller holds no write of them.
	if wac := writeAsController(t, objs); wac != "" {
		t.Errorf("install.yaml writes as the controller: %s", wac)
	}
}

// TestWriteAsControllerRelease: make release RELEASE_CONFIG=config/
// write-as-controller releases the controller writing as itself, with
// the write verbs that takes; config/default's release has neither.
func TestWriteAsControllerRelease(t *testing.T) {
	out := t.TempDir()
	if err := Write(out, "../../config/write-as-controller", testImage, testDigest, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, filepath.Join(out, "install.yaml"))
	if wac := writeAsController(t, objs); !strings.Contains(wac, "--write-as-controller") || !strings.Contains(wac, "stencil-write-as-controller") {
		t.Errorf("install.yaml of config/write-as-controller: %q, want the flag and the ClusterRole", wac)
	}
	raw, err := os.ReadFile(filepath.Join(out, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "from config/write-as-controller:") {
		t.Errorf("install.yaml's header does not name its config:\n%.600s", raw)
	}
}

// writeAsController says what of objs writes members as the controller:
// a Deployment with --write-as-controller, a ClusterRole aggregated into
// stencil-apply that writes; "" none.
func writeAsController(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	var found []string
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
				if slices.Contains(args, "--write-as-controller") {
					found = append(found, "Deployment "+o.GetName()+" --write-as-controller")
				}
			}
		case "ClusterRole":
			if o.GetLabels()["rbac.stencil.dev/aggregate-to-manager"] != "true" || strings.HasPrefix(o.GetName(), "stencil:published:") {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
				if slices.ContainsFunc(verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					found = append(found, "ClusterRole "+o.GetName()+" "+strings.Join(verbs, ","))
					break
				}
			}
		}
	}
	return strings.Join(found, "; ")
}

// TestImageArgument: the image is a repository; a tag or digest in it
// would be the wrong image in a release.
func TestImageArgument(t *testing.T) {
	for _, image := range []string{"", "stencil:latest", "registry.example.com:5000/stencil:v1", testImage + "@" + testDigest} {
		if err := Write(t.TempDir(), "../../config/default", image, testDigest, "v1"); err == nil {
			t.Errorf("-image %q: no error", image)
		}
	}
	if err := Write(t.TempDir(), "../../config/default", "registry.example.com:5000/stencil", testDigest, "v1"); err != nil {
		t.Errorf("a registry with a port: %v", err)
	}
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}
