package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/templates"
)

// BenchmarkRenderInProcess renders templates/testdata/webapp in this
// process: the floor the sandbox is compared with.
func BenchmarkRenderInProcess(b *testing.B) {
	bundle, in := webapp(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := templates.Render(bundle, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderSandbox renders the same bundle as the controller does: in
// a warm worker process that already holds the parsed bundle.
func BenchmarkRenderSandbox(b *testing.B) {
	bundle, in := webapp(b)
	p, err := sandbox.New(sandbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if _, err := p.Render(ctx, bundle, in); err != nil { // start the worker
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Render(ctx, bundle, in); err != nil {
			b.Fatal(err)
		}
	}
}

func webapp(b *testing.B) (*templates.Bundle, templates.Input) {
	b.Helper()
	dir := filepath.Join("..", "..", "templates", "testdata", "webapp")
	bundle, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "webapp"})
	if err != nil {
		b.Fatal(err)
	}
	return bundle, templates.Input{Composition: templates.CompositionInfo{Name: "shop", Namespace: "team-a", UID: "uid-1"}}
}
