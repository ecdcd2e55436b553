package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRandomFieldsAndMask: only the fields two Helm renders disagree on
// are masked, in lists and maps alike, so any other difference between
// Helm's and stencil's objects still fails TestCharts.
func TestRandomFieldsAndMask(t *testing.T) {
	obj := func(crt, name string, ports ...any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "annotations": map[string]any{"checksum/x.y": crt}},
			"data": map[string]any{"tls.crt": crt, "user": name}, "ports": ports}
	}
	h1 := Rendered{"v1 Secret <nil>/s": obj("A", "admin", 1.0, "r1")}
	h2 := Rendered{"v1 Secret <nil>/s": obj("B", "admin", 1.0, "r2")}
	random, err := RandomFields(h1, h2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Path{"v1 Secret <nil>/s": {{"data", "tls.crt"}, {"metadata", "annotations", "checksum/x.y"}, {"ports", "[1]"}}}
	if diff := cmp.Diff(want, random); diff != "" {
		t.Fatalf("random fields (-want +got):\n%s", diff)
	}
	s := Rendered{"v1 Secret <nil>/s": obj("C", "root", 1.0, "r3")}
	Mask(h1, random)
	Mask(s, random)
	if diff := cmp.Diff(h1["v1 Secret <nil>/s"], s["v1 Secret <nil>/s"]); diff == "" {
		t.Error("a difference outside the random fields (data.user) was masked")
	}
	s["v1 Secret <nil>/s"]["data"].(map[string]any)["user"] = "admin"
	if diff := cmp.Diff(h1, s); diff != "" {
		t.Errorf("masked objects differ (-helm +stencil):\n%s", diff)
	}
	if _, err := RandomFields(h1, Rendered{}); err == nil {
		t.Error("renders of different objects: no error")
	}
}

// TestHelmSkips: the hooks `helm template --skip-tests` leaves out.
func TestHelmSkips(t *testing.T) {
	tests := []struct {
		hook string
		ok   bool
		want bool
	}{
		{"", false, false},
		{"pre-install", true, false},
		{" Pre-Install , post-upgrade", true, false},
		{"test", true, true},
		{"test-success", true, true},
		{"pre-install,test", true, true},
		{"test-failure", true, true}, // unknown to Helm v4: skipped
		{"crd-install", true, true},
		{"", true, true},
	}
	for _, tt := range tests {
		if got := helmSkips(tt.hook, tt.ok); got != tt.want {
			t.Errorf("helmSkips(%q, %v) = %v, want %v", tt.hook, tt.ok, got, tt.want)
		}
	}
}
