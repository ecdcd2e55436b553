package trace

import (
	"context"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// settle is how long a burst of events is let end before printing again
// (a rollout changes several objects at once).
const settle = 200 * time.Millisecond

// follow prints the trace again (show) on every change of the parent or of
// a member, until ctx ends or the parent is gone. It watches the parent
// by name and each member kind of t, in each member namespace, by the
// set's part-of label: a kind the caller may not watch is not watched
// (its members' changes show with the next change of another object).
// When the members' kinds change, the watches follow.
func follow(ctx context.Context, r Reader, tg target, t *Trace, show func() (*Trace, error)) error {
	for {
		events, stop := open(ctx, r, tg, t)
		changed, err := wait(ctx, events)
		stop()
		if err != nil || ctx.Err() != nil {
			return nil //nolint:nilerr // the caller ended the watch
		}
		if !changed {
			continue // a watch closed (the server ends them): open again
		}
		next, err := show()
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		t = next
	}
}

// wait waits for an event of any watch, then for the burst to end, and
// reports whether something changed (false: a watch closed).
func wait(ctx context.Context, events <-chan watch.Event) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case _, ok := <-events:
		if !ok {
			return false, nil
		}
	}
	timer := time.NewTimer(settle)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-timer.C:
			return true, nil
		case _, ok := <-events:
			if !ok {
				return true, nil
			}
		}
	}
}

// open starts the watches of t's parent and members and merges their
// events; stop ends them.
func open(ctx context.Context, r Reader, tg target, t *Trace) (<-chan watch.Event, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ws := watches(ctx, r, tg, t)
	out := make(chan watch.Event)
	done := make(chan struct{})
	for _, w := range ws {
		go forward(w, out, done)
	}
	return out, func() {
		close(done)
		for _, w := range ws {
			w.Stop()
		}
		cancel()
	}
}

// watches opens the watch of the parent, by name, and of each member kind
// of t in its namespace, by the set's part-of label; what the caller may
// not watch is left out.
func watches(ctx context.Context, r Reader, tg target, t *Trace) []watch.Interface {
	var ws []watch.Interface
	if m, err := r.Mapper.RESTMapping(tg.gvk.GroupKind(), tg.gvk.Version); err == nil {
		if w, err := r.Dynamic.Resource(m.Resource).Namespace(tg.namespace).Watch(ctx,
			metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", tg.name).String()}); err == nil {
			ws = append(ws, w)
		}
	}
	selector := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{applyset.LabelPartOf: t.ApplySet}).String()}
	for _, k := range memberKinds(t.Parent.Children) {
		m, err := r.Mapper.RESTMapping(k.gk, k.version)
		if err != nil {
			continue
		}
		var w watch.Interface
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			w, err = r.Dynamic.Resource(m.Resource).Namespace(k.namespace).Watch(ctx, selector)
		} else {
			w, err = r.Dynamic.Resource(m.Resource).Watch(ctx, selector)
		}
		if err == nil {
			ws = append(ws, w)
		}
	}
	return ws
}

// forward sends w's events to out until done; a closed watch sends one
// Error event.
func forward(w watch.Interface, out chan<- watch.Event, done <-chan struct{}) {
	for {
		e, ok := <-w.ResultChan()
		if !ok {
			e = watch.Event{Type: watch.Error}
		}
		select {
		case out <- e:
		case <-done:
			return
		}
		if !ok {
			return
		}
	}
}

type kindIn struct {
	gk        schema.GroupKind
	version   string
	namespace string
}

// memberKinds are the kinds, versions and namespaces of the nodes.
func memberKinds(nodes []Node) []kindIn {
	var out []kindIn
	var walk func([]Node)
	walk = func(ns []Node) {
		for _, n := range ns {
			gv, _ := schema.ParseGroupVersion(n.APIVersion)
			k := kindIn{gk: schema.GroupKind{Group: gv.Group, Kind: n.Kind}, version: gv.Version, namespace: n.Namespace}
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
			walk(n.Children)
		}
	}
	walk(nodes)
	return out
}
