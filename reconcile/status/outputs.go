package status

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
)

// Judge lets the Bundle's readiness rules (see package outputs) decide
// the readiness of a member they select, in place of kstatus: Current
// when its readyWhen is true, InProgress (with why) otherwise. A member
// that is missing or could not be read keeps what MemberOf found.
func Judge(ctx context.Context, ms *v1alpha1.MemberStatus, rules *outputs.Set, parent map[string]any, id string, live *unstructured.Unstructured) {
	if !rules.HasRules() || live == nil || ms.Status == kstatus.UnknownStatus.String() {
		return
	}
	ready, matched, err := rules.Ready(ctx, parent, id, live.GroupVersionKind().GroupKind(), live.Object)
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
