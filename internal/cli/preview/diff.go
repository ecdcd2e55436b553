package preview

import (
	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// UnifiedDiff compares live with would-be (pv's Live, nil for a child
// to create, and Applied), cleaned of server bookkeeping and with Secret
// data masked: a unified diff from live/KIND/NS/NAME to
// stencil/KIND/NS/NAME, "" when they agree.
func UnifiedDiff(pv applyset.Preview) (string, error) {
	name := pv.Desired.GetKind() + "/" + pv.Desired.GetName()
	if ns := pv.Desired.GetNamespace(); ns != "" {
		name = pv.Desired.GetKind() + "/" + ns + "/" + pv.Desired.GetName()
	}
	var live, applied *unstructured.Unstructured
	if pv.Live != nil {
		live = clean(pv.Live)
	}
	applied = clean(pv.Applied)
	applyset.MaskSecretData(live, applied)
	a, err := toYAML(live)
	if err != nil {
		return "", err
	}
	b, err := toYAML(applied)
	if err != nil {
		return "", err
	}
	if a == b {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "live/" + name, ToFile: "stencil/" + name, Context: 3,
	})
}

func toYAML(u *unstructured.Unstructured) (string, error) {
	if u == nil {
		return "", nil
	}
	data, err := yaml.Marshal(u.Object)
	return string(data), err
}

// clean drops what the server keeps for itself, which a diff would only
// show as noise (applyset.CleanForDiff, which the admission webhook's
// dry-run summary shares).
func clean(u *unstructured.Unstructured) *unstructured.Unstructured {
	return applyset.CleanForDiff(u)
}
