package valuestore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/generators"
)

// Source says where Read finds the stores of a set, and as whom.
type Source struct {
	// SetID is the set's ApplySet id.
	SetID string
	// ParentNamespace is the parent's namespace ("" for a cluster-scoped
	// parent).
	ParentNamespace string
	// Namespaces are those the set's stores may be in: the parent's
	// (where every store was before issue 37) and those its recorded
	// inventory names.
	Namespaces []string
	// Tenant reads the stores of Namespaces: the controller's member
	// cache, else live as the parent's writer (its ServiceAccount).
	Tenant client.Reader
	// ControllerNamespace is the controller's own namespace, where the
	// store of what no namespace may hold is; "" reads none.
	ControllerNamespace string
	// Controller reads the store of ControllerNamespace: the member
	// cache, else live as the controller.
	Controller client.Reader
	// Key is the controller's key; nil when it is not known (`stencil
	// render` as a user who may not read it): no store's key is checked,
	// and the values kept under keyed digests answer no call.
	Key *Key
	// Record is the set's record of its members: a store of Namespaces
	// is read only when it names it (Values).
	Record *applyset.Record
	// SkipForbidden skips a store the reader may not read (`stencil
	// render`, reading as the user), instead of failing.
	SkipForbidden bool
}

// held is a store as Read found it.
type held struct {
	uid    types.UID
	values map[string]string
}

// Stores are the stores of one set for one pass: each store of the set,
// as Read found it, and, once Place has placed the values of the pass's
// render, what each is to hold. There is one store per namespace the
// set's values end up in (named Name, written as the parent's writer)
// and one in the controller's namespace (named ControllerName, written
// as the controller) for the values no namespace may hold.
type Stores struct {
	src  Source
	held map[string]held              // destination (a namespace, or Controller) → as read
	want map[string]map[string]string // destination → its values, after Place
}

// Read reads the stores of a set, only those that are the set's: of a
// namespace, a member its record names (Values); of the controller's
// namespace, one labelled the set's (ControllerValues). A store written with another key than src.Key is a *KeyError;
// of a store with no key recorded (written before keys were keyed) only
// the legacy keys are read.
func Read(ctx context.Context, src Source) (*Stores, error) {
	s := &Stores{src: src, held: map[string]held{}}
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(src.Namespaces))) {
		if err := s.read(ctx, src.Tenant, ns, Name(src.SetID), ns); err != nil {
			return nil, err
		}
	}
	if src.ControllerNamespace != "" && src.Controller != nil {
		if err := s.read(ctx, src.Controller, src.ControllerNamespace, ControllerName(src.SetID), Controller); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// read reads the store name of ns through r, as destination dest.
func (s *Stores) read(ctx context.Context, r client.Reader, ns, name, dest string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(SecretGVK)
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live)
	switch {
	case apierrors.IsNotFound(err), s.src.SkipForbidden && apierrors.IsForbidden(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the store of generated values %s/%s: %w", ns, name, err)
	}
	values := Values(live, s.src.SetID, s.src.Record)
	if dest == Controller {
		values = ControllerValues(live, s.src.SetID)
	}
	if values == nil {
		return nil // not this set's
	}
	id := live.GetAnnotations()[AnnotationKey]
	if id == "" {
		maps.DeleteFunc(values, func(k, _ string) bool { return !generators.IsLegacyKey(k) })
	} else if s.src.Key != nil && id != s.src.Key.ID() && slices.ContainsFunc(slices.Collect(maps.Keys(values)), func(k string) bool { return !generators.IsLegacyKey(k) }) {
		return &KeyError{Store: ns + "/" + name, Want: id, Have: s.src.Key.ID(), Namespace: s.src.ControllerNamespace}
	}
	s.held[dest] = held{uid: live.GetUID(), values: values}
	return nil
}

// Values are every value the stores hold, by key: what the render is
// given (templates.Input.Generated).
func (s *Stores) Values() map[string]string {
	out := map[string]string{}
	for _, dest := range slices.Sorted(maps.Keys(s.held)) {
		for k, v := range s.held[dest].values {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// SetKey is the set's key (templates.Input.GeneratedKey), nil when
// Source.Key is.
func (s *Stores) SetKey() []byte {
	if s.src.Key == nil {
		return nil
	}
	return s.src.Key.ForSet(s.src.SetID)
}

// keyID is the ID the stores record, "" when the key is not known.
func (s *Stores) keyID() string {
	if s.src.Key == nil {
		return ""
	}
	return s.src.Key.ID()
}

// Place decides where each of values (every value the render of plan p
// keeps: templates.Observations.Generated) is kept (see package function
// Place) and adds the stores of the namespaces to p: first, labelled as
// members, and to its inventory. A value kept under a legacy key that
// the render moved to its keyed digest (the same value under another
// key) is dropped; a legacy value no call made this render is kept by
// the controller, under its legacy key, until a call moves it. A render
// that made an object of a store's name is refused.
func (s *Stores) Place(p *plan.Plan, values map[string]string) error {
	for _, o := range p.Objects {
		if o.GroupVersionKind().GroupKind() == SecretGVK.GroupKind() &&
			(o.GetName() == Name(s.src.SetID) || o.GetNamespace() == s.src.ControllerNamespace && o.GetName() == ControllerName(s.src.SetID)) {
			return &templates.RenderError{Msg: fmt.Sprintf("%s is the name of a Secret that keeps the set's generated values; the bundle may not render it", applyset.Ref(o))}
		}
	}
	// Every value a store holds is kept somewhere, whether or not the
	// render was given it (values are only ever added).
	s.want = Place(p.Objects, moved(Merge(values, s.Values())))
	var stores []*unstructured.Unstructured
	for _, ns := range slices.Sorted(maps.Keys(s.want)) {
		if ns == Controller {
			continue
		}
		stores = append(stores, s.object(ns))
		p.Inventory = p.Inventory.Union(applyset.Inventory{GroupKinds: []schema.GroupKind{SecretGVK.GroupKind()}, Namespaces: []string{ns}})
	}
	p.Objects = append(stores, p.Objects...)
	if len(stores) > 0 {
		p.Inventory = p.Inventory.Normalize(s.src.ParentNamespace)
	}
	return nil
}

// moved is values without the legacy keys whose value is kept under a
// keyed digest too: those the render moved.
func moved(values map[string]string) map[string]string {
	keyed := map[string]bool{}
	for k, v := range values {
		if !generators.IsLegacyKey(k) {
			keyed[v] = true
		}
	}
	out := maps.Clone(values)
	maps.DeleteFunc(out, func(k, v string) bool { return generators.IsLegacyKey(k) && keyed[v] })
	return out
}

// object is the store of destination dest as Place left it, labelled as
// a member of the set.
func (s *Stores) object(dest string) *unstructured.Unstructured {
	name, ns := Name(s.src.SetID), dest
	if dest == Controller {
		name, ns = ControllerName(s.src.SetID), s.src.ControllerNamespace
	}
	o := Object(name, ns, s.keyID(), s.want[dest])
	o.SetLabels(map[string]string{applyset.LabelPartOf: s.src.SetID})
	return o
}

// Controller is the store of the controller's namespace as Place left
// it, nil when it keeps nothing: not one of the plan's objects (the
// parent's writer never writes it), applied by Apply as the controller.
func (s *Stores) Controller() *unstructured.Unstructured {
	if len(s.want[Controller]) == 0 || s.src.ControllerNamespace == "" {
		return nil
	}
	return s.object(Controller)
}

// Written are the values the stores hold once Apply succeeded.
func (s *Stores) Written() map[string]string {
	out := map[string]string{}
	for _, vs := range s.want {
		maps.Copy(out, vs)
	}
	return out
}
