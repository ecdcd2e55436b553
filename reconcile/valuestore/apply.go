package valuestore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// write is one write of a store in Apply.
type write struct {
	dest  string
	obj   *unstructured.Unstructured
	final bool // the store as Place left it (else: a step on the way there)
}

// Apply writes the stores as Place left them, before anything that may
// hold a value is written: the stores of namespaces through tenant (the
// parent's writer), the controller's through controller (the
// controller's own client). No value is ever held by no store, even if a
// write fails: first every store gains what it is to gain, keeping what
// it is to lose (so a value moving from one store to another is in both);
// only once all of those are written does a second step remove from each
// store what is kept elsewhere now: a store that keeps nothing is
// written empty (a namespace's, then pruned as a member no longer
// rendered) or deleted (the controller's). It returns the results of the
// writes of the stores Place left (those of the steps on the way only
// when they failed), and whether every write succeeded.
func (s *Stores) Apply(ctx context.Context, tenant, controller *applyset.Applier) ([]applyset.ApplyResult, bool) {
	if s.want == nil {
		return nil, true // not placed: nothing to write
	}
	var first, second []write
	gone := false // the controller's store is to be deleted
	dests := slices.Sorted(maps.Keys(s.held))
	for d := range s.want {
		if !slices.Contains(dests, d) {
			dests = append(dests, d)
		}
	}
	slices.Sort(dests)
	for _, d := range dests {
		want, before := s.want[d], s.held[d].values
		if len(want) == 0 {
			switch {
			case len(before) == 0:
			case d == Controller:
				gone = true
			default:
				second = append(second, write{dest: d, obj: s.emptied(d)})
			}
			continue
		}
		union := Merge(want, before)
		if len(union) == len(want) {
			first = append(first, write{dest: d, obj: s.object(d), final: true})
			continue
		}
		step := s.object(d)
		step.Object["data"] = Object("", "", "", union).Object["data"]
		first = append(first, write{dest: d, obj: step})
		second = append(second, write{dest: d, obj: s.object(d), final: true})
	}
	var out []applyset.ApplyResult
	for _, stage := range [][]write{first, second} {
		results, ok := s.write(ctx, tenant, controller, stage)
		out = append(out, results...)
		if !ok {
			return out, false
		}
	}
	if gone {
		if res, ok := s.deleteController(ctx, controller); !ok {
			return append(out, res), false
		}
	}
	return out, true
}

// emptied is the store of namespace dest holding nothing, labelled as a
// member.
func (s *Stores) emptied(dest string) *unstructured.Unstructured {
	o := Object(Name(s.src.SetID), dest, s.keyID(), nil)
	o.SetLabels(map[string]string{applyset.LabelPartOf: s.src.SetID})
	return o
}

// write applies one step's writes, those of namespaces through tenant and
// the controller's through controller, and returns the results of the
// final ones and of every failure, and whether none failed.
func (s *Stores) write(ctx context.Context, tenant, controller *applyset.Applier, ws []write) ([]applyset.ApplyResult, bool) {
	var out []applyset.ApplyResult
	ok := true
	for _, byController := range []bool{false, true} {
		a := tenant
		if byController {
			// The controller's store is no member (see ControllerValues):
			// the one Read found is the only object the controller's
			// Applier may write over, and nothing it writes joins the
			// set's record.
			own := *controller
			own.Record = applyset.NewRecord(nil, nil)
			if h, ok := s.held[Controller]; ok {
				own.Record = applyset.NewRecord([]types.UID{h.uid}, nil)
			}
			a = &own
		}
		var objs []*unstructured.Unstructured
		var final []bool
		for _, w := range ws {
			if (w.dest == Controller) == byController {
				objs, final = append(objs, w.obj), append(final, w.final)
			}
		}
		if len(objs) == 0 {
			continue
		}
		for i, res := range a.ApplyStage(ctx, objs) {
			failed := res.Action == applyset.Failed
			ok = ok && !failed
			if final[i] || failed {
				out = append(out, res)
			}
		}
	}
	return out, ok
}

// deleteController deletes the store of the controller's namespace as
// the controller (with the UID it was read with as precondition).
func (s *Stores) deleteController(ctx context.Context, controller *applyset.Applier) (applyset.ApplyResult, bool) {
	o := s.object(Controller)
	err := controller.Writer.Delete(ctx, o, client.Preconditions{UID: ptr(s.held[Controller].uid)})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return applyset.ApplyResult{}, true
	}
	return applyset.ApplyResult{Object: o, Action: applyset.Failed, Err: fmt.Errorf("delete %s: %w", applyset.Ref(o), err)}, false
}

// DeleteController deletes the store of set setID in the controller's
// namespace, as the controller (c), when it is the set's: a set being
// deleted leaves nothing there. reader reads it live.
func DeleteController(ctx context.Context, c client.Client, reader client.Reader, namespace, setID string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(SecretGVK)
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ControllerName(setID)}, live)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the store of generated values %s/%s: %w", namespace, ControllerName(setID), err)
	}
	if ControllerValues(live, setID) == nil {
		return nil // not the set's
	}
	err = c.Delete(ctx, live, client.Preconditions{UID: ptr(live.GetUID())})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the store of generated values %s/%s: %w", namespace, ControllerName(setID), err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
