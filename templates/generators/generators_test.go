package generators_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/templates/generators"
)

// setKey is a set's key, as reconcile/valuestore derives one.
var setKey = []byte("0123456789abcdef0123456789abcdef")

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
	m := generators.NewMemo(nil, setKey)
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

	again := generators.NewMemo(made, setKey)
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
	if _, err := generators.NewMemo(reshaped, setKey).Call("templates/a.yaml", "genX", gen, []any{3}); err != nil || counter != 5 {
		t.Errorf("a value kept in another shape: %v, %d calls; want it made anew", err, counter)
	}

	full := map[string]string{}
	for i := range generators.MaxValues {
		full[strings.Repeat("k", i+1)] = `{}`
	}
	if _, err := generators.NewMemo(full, setKey).Call("templates/a.yaml", "genX", gen, []any{9}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("past MaxValues: %v, want a refusal", err)
	}
	if _, err := m.Call("templates/a.yaml", "genX", gen, []any{"three"}); err == nil {
		t.Errorf("a string for an int was taken")
	}
}

// TestKeysAreKeyedDigests (issue 37 item 2): a store's key cannot be
// recomputed from a guess of the call's arguments without the set's key.
// A reader of the store who guesses the password given to htpasswd
// computes the bare SHA-256 digest of the call (what keys were before)
// and finds no key; only with the set's key is the key found. Another
// set's key gives other keys.
func TestKeysAreKeyedDigests(t *testing.T) {
	const unit, password = "templates/auth.yaml", "hunter2"
	m := generators.NewMemo(nil, setKey)
	htpasswd := func(user, pass string) string { return user + ":" + strings.Repeat("x", len(pass)) }
	if _, err := m.Call(unit, "htpasswd", htpasswd, []any{"admin", password}); err != nil {
		t.Fatal(err)
	}
	made := m.Made()
	if len(made) != 1 {
		t.Fatalf("made %d values, want 1", len(made))
	}
	args := argsDigest(t, "admin", password)
	for k := range made {
		if len(k) != 64 || generators.IsLegacyKey(k) {
			t.Errorf("key %q: want 64 hexadecimal digits of an HMAC", k)
		}
		if k == generators.LegacyKey(unit, "htpasswd", args, 0) {
			t.Errorf("the key is the bare SHA-256 of the call: a guess of the password is testable offline")
		}
		for _, guess := range []string{"", "hunter1", password} {
			g := argsDigest(t, "admin", guess)
			if k == generators.Key(nil, unit, "htpasswd", g, 0) || k == generators.Key([]byte("guessed"), unit, "htpasswd", g, 0) {
				t.Errorf("a guess %q with no set key recomputes the key", guess)
			}
		}
		if k != generators.Key(setKey, unit, "htpasswd", args, 0) {
			t.Errorf("the key is not Key(setKey, call)")
		}
		if k == generators.Key([]byte("another set's key, 32 bytes long"), unit, "htpasswd", args, 0) {
			t.Errorf("another set's key gives the same key")
		}
	}
}

// TestLegacyKeysMove (issue 37 item 2): a value kept under its legacy
// key (a bare SHA-256 of the call, as stores were written before keys
// were keyed) answers the call, is not made anew, and is recorded under
// its keyed digest, once; it does not count twice against MaxValues.
func TestLegacyKeysMove(t *testing.T) {
	calls := 0
	gen := func(n int) string { calls++; return strings.Repeat("v", n) }
	legacy := generators.LegacyKey("templates/a.yaml", "randAlphaNum", argsDigest(t, 16), 0)
	if !generators.IsLegacyKey(legacy) {
		t.Fatalf("LegacyKey %q is not IsLegacyKey", legacy)
	}
	kept := map[string]string{legacy: `"the-old-password"`}
	m := generators.NewMemo(kept, setKey)
	v, err := m.Call("templates/a.yaml", "randAlphaNum", gen, []any{16})
	if err != nil || v != "the-old-password" || calls != 0 {
		t.Fatalf("a legacy value: %v %v, %d calls; want the kept value, no call", v, err, calls)
	}
	if _, err := m.Call("templates/a.yaml", "randAlphaNum", gen, []any{16}); err != nil || calls != 1 {
		t.Fatalf("the second such call: %v, %d calls; want a new value (another rank)", err, calls)
	}
	made := m.Made()
	want := generators.Key(setKey, "templates/a.yaml", "randAlphaNum", argsDigest(t, 16), 0)
	if made[want] != `"the-old-password"` || len(made) != 2 {
		t.Errorf("made %v: want the legacy value under %s, and the new one", made, want)
	}

	full := map[string]string{legacy: `"old"`}
	for i := range generators.MaxValues - 1 {
		full[strings.Repeat("k", i+1)] = `{}`
	}
	if _, err := generators.NewMemo(full, setKey).Call("templates/a.yaml", "randAlphaNum", gen, []any{16}); err != nil {
		t.Errorf("moving a legacy value of a full set: %v, want it moved", err)
	}
}

// argsDigest is the digest Memo takes of a call's arguments.
func argsDigest(t *testing.T, args ...any) string {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}
