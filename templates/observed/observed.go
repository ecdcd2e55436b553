package observed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/generators"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// AnnotationID is the annotation a template sets on an object to give it
// the id that observed, AnnotationWaitFor and a Bundle's outputs address
// it by; without it, the id is Kind/name. (Package outputs has the same
// rule.)
const AnnotationID = "stencil.dev/id"

// AnnotationWaitFor, on a rendered object, holds the object back until
// every value it names is observed: a comma-separated list of "ID PATH"
// (a member's id, a space, a dotted field path), such as
// "Service/web spec.clusterIP". A held-back object is not in the render's
// objects; it is listed in Observations.Held, and the controller neither
// applies nor prunes it.
const AnnotationWaitFor = "stencil.dev/wait-for"

// MemberID is the id a member is addressed by: its AnnotationID, else
// Kind/name.
func MemberID(obj *unstructured.Unstructured) string {
	if id := obj.GetAnnotations()[AnnotationID]; id != "" {
		return id
	}
	return obj.GetKind() + "/" + obj.GetName()
}

// Observations is what a render read of Input.Observed, and what it held
// back: the controller compares the reads with its cache to decide
// whether to render again.
type Observations struct {
	// Reads are the values the render read (with observed, or for an
	// AnnotationWaitFor), each once, sorted by ID and path.
	Reads []ObservedRead `json:"reads,omitempty"`
	// Held are the objects held back, in render order.
	Held []HeldObject `json:"held,omitempty"`
	// Lookups are the render's lookups with a hash of each answer, sorted
	// (package templates/lookup): the caller fetches those it had not
	// given and renders again while an answer changed.
	Lookups []lookup.Read `json:"lookups,omitempty"`
	// Generated are the values the render's generators made anew (package
	// templates/generators), by key: the caller keeps them for every later
	// render of the set (Input.Generated).
	Generated map[string]string `json:"generated,omitempty"`
}

// ObservedRead is one value a render read.
type ObservedRead struct {
	// ID is the member's id.
	ID string `json:"id"`
	// Path is the field path read, one key (or list index) each.
	Path []string `json:"path"`
	// Hash is ValueHash of the value read ("" for a value not observed).
	Hash string `json:"hash,omitempty"`
}

// HeldObject is a rendered object held back by its AnnotationWaitFor.
type HeldObject struct {
	// APIVersion and Kind are the object's, as rendered.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is as rendered: "" places a namespaced kind in the
	// parent's namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's metadata.name.
	Name string `json:"name"`
	// ID is its id (MemberID).
	ID string `json:"id"`
	// WaitsFor are the references ("ID PATH") not observed yet.
	WaitsFor []string `json:"waitsFor"`
}

// String names the held object as Kind/name.
func (h HeldObject) String() string { return h.Kind + "/" + h.Name }

// String names the read as ID PATH.
func (r ObservedRead) String() string { return r.ID + " " + strings.Join(r.Path, ".") }

// Changed reports whether the value the read names is another in
// observed than the one read.
func (r ObservedRead) Changed(observed map[string]map[string]any) bool {
	return ValueHash(Lookup(observed, r.ID, r.Path)) != r.Hash
}

// ValueHash is the hash of an observed value as a read records it: ""
// for nil (not observed), else the SHA-256 of its JSON.
func ValueHash(v any) string {
	if v == nil {
		return ""
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "unencodable"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// Lookup returns the value at path (dotted; a number indexes a list) of
// member id in observed, nil when either is absent.
func Lookup(observed map[string]map[string]any, id string, path []string) any {
	obj, ok := observed[id]
	if !ok || obj == nil {
		return nil
	}
	var cur any = obj
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
		if cur == nil {
			return nil
		}
	}
	return cur
}

// Log is one render's reads of its Input.Observed, and its lookups and
// generators' calls.
type Log struct {
	observed map[string]map[string]any
	reads    map[[2]string]string // (id, path's keys joined by NUL) → hash
	// lookups answers lookup from Input.Lookups; memo the generators from
	// Input.Generated.
	lookups *lookup.Log
	memo    *generators.Memo
}

// NewLog returns the log of a render given observed (Input.Observed),
// lookups (Input.Lookups) and the values earlier renders generated
// (Input.Generated, keyed with key: Input.GeneratedKey).
func NewLog(observed map[string]map[string]any, lookups lookup.Table, generated map[string]string, key []byte) *Log {
	return &Log{observed: observed, reads: map[[2]string]string{},
		lookups: lookup.NewLog(lookups), memo: generators.NewMemo(generated, key)}
}

// Lookups returns the log of the render's lookups, which answers the
// template function lookup.
func (l *Log) Lookups() *lookup.Log { return l.lookups }

// Memo returns the render's generators' memo.
func (l *Log) Memo() *generators.Memo { return l.memo }

// read returns a copy of the value at path of member id, and records it.
func (l *Log) read(id string, path []string) any {
	v := Lookup(l.observed, id, path)
	l.reads[[2]string{id, strings.Join(path, "\x00")}] = ValueHash(v)
	if v == nil {
		return nil
	}
	return lookup.DeepCopy(v) // a template's set must not change what a later read sees
}

// Func is the template function observed: observed ID PATH
// returns the value at the dotted PATH of member ID as last observed, or
// nil when the member or the field is not observed yet; with more than
// one path argument, each is one key (for keys holding dots).
func (l *Log) Func(id string, path ...string) (any, error) {
	switch {
	case id == "":
		return nil, fmt.Errorf("observed: the member id is empty")
	case len(path) == 0:
		return nil, fmt.Errorf("observed %q: give the field path to read, such as \"spec.clusterIP\" (a whole object would change with every status write)", id)
	case len(path) == 1:
		path = strings.Split(path[0], ".")
	}
	for _, p := range path {
		if p == "" {
			return nil, fmt.Errorf("observed %q: the field path has an empty key", id)
		}
	}
	return l.read(id, path), nil
}

// Consulted reports whether the render read an observed value, looked
// up an object or called a generator: whether what it printed may show
// any of them (templates' data is shared, so any template's reads count).
func (l *Log) Consulted() bool {
	return len(l.reads) > 0 || len(l.lookups.Reads()) > 0 || l.memo.Called()
}

// Observations returns the recorded reads, sorted, the lookups and
// generated values, and held.
func (l *Log) Observations(held []HeldObject) Observations {
	out := Observations{Held: held}
	if reads := l.lookups.Reads(); len(reads) > 0 {
		out.Lookups = reads
	}
	if made := l.memo.Made(); len(made) > 0 {
		out.Generated = made
	}
	for k, h := range l.reads {
		out.Reads = append(out.Reads, ObservedRead{ID: k[0], Path: strings.Split(k[1], "\x00"), Hash: h})
	}
	slices.SortFunc(out.Reads, func(a, b ObservedRead) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return slices.Compare(a.Path, b.Path)
	})
	return out
}

// WaitRef is one reference of an AnnotationWaitFor: a member's id and a
// dotted path.
type WaitRef struct {
	// ID is the member's id (MemberID); Path the dotted field path read.
	ID, Path string
}

// String names the reference as ID PATH.
func (r WaitRef) String() string { return r.ID + " " + r.Path }

// ParseWaitFor parses an AnnotationWaitFor value.
func ParseWaitFor(value string) ([]WaitRef, error) {
	var refs []WaitRef
	for _, item := range strings.Split(value, ",") {
		fields := strings.Fields(item)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || strings.Contains(fields[1], "..") || strings.HasPrefix(fields[1], ".") || strings.HasSuffix(fields[1], ".") {
			return nil, fmt.Errorf("each reference is \"ID PATH\" (such as \"Service/web spec.clusterIP\"), comma-separated")
		}
		refs = append(refs, WaitRef{ID: fields[0], Path: fields[1]})
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("no reference: give \"ID PATH\", such as \"Service/web spec.clusterIP\"")
	}
	return refs, nil
}

// HoldBack removes from objs those whose AnnotationWaitFor names a value
// not observed, recording every value it reads, and returns them.
func (l *Log) HoldBack(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, []HeldObject, error) {
	kept := objs[:0:0]
	var held []HeldObject
	for _, o := range objs {
		value, ok := o.GetAnnotations()[AnnotationWaitFor]
		if !ok {
			kept = append(kept, o)
			continue
		}
		refs, err := ParseWaitFor(value)
		if err != nil {
			return nil, nil, &fault.RenderError{Msg: fmt.Sprintf("%s %s: annotation %s: %v", o.GetKind(), o.GetName(), AnnotationWaitFor, err)}
		}
		var waits []string
		for _, r := range refs {
			if l.read(r.ID, strings.Split(r.Path, ".")) == nil {
				waits = append(waits, r.String())
			}
		}
		if len(waits) == 0 {
			kept = append(kept, o)
			continue
		}
		held = append(held, HeldObject{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), ID: MemberID(o), WaitsFor: waits})
	}
	return kept, held, nil
}
