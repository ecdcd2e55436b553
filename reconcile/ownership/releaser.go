package ownership

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// Releaser lets members of one parent go: it orphans them (the part-of
// label and the parent's owner reference off: no longer members) or only
// takes the reference off (still members, out of the garbage collector's
// reach), through Writer, the parent's writer, and tells of it on the
// parent's events. A member whose patch the writer may not make is
// reported with a Warning event and left as it is: RBAC never holds a
// parent's finalizer.
type Releaser struct {
	Writer   client.Client
	Parent   applyset.Parent
	ID       string
	Recorder events.EventRecorder
	// Denied says who may not patch kind gk in namespace ns.
	Denied func(ctx context.Context, gk schema.GroupKind, ns string) error
}

// Orphan orphans every member: it loses its part-of label and the
// parent's owner reference, and stays (event Orphaned).
func (r *Releaser) Orphan(ctx context.Context, members []applyset.Member) error {
	return r.release(ctx, members, true)
}

// Let takes the parent's owner reference off every member that carries
// it, leaving the member labelled: what the parent leaves in place when
// it goes (a suspended parent's members, a member annotated
// stencil.dev/prune: disabled, one whose delete is forbidden).
func (r *Releaser) Let(ctx context.Context, members []applyset.Member) error {
	return r.release(ctx, members, false)
}

// OrphanKept orphans the members annotated helm.sh/resource-policy: keep
// and returns the others.
func (r *Releaser) OrphanKept(ctx context.Context, members []applyset.Member) ([]applyset.Member, error) {
	var keep, rest []applyset.Member
	for _, m := range members {
		if plan.Kept(&m.Meta) {
			keep = append(keep, m)
		} else {
			rest = append(rest, m)
		}
	}
	return rest, r.Orphan(ctx, keep)
}

func (r *Releaser) release(ctx context.Context, members []applyset.Member, unlabel bool) error {
	for _, m := range members {
		_, err := Release(ctx, r.Writer, m, r.Parent.GetUID(), r.ID, unlabel)
		switch {
		case apierrors.IsForbidden(err):
			what := "still owned by " + applyset.Describe(r.Parent)
			if unlabel {
				what = "still labelled"
			}
			r.Recorder.Eventf(r.Parent, m.Related(), "Warning", v1alpha1.ReasonForbidden, "Delete", "%s: %s is left in place, %s",
				r.Denied(ctx, m.GVK.GroupKind(), m.Meta.Namespace), m.Ref(), what)
			continue
		case err != nil:
			return fmt.Errorf("orphan %s: %w", m.Ref(), err)
		}
		if unlabel {
			r.Recorder.Eventf(r.Parent, m.Related(), "Normal", "Orphaned", "Delete", "%s orphaned", m.Ref())
		}
	}
	return nil
}
