package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// RenderReason is the condition reason of a render error.
func RenderReason(err *templates.RenderError) string {
	if err.Reason != "" {
		return err.Reason
	}
	return v1alpha1.ReasonRenderFailed
}

// RenderKey identifies everything a render of comp depends on: its spec
// (by generation), the Bundle's revision with the policy it renders
// within (revision.RenderKey) and the rest of its input in: the
// labels and annotations templates see, .Release.IsUpgrade, and the
// revision of the capabilities, so a render runs again when an API comes
// or goes.
func RenderKey(comp applyset.Parent, bundleRevision string, in templates.Input, capsRevision string) string {
	h := sha256.New()
	meta, _ := json.Marshal([]any{in.Composition.Labels, in.Composition.Annotations, in.IsUpgrade, capsRevision})
	h.Write(meta)
	return fmt.Sprintf("%s/%d/%s/%s", comp.GetUID(), comp.GetGeneration(), bundleRevision, hex.EncodeToString(h.Sum(nil)))
}
