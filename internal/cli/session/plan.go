package session

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates"
)

// Plan renders one parent (a Composition or an instance of a published
// kind) with the controller's own planning, in the same sandbox as the
// controller (see PlanObserved).
func (s *Session) Plan(ctx context.Context, r plan.Renderer, b *templates.Bundle, p applyset.Parent) (*plan.Plan, error) {
	pl, obs, err := s.PlanObserved(ctx, r, b, p)
	if err != nil {
		return nil, err
	}
	// The Secrets keeping the generated values in the namespaces they end
	// up in are members the controller applies beside the chart's
	// (package valuestore): part of the plan diff compares, though render
	// does not print them. The controller's own store is not: only the
	// controller writes it.
	if obs.stores != nil {
		if err := obs.stores.Place(pl, obs.Generated); err != nil {
			return nil, fmt.Errorf("%s: %w", parents.Describe(p), err)
		}
	}
	return pl, nil
}

// Observations are what a render observed (templates.Observations) and
// the stores of generated values it was given (nil: none read).
type Observations struct {
	templates.Observations
	stores *valuestore.Stores
}

// PlanObserved is Plan without the store of generated values, with
// what the render observed: the objects it held back, what it generated.
// Offline it is the controller's first pass: no member is observed, and
// what waits for a member's value is held back (a Fixture answers
// lookups and observed reads instead). Online the templates
// observe the parent's live members, read as the user (see
// Session.Observe): what the controller would apply now.
func (s *Session) PlanObserved(ctx context.Context, r plan.Renderer, b *templates.Bundle, p applyset.Parent) (*plan.Plan, Observations, error) {
	in, err := s.RenderInput(ctx, p)
	if err != nil {
		return nil, Observations{}, fmt.Errorf("%s: %w", parents.Describe(p), err)
	}
	var answer plan.Answer
	var stores *valuestore.Stores
	observe := s.Observe(nil)
	if s.Client == nil && s.Fixture != nil {
		answer, observe = s.Fixture.answer, s.Fixture.observe
	}
	if s.Client != nil {
		answer = s.Answer
		// What the controller takes for the set's own members: a user
		// who may not read the parent sees none observed, none kept.
		rec, err := s.RecordOf(ctx, p)
		if err != nil && !apierrors.IsForbidden(err) {
			return nil, Observations{}, fmt.Errorf("%s: %w", parents.Describe(p), err)
		}
		observe = s.Observe(rec)
		if b.MayGenerate() {
			if stores, err = s.Kept(ctx, p, rec); err != nil {
				return nil, Observations{}, fmt.Errorf("%s: %w", parents.Describe(p), err)
			}
			in.Generated, in.GeneratedKey = stores.Values(), stores.SetKey()
		}
	}
	pl, obs, err := plan.NewObservedPlan(ctx, r, b, in, s.APIs, observe, answer)
	if err != nil {
		return nil, Observations{}, fmt.Errorf("%s: %w", parents.Describe(p), err)
	}
	if len(pl.ValuesMigrations) > 0 && s.Notes != nil {
		// As the controller renders it; the file is not rewritten.
		fmt.Fprintf(s.Notes, "warning: %s: Bundle %s refuses its values as they are: they are rendered through its values migrations %s (the values as written are unchanged; update them to drop this warning)\n",
			parents.Describe(p), b.Name(), strings.Join(pl.ValuesMigrations, ", "))
	}
	return pl, Observations{Observations: obs, stores: stores}, nil
}
