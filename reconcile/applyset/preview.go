package applyset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Preview is what applying one desired object would do, found with a
// server-side dry-run apply under stencil's field manager.
type Preview struct {
	// Desired is the planned object.
	Desired *unstructured.Unstructured
	// Live is the object as it is, nil when it does not exist.
	Live *unstructured.Unstructured
	// Applied is the object as the apply would leave it.
	Applied *unstructured.Unstructured
	// Member: Live is a member of the set (Owns finds it Ours: the set's
	// record names it). An existing object that is not would be adopted.
	Member bool
	// Err says why the dry run failed (a refusal, a validation error).
	Err error
}

// DryRun previews the apply of every desired object into the ApplySet id,
// whose record is rec (see RecordOf), as the controller would make it
// (field manager "stencil", forced ownership), without changing anything.
// An existing object the ownership test (Owns, with consent) does not let
// the set take is not
// dry-run: its preview's Err is the ForeignMemberError or
// AdoptionRefusedError the controller would stall with. Each dry run
// carries the precondition of the read it follows, as the controller's
// apply does (see precondition): an object that changed in between is
// read and judged again, at most maxJudgements times.
func DryRun(ctx context.Context, c client.Client, id string, rec *Record, consent Consent, objects []*unstructured.Unstructured) []Preview {
	out := make([]Preview, 0, len(objects))
	for _, desired := range objects {
		var p Preview
		for range maxJudgements {
			var again bool
			if p, again = dryRun(ctx, c, id, rec, consent, desired); !again {
				break
			}
		}
		out = append(out, p)
	}
	return out
}

// dryRun reads desired's object through c, judges it, and previews the
// apply over it; again reports a dry run refused because the object
// changed since the read.
func dryRun(ctx context.Context, c client.Client, id string, rec *Record, consent Consent, desired *unstructured.Unstructured) (p Preview, again bool) {
	p = Preview{Desired: desired}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	switch err := c.Get(ctx, client.ObjectKeyFromObject(desired), live); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	case err != nil:
		p.Err = fmt.Errorf("read %s: %w", Ref(desired), err)
		return p, false
	default:
		p.Live = live
	}
	if p.Live != nil {
		o := Owns(p.Live, desired.GroupVersionKind().GroupKind(), id, rec, consent)
		if o == Foreign || o == NotOurs {
			p.Err = Refusal(Ref(desired), p.Live, id, consent)
			return p, false
		}
		p.Member = o == Ours
		desired = settleOwners(desired, p.Live)
	}
	applied := desired.DeepCopy()
	precondition(applied, p.Live)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
		client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		p.Err = fmt.Errorf("dry-run apply %s: %w", Ref(desired), Redact(desired, err))
		return p, stale(err)
	}
	p.Applied = applied
	return p, false
}

// PruneCandidate is a live member the controller would take out of the
// set after applying a plan.
type PruneCandidate struct {
	// Ref names the member as Kind/namespace/name.
	Ref string
	// Orphan is true for a member annotated helm.sh/resource-policy: keep:
	// it would lose its part-of label and stay, not be deleted.
	Orphan bool
}

// Sparer says what prune does with a member it would otherwise delete:
// leave it alone (spare: a Helm hook), or orphan it (keep).
type Sparer func(ctx context.Context, m Member) (spare, orphan bool, err error)

// PruneCandidates lists the live members of parent's ApplySet id that the
// controller would prune after applying objects: what parent records (read
// live through reader) and inv adds, minus the objects, minus what it
// never deletes (see Prunable: only members its record names) and what
// sparer spares.
func PruneCandidates(ctx context.Context, reader client.Reader, mapper meta.RESTMapper, parent Parent, id string, inv Inventory, objects []*unstructured.Unstructured, sparer Sparer) ([]PruneCandidate, error) {
	live, err := Reread(ctx, reader, parent)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if prune := live.ParentSpec().Prune; prune != nil && !*prune {
		return nil, nil
	}
	p := &Pruner{Lister: reader, Mapper: mapper, ID: id}
	recorded, _ := Recorded(live)
	rec := RecordOf(live)
	listed := p.List(ctx, recorded.Union(inv), parent.GetNamespace())
	if len(listed.Unlisted) > 0 {
		return nil, fmt.Errorf("cannot list members of %v", listed.Unlisted)
	}
	refs := map[string]bool{}
	for _, o := range objects {
		refs[Ref(o)] = true
	}
	var out []PruneCandidate
	for _, m := range listed.Members {
		if refs[m.Ref()] || !Prunable(m, map[types.UID]bool{}, id, rec) {
			continue
		}
		spare, orphan, err := sparer(ctx, m)
		if err != nil {
			return nil, err
		}
		if !spare {
			out = append(out, PruneCandidate{Ref: m.Ref(), Orphan: orphan})
		}
	}
	return out, nil
}
