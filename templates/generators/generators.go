package generators

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
)

// Functions are the generators a Memo keeps: sprig's functions whose
// result is random.
var Functions = []string{
	"randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4", "shuffle",
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey", "htpasswd", "bcrypt", "encryptAES",
}

// IsFunction reports whether name is one of Functions.
func IsFunction(name string) bool { return slices.Contains(Functions, name) }

// MaxValues bounds the values one set keeps: past it, a render that
// would generate another fails (a template generating in an unbounded
// loop would otherwise grow the Secret without end).
const MaxValues = 512

// Memo answers the generator calls of one render. Its methods may be
// called from several goroutines.
type Memo struct {
	kept map[string]string // key → the value's JSON
	key  []byte            // the set's key (Key)

	mu     sync.Mutex
	made   map[string]string
	counts map[string]int
	moved  int // values of made that kept holds under a LegacyKey
}

// NewMemo returns a Memo answering from kept (Key → the value's JSON)
// with setKey, the set's key (see Key). A value kept under the call's
// LegacyKey (a store written before keys were keyed) answers the call
// too, and is recorded again under its Key (Made): the caller moves it.
func NewMemo(kept map[string]string, setKey []byte) *Memo {
	return &Memo{kept: kept, key: setKey, made: map[string]string{}, counts: map[string]int{}}
}

// Call calls fn, the generator name bound for this render, with args, as
// unit's next such call: the value kept for it, or a new one, which is
// recorded (Made).
func (m *Memo) Call(unit, name string, fn any, args []any) (any, error) {
	f := reflect.ValueOf(fn)
	if f.Kind() != reflect.Func || f.Type().NumOut() < 1 {
		return nil, fmt.Errorf("%s: not a function", name)
	}
	in, err := arguments(name, f.Type(), args)
	if err != nil {
		return nil, err
	}
	argDigest, err := digestArgs(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.mu.Lock()
	call := unit + "\x00" + name + "\x00" + argDigest
	n := m.counts[call]
	m.counts[call] = n + 1
	key := Key(m.key, unit, name, argDigest, n)
	raw, kept := m.kept[key]
	if !kept {
		raw, kept = m.made[key]
	}
	legacy := false
	if !kept {
		raw, kept = m.kept[LegacyKey(unit, name, argDigest, n)]
		legacy = kept
	}
	m.mu.Unlock()
	out := f.Type().Out(0)
	if kept {
		v := reflect.New(out)
		if err := json.Unmarshal([]byte(raw), v.Interface()); err == nil {
			if legacy {
				// Kept under its legacy key: recorded under its Key,
				// the same value (no bound: it replaces the old one).
				m.mu.Lock()
				if _, ok := m.made[key]; !ok {
					m.made[key] = raw
					m.moved++
				}
				m.mu.Unlock()
			}
			return v.Elem().Interface(), nil
		}
		// A value kept in another shape (sprig's changed): made anew.
	}
	res := f.Call(in)
	if len(res) == 2 && !res[1].IsNil() {
		return nil, res[1].Interface().(error)
	}
	data, err := json.Marshal(res[0].Interface())
	if err != nil {
		return nil, fmt.Errorf("%s: its value cannot be kept: %w", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.kept)+len(m.made)-m.moved >= MaxValues {
		return nil, fmt.Errorf("%s: a set keeps at most %d generated values", name, MaxValues)
	}
	m.made[key] = string(data)
	return res[0].Interface(), nil
}

// Called reports whether the render called a generator, a value kept
// or a new one.
func (m *Memo) Called() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.counts) > 0
}

// Made returns the values this render generated, by Key.
func (m *Memo) Made() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.made)
}

// Key names one call: unit's n-th call (from 0) of function name with
// arguments of digest args, as an HMAC-SHA256 keyed with setKey, the
// set's own secret key (reconcile/valuestore derives it from the
// controller's key; no reader of a store can). Whoever reads the keys of
// a store therefore cannot test a guess of an argument (a password given
// to htpasswd, a key given to encryptAES) offline: without setKey, the
// digest of a guess is not computable. 64 hexadecimal digits.
func Key(setKey []byte, unit, name, args string, n int) string {
	mac := hmac.New(sha256.New, setKey)
	mac.Write([]byte(call(unit, name, args, n)))
	return hex.EncodeToString(mac.Sum(nil))
}

// LegacyKey is the key a call had before keys were keyed (stores written
// by stencil before issue 37): a bare SHA-256 of the call, 40
// hexadecimal digits. It is only ever read, to move a value kept under
// it to its Key (see NewMemo).
func LegacyKey(unit, name, args string, n int) string {
	sum := sha256.Sum256([]byte(call(unit, name, args, n)))
	return hex.EncodeToString(sum[:20])
}

// IsLegacyKey reports whether k has the shape of a LegacyKey.
func IsLegacyKey(k string) bool {
	if len(k) != 40 {
		return false
	}
	_, err := hex.DecodeString(k)
	return err == nil
}

// call is what Key and LegacyKey digest.
func call(unit, name, args string, n int) string {
	return unit + "\x00" + name + "\x00" + args + "\x00" + strconv.Itoa(n)
}

// arguments converts args to fn's parameters, as text/template would
// (a number of another kind converts).
func arguments(name string, fn reflect.Type, args []any) ([]reflect.Value, error) {
	variadic := fn.IsVariadic()
	want := fn.NumIn()
	if (!variadic && len(args) != want) || (variadic && len(args) < want-1) {
		return nil, fmt.Errorf("wrong number of args for %s: want %d got %d", name, want, len(args))
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		var t reflect.Type
		if variadic && i >= want-1 {
			t = fn.In(want - 1).Elem()
		} else {
			t = fn.In(i)
		}
		v := reflect.ValueOf(a)
		switch {
		case !v.IsValid():
			v = reflect.Zero(t)
		case v.Type().AssignableTo(t):
		case v.Type().ConvertibleTo(t) && sameFamily(v.Kind(), t.Kind()):
			v = v.Convert(t)
		default:
			return nil, fmt.Errorf("%s: argument %d is of the wrong type", name, i+1)
		}
		in[i] = v
	}
	return in, nil
}

// sameFamily reports whether a value of kind a converts to kind b as a
// number does (no number becomes a string).
func sameFamily(a, b reflect.Kind) bool {
	num := func(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Float64 }
	return num(a) == num(b)
}

// digestArgs is a digest of a call's arguments.
func digestArgs(in []reflect.Value) (string, error) {
	vals := make([]any, len(in))
	for i, v := range in {
		vals[i] = v.Interface()
	}
	data, err := json.Marshal(vals)
	if err != nil {
		return "", fmt.Errorf("an argument cannot be kept: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}
