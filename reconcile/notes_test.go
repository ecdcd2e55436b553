package reconcile_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates/notes"
)

// notesSay waits until Composition ns/name is Ready at its generation
// with status.notes for which ok holds, and returns it.
func notesSay(t *testing.T, ns, name string, ok func(string) bool) *v1alpha1.Composition {
	t.Helper()
	var c *v1alpha1.Composition
	eventually(t, name+"'s status.notes", func() (bool, error) {
		c = mustGet(t, ns, name)
		ready := false
		for _, x := range c.Status.Conditions {
			ready = ready || x.Type == v1alpha1.ConditionReady && x.Status == metav1.ConditionTrue && x.ObservedGeneration == c.Generation
		}
		return ready && ok(c.Status.Notes), fmt.Errorf("ready %v, notes %q", ready, c.Status.Notes)
	})
	return c
}

// TestNotesInStatus: the parent's status.notes is what the Bundle's
// templates/NOTES.txt printed, bounded; a required in it that fails
// stalls the parent naming the file and line, with nothing applied or
// pruned and the notes of the last render kept; a render that looked
// anything up records, in place of the text, the line that says so.
func TestNotesInStatus(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "notes-"+ns, map[string]string{
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-cm\ndata:\n  url: {{ .Values.url | quote }}\n",
		"templates/NOTES.txt": "\n{{ .Release.Name }} serves {{ required \"url is required\" .Values.url }}\n{{ if .Values.long }}{{ range until 400 }}a line of twenty ch\n{{ end }}{{ end }}",
	})
	comp := composition(ns, "shop", b.Name, `{"url":"shop.example"}`)
	mustCreate(t, comp)
	notesSay(t, ns, "shop", func(s string) bool { return s == "shop serves shop.example" })

	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"url":""}`)} })
	env.Stalled(t, ns, "shop", v1alpha1.ReasonRenderFailed, "templates/NOTES.txt:2", "url is required")
	cm := &corev1.ConfigMap{}
	if err := k.Get(suiteCtx, key(ns, "notes-cm"), cm); err != nil || cm.Data["url"] != "shop.example" {
		t.Errorf("the ConfigMap after the stall: %v, %v; want it as the last render applied it", cm.Data, err)
	}
	if got := mustGet(t, ns, "shop").Status.Notes; got != "shop serves shop.example" {
		t.Errorf("status.notes of the stalled parent %q, want the last render's", got)
	}

	update(t, comp, func(c *v1alpha1.Composition) {
		c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"url":"shop.example","long":true}`)}
	})
	c := notesSay(t, ns, "shop", func(s string) bool { return strings.Contains(s, "(truncated: NOTES.txt printed 8024 bytes;") })
	if n := len(c.Status.Notes); n > notes.MaxStatusBytes || !strings.HasPrefix(c.Status.Notes, "shop serves shop.example\na line of twenty ch\n") {
		t.Errorf("status.notes of %d bytes, want at most %d, the start of the notes", n, notes.MaxStatusBytes)
	}

	looks := bundle(t, "notes-lookup-"+ns, map[string]string{
		"templates/cm.yaml":   "{{ $cm := lookup \"v1\" \"ConfigMap\" \"" + ns + "\" \"notes-cm\" }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-lookup\n",
		"templates/NOTES.txt": "the url is {{ .Values.url }}\n",
	})
	mustCreate(t, composition(ns, "looks", looks.Name, `{"url":"x"}`))
	notesSay(t, ns, "looks", func(s string) bool { return s == notes.Withheld })
}
