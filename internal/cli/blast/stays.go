package blast

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/templates"
)

// The parents a Bundle change does not move (pinned, or held on their
// revision where the new version allows holding) still render within its
// permissions and crds policy, as the controller renders them: a new
// version that narrows those can fail them.

// staysWithin renders t on revision name (its pin, or the one it is on)
// within the new version's policy, when that narrows what the revision
// allows itself, and says why it would fail ("" when it would not, or
// when diff cannot tell: a note says so).
func (e *evaluator) staysWithin(ctx context.Context, t target, name string) (string, error) {
	content, err := e.revision(ctx, name)
	if content == nil || err != nil {
		return "", err
	}
	perms, crds := e.bundle.Permissions(), e.bundle.CRDPolicy()
	if !revision.Narrows(content, perms, crds) {
		return "", nil
	}
	in := plan.RenderInput(t.parent, plan.Live(t.parent), e.caps)
	_, err = plan.NewPlan(ctx, e.renderer, revision.Within(content, perms, crds), in, e.s.APIs)
	var renderErr *templates.RenderError
	var refused *plan.RefusedError
	switch {
	case errors.As(err, &refused), errors.As(err, &renderErr):
		return fmt.Sprintf("revision %s, which it stays on, within the new version's spec.permissions and spec.crds: %v", name, err), nil
	case err != nil:
		return "", fmt.Errorf("render revision %s: %w", name, err)
	}
	return "", nil
}

// revision loads revision name of the cluster's Bundle: nil, with a note,
// when there is none to load here (no Bundle in the cluster, a revision
// not recorded, a chart's revision, which diff does not pull).
func (e *evaluator) revision(ctx context.Context, name string) (*templates.Bundle, error) {
	if e.cluster == nil || name == "" {
		return nil, nil
	}
	e.mu.Lock()
	loaded, ok := e.revisions[name]
	e.mu.Unlock()
	if ok {
		return loaded, nil
	}
	loaded, err := e.loadRevision(ctx, name)
	if err == nil {
		e.mu.Lock()
		if e.revisions == nil {
			e.revisions = map[string]*templates.Bundle{}
		}
		e.revisions[name] = loaded
		e.mu.Unlock()
	}
	return loaded, err
}

// loadRevision is revision, read and loaded.
func (e *evaluator) loadRevision(ctx context.Context, name string) (*templates.Bundle, error) {
	rev := &v1alpha1.BundleRevision{}
	switch err := e.s.Client.Get(ctx, client.ObjectKey{Name: name}, rev); {
	case apierrors.IsNotFound(err) || err == nil && !revision.Of(rev, e.cluster):
		return nil, nil // the controller stalls a pin of no revision; the pin's check says so
	case err != nil:
		return nil, fmt.Errorf("read revision %s: %w", name, err)
	}
	if rev.Spec.Source != nil {
		e.note("revision %s renders a pulled chart: its parents are not checked against the new version's permissions", name)
		return nil, nil
	}
	content, err := revision.Bundle(e.cluster, rev)
	if err != nil {
		return nil, err
	}
	return templates.LoadObject(content)
}

// note writes a note once.
func (e *evaluator) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.noted == nil {
		e.noted = map[string]bool{}
	}
	if !e.noted[msg] && e.s.Notes != nil {
		e.noted[msg] = true
		fmt.Fprintf(e.s.Notes, "note: %s\n", msg)
	}
}
