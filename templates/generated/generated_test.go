package generated_test

import (
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/templates/generated"
)

// TestMemo: the n-th call of a function with the same arguments in the
// same unit answers the value kept for it, of the function's own type;
// another unit, other arguments or another rank make a new value; a
// value kept in another shape is made anew; MaxValues bounds a set.
func TestMemo(t *testing.T) {
	counter := 0
	gen := func(n int) (map[string]any, error) {
		counter++
		return map[string]any{"n": n, "call": counter}, nil
	}
	m := generated.NewMemo(nil)
	first, err := m.Call("templates/a.yaml", "genX", gen, []any{int64(3)}) // a template's number converts
	if err != nil {
		t.Fatal(err)
	}
	second, _ := m.Call("templates/a.yaml", "genX", gen, []any{3})
	other, _ := m.Call("templates/b.yaml", "genX", gen, []any{3})
	made := m.Made()
	if len(made) != 3 || counter != 3 {
		t.Fatalf("made %d values in %d calls, want 3 (rank, unit)", len(made), counter)
	}

	again := generated.NewMemo(made)
	a1, _ := again.Call("templates/a.yaml", "genX", gen, []any{3})
	a2, _ := again.Call("templates/a.yaml", "genX", gen, []any{3})
	b1, _ := again.Call("templates/b.yaml", "genX", gen, []any{3})
	if counter != 3 || len(again.Made()) != 0 {
		t.Errorf("a memo given every value called the generator %d more times", counter-3)
	}
	for i, pair := range [][2]any{{first, a1}, {second, a2}, {other, b1}} {
		got, want := pair[1].(map[string]any)["call"], pair[0].(map[string]any)["call"]
		if got != float64(want.(int)) && got != want {
			t.Errorf("call %d: %v, want the kept %v", i, got, want)
		}
	}
	if _, err := again.Call("templates/a.yaml", "genX", gen, []any{4}); err != nil || counter != 4 {
		t.Errorf("other arguments: %v, %d calls; want a new value", err, counter)
	}

	reshaped := map[string]string{}
	for k := range made {
		reshaped[k] = `"a string, not a map"`
	}
	if _, err := generated.NewMemo(reshaped).Call("templates/a.yaml", "genX", gen, []any{3}); err != nil || counter != 5 {
		t.Errorf("a value kept in another shape: %v, %d calls; want it made anew", err, counter)
	}

	full := map[string]string{}
	for i := range generated.MaxValues {
		full[strings.Repeat("k", i+1)] = `{}`
	}
	if _, err := generated.NewMemo(full).Call("templates/a.yaml", "genX", gen, []any{9}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("past MaxValues: %v, want a refusal", err)
	}
	if _, err := m.Call("templates/a.yaml", "genX", gen, []any{"three"}); err == nil {
		t.Errorf("a string for an int was taken")
	}
}
