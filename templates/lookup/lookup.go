package lookup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Key names one lookup: a single object, or a list when Name is "".
type Key struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
}

// String is the key as one text: "apiVersion kind namespace name".
func (k Key) String() string {
	return k.APIVersion + " " + k.Kind + " " + k.Namespace + " " + k.Name
}

// List reports whether k asks for a list.
func (k Key) List() bool { return k.Name == "" }

// ParseKey is the Key of String's text.
func ParseKey(s string) (Key, error) {
	parts := strings.Split(s, " ")
	if len(parts) != 4 {
		return Key{}, fmt.Errorf("lookup key %q: want \"apiVersion kind namespace name\"", s)
	}
	return Key{APIVersion: parts[0], Kind: parts[1], Namespace: parts[2], Name: parts[3]}, nil
}

// Table is what a caller gives a render: the answer to each lookup it
// could make, by Key.String(). A key absent is an empty answer (and, for
// the controller, one to fetch and render again with). A single object's
// answer is the object; a list's is the list object (kind List, items).
type Table map[string]map[string]any

// Read is one lookup a render made and the hash of its answer.
type Read struct {
	Key Key `json:"key"`
	// Hash is ValueHash of the answer, "" when it was empty.
	Hash string `json:"hash,omitempty"`
	// Given: the answer was in the Table (false: the caller has not
	// fetched it yet).
	Given bool `json:"given,omitempty"`
}

// Log answers a render's lookups from a Table and records them. One Log
// per render; its methods may be called from several goroutines.
type Log struct {
	table Table
	mu    sync.Mutex
	reads map[string]Read
}

// NewLog returns a Log answering from table (nil: every answer empty).
func NewLog(table Table) *Log {
	return &Log{table: table, reads: map[string]Read{}}
}

// Func is the template function lookup.
func (l *Log) Func(apiVersion, kind, namespace, name string) (map[string]any, error) {
	switch {
	case apiVersion == "" || kind == "":
		return nil, fmt.Errorf("lookup: the apiVersion and the kind are required")
	case strings.Contains(apiVersion+kind+namespace+name, " "):
		return nil, fmt.Errorf("lookup: no argument may hold a space")
	}
	k := Key{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}
	obj, given := l.table[k.String()]
	l.mu.Lock()
	l.reads[k.String()] = Read{Key: k, Hash: ValueHash(obj), Given: given}
	l.mu.Unlock()
	if len(obj) == 0 {
		if k.List() {
			return map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}, nil
		}
		return map[string]any{}, nil
	}
	return DeepCopy(obj).(map[string]any), nil
}

// Reads returns what the render looked up, sorted by key.
func (l *Log) Reads() []Read {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Read, 0, len(l.reads))
	for _, r := range l.reads {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Read) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	return out
}

// Changed returns the reads whose answer in table differs from the one
// the render got (a key absent from table answers empty).
func Changed(reads []Read, table Table) []Read {
	var out []Read
	for _, r := range reads {
		if ValueHash(table[r.Key.String()]) != r.Hash {
			out = append(out, r)
		}
	}
	return out
}

// ValueHash is a hash of an answer: "" for none (nil, or an empty map).
func ValueHash(obj map[string]any) string {
	if len(obj) == 0 {
		return ""
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return "unencodable"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// DeepCopy copies a value decoded from JSON (maps, lists and scalars).
func DeepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = DeepCopy(e)
		}
		return out
	}
	return v
}
