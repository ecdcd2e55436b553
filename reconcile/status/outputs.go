package status

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// Judge lets the Bundle's readiness rules (see package outputs) decide
// the readiness of a member they select, in place of kstatus: Current
// when its readyWhen is true, InProgress (with why) otherwise. A member
// that is missing or could not be read keeps what MemberOf found.
func Judge(ctx context.Context, ms *v1alpha1.MemberStatus, rules *outputs.Set, parent map[string]any, id string, live *unstructured.Unstructured) {
	if !rules.HasRules() || live == nil || ms.Status == kstatus.UnknownStatus.String() {
		return
	}
	ready, matched, err := rules.Ready(ctx, parent, id, live.GroupVersionKind().GroupKind(), ExpressionView(live))
	switch {
	case !matched:
	case err != nil:
		ms.Status, ms.Message = kstatus.InProgressStatus.String(), err.Error()
	case ready:
		ms.Status, ms.Message = kstatus.CurrentStatus.String(), ""
	default:
		ms.Status, ms.Message = kstatus.InProgressStatus.String(), "its readiness rule (readyWhen) is false"
	}
}

// SetOutputs computes the Bundle's outputs from the members' live objects
// (by id) and sets them, with the OutputsReady condition: True when every
// output has a value, False naming each one that has none and why. A
// Bundle that declares no output leaves both unset.
func SetOutputs(ctx context.Context, st *v1alpha1.CompositionStatus, gen int64, set *outputs.Set, parent map[string]any, members map[string]map[string]any) {
	if !set.HasOutputs() {
		st.Outputs = nil
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionOutputsReady)
		return
	}
	values, problems := set.Evaluate(ctx, parent, members)
	st.Outputs = nil
	if len(values) > 0 {
		st.Outputs = make(map[string]apiextensionsv1.JSON, len(values))
		for name, v := range values {
			raw, err := json.Marshal(v)
			if err != nil {
				problems = append(problems, outputs.Problem{Name: name, Err: err})
				continue
			}
			st.Outputs[name] = apiextensionsv1.JSON{Raw: raw}
		}
	}
	if len(problems) == 0 {
		setCondition(st, gen, v1alpha1.ConditionOutputsReady, metav1.ConditionTrue, v1alpha1.ReasonOutputsComputed, "every output has a value")
		return
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Error()
	}
	sort.Strings(msgs)
	setCondition(st, gen, v1alpha1.ConditionOutputsReady, metav1.ConditionFalse, v1alpha1.ReasonOutputFailed, strings.Join(msgs, "; "))
}

// OutputChanges names the outputs whose values differ between two
// statuses, as "name: old → new" ("(unset)" for none), sorted; empty when
// none changed.
func OutputChanges(old, cur map[string]apiextensionsv1.JSON) []string {
	var out []string
	seen := map[string]bool{}
	for name := range old {
		seen[name] = true
	}
	for name := range cur {
		seen[name] = true
	}
	for name := range seen {
		o, hadOld := old[name]
		n, hasNew := cur[name]
		if hadOld == hasNew && (!hadOld || equality.Semantic.DeepEqual(o.Raw, n.Raw)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", name, shown(o, hadOld), shown(n, hasNew)))
	}
	sort.Strings(out)
	return out
}

// shown is an output's value as an event says it.
func shown(v apiextensionsv1.JSON, ok bool) string {
	if !ok {
		return "(unset)"
	}
	s := string(v.Raw)
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return s
}

// OutputPreview is an output whose value a change would alter, its values
// as an event shows them (see OutputChanges): Old is "(unset)" when the
// parent has none yet.
type OutputPreview struct {
	Name, Old, New string
}

// PreviewOutputs computes set's outputs over the objects a dry run would
// leave (each preview's Applied, else its Live when the dry run failed;
// hooks are not members) and returns those whose value would differ from
// current, the parent's outputs as they are, sorted by name. parent is the
// parent as the expressions see it (its new spec, its live status).
//
// Only what the dry run can compute is previewed: an output that fails to
// evaluate (a member that would not exist, a field absent) is left out,
// never shown as unset. A dry run does not change status, so an output
// over members' status mostly shows the value it has; one over their spec,
// or the parent's, shows what the change makes it.
func PreviewOutputs(ctx context.Context, set *outputs.Set, parent map[string]any, previews []applyset.Preview, current map[string]apiextensionsv1.JSON) []OutputPreview {
	if !set.HasOutputs() {
		return nil
	}
	members := make(map[string]map[string]any, len(previews))
	for _, pv := range previews {
		if pv.Desired == nil || plan.IsHook(pv.Desired) {
			continue
		}
		obj := pv.Applied
		if pv.Err != nil || obj == nil {
			obj = pv.Live
		}
		if obj == nil {
			continue
		}
		members[outputs.ID(pv.Desired)] = ExpressionView(obj)
	}
	values, _ := set.Evaluate(ctx, parent, members)
	var out []OutputPreview
	for name, v := range values {
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		cur, had := current[name]
		if had && sameJSON(cur.Raw, raw) {
			continue
		}
		out = append(out, OutputPreview{Name: name, Old: shown(cur, had), New: shown(apiextensionsv1.JSON{Raw: raw}, true)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sameJSON reports whether two JSON documents hold the same value (key
// order and spacing aside).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return equality.Semantic.DeepEqual(x, y)
}

// ParentObject is the parent as outputs' expressions see it: an
// instance's object as it is, a Composition converted to its JSON form.
func ParentObject(p applyset.Parent) map[string]any {
	if in, ok := p.(*applyset.Instance); ok {
		return in.Object
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return map[string]any{}
	}
	return obj
}

// ExpressionView is a member as the Bundle's output and readiness
// expressions see it: the live object, but a Secret's values are not
// there (its data and stringData keep their keys, each with an empty
// value, and kubectl's last-applied annotation is gone), so no expression
// can copy a Secret's content into a parent's status, which more users
// may read than the Secret.
func ExpressionView(u *unstructured.Unstructured) map[string]any {
	if u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return u.Object
	}
	view := maps.Clone(u.Object)
	for _, field := range []string{"data", "stringData"} {
		if values, ok := view[field].(map[string]any); ok {
			keys := make(map[string]any, len(values))
			for k := range values {
				keys[k] = ""
			}
			view[field] = keys
		}
	}
	if md, ok := view["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, has := ann["kubectl.kubernetes.io/last-applied-configuration"]; has {
				md = maps.Clone(md)
				ann = maps.Clone(ann)
				delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
				md["annotations"] = ann
				view["metadata"] = md
			}
		}
	}
	return view
}
