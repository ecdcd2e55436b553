package sandbox_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/templates"
)

func TestMain(m *testing.M) {
	setUpWorker()
	sandbox.Main() // the pool re-executes this test binary as its workers
	os.Exit(m.Run())
}

func load(t testing.TB, name string, files map[string]string) *templates.Bundle {
	t.Helper()
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		t.Fatalf("load bundle: %v", err)
	}
	return b
}

func newPool(t *testing.T, l sandbox.Limits, workers int) *sandbox.Pool {
	t.Helper()
	p, err := sandbox.New(sandbox.Options{Limits: l, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

var configMap = map[string]string{
	"values.yaml":      "name: cm\nreplicas: 3\nratio: 1.5\n",
	"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n  namespace: {{ .Composition.Namespace }}\ndata:\n  n: {{ .Values.replicas | quote }}\n  big: {{ 12345678901 | quote }}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: {{ .Values.replicas }}\n  x: {{ .Values.ratio }}\n",
}

var input = templates.Input{
	Values:      &apiextensionsv1.JSON{Raw: []byte(`{"replicas":4}`)},
	Composition: templates.CompositionInfo{Name: "app", Namespace: "team-a", UID: "u-1"},
}

// TestRenderMatchesInProcess: a worker's render is the in-process render,
// numbers included (int64 stays int64, float64 stays float64).
func TestRenderMatchesInProcess(t *testing.T) {
	b := load(t, "cm", configMap)
	want, err := templates.Render(b, input)
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, sandbox.Limits{}, 1)
	for i := range 3 { // the second and third reuse the worker and its parsed bundle
		got, err := p.Render(context.Background(), b, input)
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if len(got) != len(want) {
			t.Fatalf("render %d: %d objects, want %d", i, len(got), len(want))
		}
		for j := range want {
			if d := cmp.Diff(want[j].Object, got[j].Object); d != "" {
				t.Errorf("render %d object %d (-in process +worker):\n%s", i, j, d)
			}
		}
	}
}

// TestBinaryFilesReachTheWorker: a bundle file that is not UTF-8 (one of
// .Files, as kube-prometheus-stack's files/crds.bz2) reaches a worker
// byte for byte, though the request is JSON: the worker's render, which
// sends it base64-encoded, is the in-process one.
func TestBinaryFilesReachTheWorker(t *testing.T) {
	blob := "BZh91AY&SY\xff\xfe\x00\x80\xe9"
	b := load(t, "binary", map[string]string{
		"files/crds.bz2":   blob,
		"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: crds\nbinaryData:\n  crds.bz2: {{ .Files.Get \"files/crds.bz2\" | b64enc }}\n",
	})
	got, err := newPool(t, sandbox.Limits{}, 1).Render(context.Background(), b, templates.Input{Composition: templates.CompositionInfo{Name: "c", Namespace: "ns"}})
	if err != nil {
		t.Fatal(err)
	}
	want := base64.StdEncoding.EncodeToString([]byte(blob))
	if len(got) != 1 || got[0].Object["binaryData"].(map[string]any)["crds.bz2"] != want {
		t.Fatalf("the worker rendered %v, want binaryData crds.bz2 %s", got, want)
	}
	if files := b.Spec().Files; files["files/crds.bz2"] != blob {
		t.Errorf("the bundle's file changed: %q", files["files/crds.bz2"])
	}
}

// TestRenderErrorKeepsLocation: a template error crosses the process
// boundary as a RenderError with its file and line.
func TestRenderErrorKeepsLocation(t *testing.T) {
	b := load(t, "bad", map[string]string{"templates/x.yaml": "a: 1\n{{ fail \"no\" }}\n"})
	_, err := newPool(t, sandbox.Limits{}, 1).Render(context.Background(), b, templates.Input{})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "templates/x.yaml" || re.Line != 2 || !strings.Contains(re.Msg, "no") {
		t.Fatalf("err = %#v, want a RenderError at templates/x.yaml:2", err)
	}
}

// TestOverruns: a render past its deadline or its memory ends in a
// RenderError with the reason and the template, the worker is replaced,
// and the next render of a healthy bundle works.
func TestOverruns(t *testing.T) {
	healthy := load(t, "cm", configMap)
	tests := []struct {
		name   string
		limits sandbox.Limits
		tmpl   string
		reason string
		line   int
	}{
		// Within every step bound, but far slower than 50 ms.
		{"deadline", sandbox.Limits{Timeout: 50 * time.Millisecond},
			"{{ range until 1000 }}{{ range until 900 }}{{ $x := add 1 2 }}{{ end }}{{ end }}", templates.ReasonTimeout, 1},
		// Stuck in one action (scrypt, five times) past the deadline: the
		// watchdog kills the worker and names the line being executed.
		{"deadline inside a call", sandbox.Limits{Timeout: 50 * time.Millisecond},
			"a: 1\n\n{{ range until 2 }}{{ $x := print" + strings.Repeat(` (derivePassword 1 "long" "password" "user" "example.com")`, 5) + " }}{{ end }}", templates.ReasonTimeout, 3},
		{"memory", sandbox.Limits{Memory: 48 << 20},
			`{{ $l := list }}{{ range until 200 }}{{ $l = append $l (repeat 1000000 "x") }}{{ end }}{{ len $l }}`, templates.ReasonTooLarge, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, tt.limits, 1)
			b := load(t, "hostile", map[string]string{"templates/hostile.yaml": tt.tmpl})
			_, err := p.Render(context.Background(), b, templates.Input{})
			var re *templates.RenderError
			if !errors.As(err, &re) || re.Reason != tt.reason {
				t.Fatalf("err = %v (%#v), want a RenderError with reason %s", err, err, tt.reason)
			}
			if re.File != "templates/hostile.yaml" || re.Line != tt.line {
				t.Errorf("at %s:%d, want the template and line being executed, templates/hostile.yaml:%d", re.File, re.Line, tt.line)
			}
			if _, err := p.Render(context.Background(), healthy, input); err != nil {
				t.Fatalf("render after the overrun: %v", err)
			}
		})
	}
}

// TestStuckWorkerIsKilled: a worker that never answers (stuck inside one
// call, where no budget is checked) is killed past the deadline and its
// grace, and the caller gets ReasonTimeout.
func TestStuckWorkerIsKilled(t *testing.T) {
	p, err := sandbox.New(sandbox.Options{Limits: sandbox.Limits{Timeout: 100 * time.Millisecond}, Command: []string{"/bin/sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Render(context.Background(), load(t, "cm", configMap), input)
	var re *templates.RenderError
	if !errors.As(err, &re) || re.Reason != templates.ReasonTimeout {
		t.Fatalf("err = %#v, want a RenderError with reason %s", err, templates.ReasonTimeout)
	}
}

// TestCrashIsExplained: a worker that dies with the runtime's out-of-memory
// or stack-overflow error gives a RenderError with ReasonTooLarge; the
// message holds no more of its output than the fatal error line.
func TestCrashIsExplained(t *testing.T) {
	b := load(t, "cm", configMap)
	tests := []struct {
		name, stderr, reason, want string
	}{
		{"out of memory", "fatal error: runtime: out of memory", templates.ReasonTooLarge, "more than 512 MiB of memory"},
		{"stack", "runtime: goroutine stack exceeds 67108864-byte limit\nfatal error: stack overflow", templates.ReasonTooLarge, "nested too deeply"},
		{"other", "secret-value\nfatal error: concurrent map writes", "", "render worker failed: concurrent map writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sandbox.New(sandbox.Options{Command: []string{"/bin/sh", "-c", "printf '" + strings.ReplaceAll(tt.stderr, "\n", `\n`) + "' >&2; exit 2"}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			_, err = p.Render(context.Background(), b, input)
			var re *templates.RenderError
			if !errors.As(err, &re) || re.Reason != tt.reason || !strings.Contains(re.Msg, tt.want) {
				t.Fatalf("err = %#v, want reason %q and %q", err, tt.reason, tt.want)
			}
			if strings.Contains(re.Error(), "secret-value") {
				t.Errorf("message %q repeats the worker's output", re.Error())
			}
		})
	}
}

// TestContextEnds: a caller that gives up gets its context's error, not a
// RenderError (nothing is wrong with the bundle).
func TestContextEnds(t *testing.T) {
	p, err := sandbox.New(sandbox.Options{Limits: sandbox.Limits{Timeout: time.Minute}, Command: []string{"/bin/sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = p.Render(ctx, load(t, "cm", configMap), input)
	var re *templates.RenderError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &re) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

// TestWorkerForgetsBundles: a worker keeps a bounded number of parsed
// bundles; a bundle it forgot is sent again and renders the same.
func TestWorkerForgetsBundles(t *testing.T) {
	p := newPool(t, sandbox.Limits{}, 1)
	var first *templates.Bundle
	for i := range 40 {
		files := map[string]string{"templates/a.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n", i)}
		b := load(t, fmt.Sprintf("b%d", i), files)
		if i == 0 {
			first = b
		}
		if _, err := p.Render(context.Background(), b, input); err != nil {
			t.Fatalf("render bundle %d: %v", i, err)
		}
	}
	got, err := p.Render(context.Background(), first, input)
	if err != nil || len(got) != 1 || got[0].GetName() != "cm-0" {
		t.Fatalf("render of the first bundle again: %v, %v", got, err)
	}
}

// TestWorkerThatDoesNotReadIsKilled: a worker that never reads its
// request (wedged, or not a worker at all) is killed at the render's
// deadline and its grace even when the request is larger than the pipe's
// buffer, where writing it would otherwise block the caller for ever. The
// error is not a RenderError: a worker reads its request before it
// renders, so one that does not is the machine's doing (too busy to run
// it), never the bundle's, and the caller tries again rather than stall
// the parent.
func TestWorkerThatDoesNotReadIsKilled(t *testing.T) {
	p, err := sandbox.New(sandbox.Options{Limits: sandbox.Limits{Timeout: 100 * time.Millisecond}, Command: []string{"/bin/sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	large := map[string]string{"templates/cm.yaml": configMap["templates/cm.yaml"], "files/big.txt": strings.Repeat("x", 1<<20)}
	done := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), load(t, "big", large), input)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Render still writes to a worker that does not read, a minute on")
	}
	var re *templates.RenderError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "did not take the request") {
		t.Fatalf("err = %#v, want an error that is no RenderError, saying the worker did not take the request", err)
	}
}
