package budget_test

import (
	"context"
	"fmt"
	"io"
	"text/template"

	"github.com/stencil-dev/stencil/templates/budget"
)

// A set instrumented and bound to one render's budget: the range stops
// at its iteration past the limit, and the error names the line.
func Example() {
	sources := map[string]string{"templates/x.yaml": "a: 1\n{{ range 5 }}x{{ end }}"}
	t := template.Must(template.New("templates/x.yaml").Parse(sources["templates/x.yaml"]))
	set := budget.NewSet(t)
	if err := set.InstrumentFiles(sources); err != nil {
		panic(err)
	}
	limits := budget.Limits{MaxRangeIterations: 3}.WithDefaults()
	b := budget.New(context.Background(), limits, nil)
	f := template.FuncMap{}
	for i, p := range set.Points() {
		f[budget.PointName(i)] = func() *struct{} { return b.Point(set, p) }
	}
	t.Funcs(f)
	err := b.Run(io.Discard, nil, set, t, nil)
	fmt.Println(budget.StopError("templates/x.yaml", err, limits))
	// Output: templates/x.yaml:2: render stopped: more than 3 range iterations
}

// A name reserved for the budget's points is refused where it is written.
func ExampleSet_InstrumentFiles() {
	sources := map[string]string{"templates/x.yaml": "a: 1\n{{ if true }}{{ _stencil0 }}{{ end }}"}
	t := template.Must(template.New("templates/x.yaml").Funcs(template.FuncMap{"_stencil0": func() string { return "" }}).Parse(sources["templates/x.yaml"]))
	fmt.Println(budget.NewSet(t).InstrumentFiles(sources))
	// Output: templates/x.yaml:2: _stencil0 is reserved for stencil's execution budget
}

// Progress tells another goroutine where the render is.
func ExampleProgress_Where() {
	sources := map[string]string{"templates/x.yaml": "a: 1\n\n{{ range 2 }}x{{ end }}"}
	t := template.Must(template.New("templates/x.yaml").Parse(sources["templates/x.yaml"]))
	set := budget.NewSet(t)
	if err := set.InstrumentFiles(sources); err != nil {
		panic(err)
	}
	p := new(budget.Progress)
	b := budget.New(context.Background(), budget.DefaultLimits(), p)
	f := template.FuncMap{}
	for i, pt := range set.Points() {
		f[budget.PointName(i)] = func() *struct{} { return b.Point(set, pt) }
	}
	t.Funcs(f)
	if err := b.Run(io.Discard, nil, set, t, nil); err != nil {
		panic(err)
	}
	fmt.Println(p.Where())
	p.SetFile("kustomization.yaml")
	fmt.Println(p.Where())
	// Output:
	// templates/x.yaml 3
	// kustomization.yaml 0
}
