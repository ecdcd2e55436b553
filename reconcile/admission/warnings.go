package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// joinChanges joins changes with ", " within max runes; what does not fit
// becomes "and N more".
func joinChanges(changes []applyset.FieldChange, max int) string {
	var b strings.Builder
	for i, c := range changes {
		s := c.String()
		if i > 0 {
			s = ", " + s
		}
		more := ""
		if rest := len(changes) - i - 1; rest > 0 {
			more = fmt.Sprintf(", and %d more", rest)
		}
		if i > 0 && len([]rune(b.String()+s+more)) > max {
			fmt.Fprintf(&b, ", and %d more", len(changes)-i)
			break
		}
		b.WriteString(s)
	}
	return b.String()
}

// readable says whether the request's user may get objects of a kind in
// a namespace ("" for a cluster-scoped kind); nil means every kind.
type readable func(gk schema.GroupKind, namespace string) bool

// childWarnings are the warnings of a dry run of a set: one per
// child that would change (created, its changed fields, or why it would
// be refused), then one per member that would be pruned or orphaned,
// sorted by child.
//
// An object that exists but is not yet a member of the set (one the apply
// would adopt: the set's record does not name it, whatever its labels
// say) is listed with the paths of its changed fields only: the
// dry run reads it as the controller or the parent's ServiceAccount, and
// the requester may not be allowed to read it, so its values stay hidden.
//
// A child of a kind the requester may not get (canRead) is listed as
// existing, whatever the dry run found: no path, no value, no refusal's
// text and not even whether anything would change, so guessing a value
// and dry-running it tells nothing. Members to prune of such kinds
// (resolved by kinds; a kind not found there counts as unreadable) are
// counted, not named.
func childWarnings(namespace string, previews []applyset.Preview, pruned []applyset.PruneCandidate, canRead readable, kinds []schema.GroupKind) []string {
	mayRead := func(gk schema.GroupKind, ns string) bool { return canRead == nil || canRead(gk, ns) }
	var out []string
	for _, pv := range previews {
		name := childName(namespace, applyset.Ref(pv.Desired))
		if !mayRead(pv.Desired.GroupVersionKind().GroupKind(), pv.Desired.GetNamespace()) {
			if pv.Live != nil {
				out = append(out, "stencil: "+name+": exists, would be adopted or changed (not shown: you may not get it)")
			} else if pv.Err != nil {
				out = append(out, "stencil: "+name+": would be refused (not shown: you may not get it)")
			} else {
				out = append(out, "stencil: "+name+": created")
			}
			continue
		}
		switch {
		case pv.Err != nil:
			out = append(out, "stencil: "+name+": would be refused: "+pv.Err.Error())
		case pv.Live == nil:
			out = append(out, "stencil: "+name+": created")
		default:
			changes := applyset.ChangedFields(pv.Live, pv.Applied)
			if len(changes) == 0 {
				continue
			}
			head := "stencil: " + name + ": "
			if !pv.Member {
				head += "would be adopted: "
				for i := range changes {
					changes[i].Old, changes[i].New, changes[i].Hidden = nil, nil, true
				}
			}
			out = append(out, head+joinChanges(changes, maxWarningRunes-len([]rune(head))))
		}
	}
	sorted := append([]applyset.PruneCandidate(nil), pruned...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Ref < sorted[j].Ref })
	unreadable := 0
	for _, c := range sorted {
		if !mayRead(pruneKind(c.Ref, kinds), refNamespace(c.Ref)) {
			unreadable++
			continue
		}
		if c.Orphan {
			out = append(out, "stencil: "+childName(namespace, c.Ref)+": would be orphaned (helm.sh/resource-policy: keep)")
			continue
		}
		out = append(out, "stencil: "+childName(namespace, c.Ref)+": would be pruned")
	}
	if unreadable > 0 {
		out = append(out, fmt.Sprintf("stencil: %d members of kinds you may not get would be pruned or orphaned (not shown)", unreadable))
	}
	return out
}

// pruneKind is the kind of the member ref (Kind/namespace/name or
// Kind/name) among kinds; an empty GroupKind when no kind or more than one
// is so named.
func pruneKind(ref string, kinds []schema.GroupKind) schema.GroupKind {
	kind, _, _ := strings.Cut(ref, "/")
	var found schema.GroupKind
	n := 0
	for _, gk := range kinds {
		if gk.Kind == kind && gk != found {
			found = gk
			n++
		}
	}
	if n != 1 {
		return schema.GroupKind{}
	}
	return found
}

// refNamespace is the namespace of a member ref, "" for Kind/name.
func refNamespace(ref string) string {
	if parts := strings.SplitN(ref, "/", 3); len(parts) == 3 {
		return parts[1]
	}
	return ""
}

// childName shortens Kind/namespace/name to Kind/name in the parent's
// own namespace.
func childName(namespace, r string) string {
	parts := strings.SplitN(r, "/", 3)
	if len(parts) == 3 && parts[1] == namespace {
		return parts[0] + "/" + parts[2]
	}
	return r
}

// The API server keeps at most 4096 runes of warnings per response and,
// beyond that, cuts each one to 256 runes (k8s.io/apiserver
// pkg/endpoints/filters/warning.go, truncateAtTotalRunes and
// truncateItemRunes). stencil stays under both, leaving room for the
// warnings of others, so none of its warnings is ever cut.
const (
	maxWarningRunes      = 240
	maxWarningTotalRunes = 3072
)

// capWarnings keeps warnings within maxWarningRunes each and
// maxWarningTotalRunes in all; when some must go, the last one says how
// many more there are and to run `stencil diff`.
func capWarnings(lines []string) []string {
	total := 0
	var out []string
	for i, l := range lines {
		l = warningText(l)
		n := len([]rune(l))
		if total+n+len([]rune(moreWarning(len(lines)-i))) > maxWarningTotalRunes && i < len(lines)-1 ||
			total+n > maxWarningTotalRunes {
			return append(out, moreWarning(len(lines)-i))
		}
		out = append(out, l)
		total += n
	}
	return out
}

// moreWarning is the last warning when n more were left out.
func moreWarning(n int) string {
	return fmt.Sprintf("stencil: %d more changes not shown; run `stencil diff` to see them all", n)
}

// warningText makes a line a valid warning the API server keeps whole:
// no control characters, at most maxWarningRunes runes.
func warningText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxWarningRunes {
		return string(r[:maxWarningRunes-1]) + "…"
	}
	return s
}

// outputWarnings are the warnings for the Bundle's status outputs the
// change would alter, computed over the dry run's would-be members (see
// status.PreviewOutputs) against the parent's outputs as they are: one per
// output, "stencil: status.outputs.phase: \"creating\" → \"ready\"" (an
// instance's outputs are its top-level status fields, status.phase). An
// output the dry run cannot compute is not shown.
//
// An output may read any member, so the outputs are shown only when the
// requester may get the parent's kind and every planned child's; else one
// line says they are not shown, whatever their values.
func (h *reviewer) outputWarnings(ctx context.Context, user authenticationv1.UserInfo, parent applyset.Parent, b *v1alpha1.Bundle, planned *plan.Plan, previews []applyset.Preview) []string {
	set, err := outputs.FromBundle(outputs.Stored, b.Spec)
	if err != nil || !set.HasOutputs() {
		return nil // a Bundle whose outputs do not compile is not Ready: the controller reports
	}
	canRead := h.readable(ctx, user)
	if !canRead(parent.ParentGVK().GroupKind(), parent.GetNamespace()) {
		return []string{outputsWithheld}
	}
	for _, o := range plan.OrdinaryObjects(planned.Objects) {
		if !canRead(o.GroupVersionKind().GroupKind(), o.GetNamespace()) {
			return []string{outputsWithheld}
		}
	}
	field := "status."
	if parent.ParentGVK().GroupKind() == applyset.CompositionGroupKind {
		field = "status.outputs."
	}
	var out []string
	for _, c := range status.PreviewOutputs(ctx, set, status.ParentObject(parent), previews, parent.ParentStatus().Outputs) {
		out = append(out, "stencil: "+field+c.Name+": "+c.Old+" → "+c.New)
	}
	return out
}

// outputsWithheld is the warning in place of the outputs a requester may
// not see.
const outputsWithheld = "stencil: status outputs not shown: you may not get every member they read"
