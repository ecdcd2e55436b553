package revision

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// hashDigits is how many hex digits of the content hash a name carries:
// 40 bits, so that two revisions of one Bundle meet by chance once in a
// trillion.
const hashDigits = 10

// maxName is the longest object name.
const maxName = 253

// Name is the name of the revision of Bundle bundle whose content hash is
// hash (sha256:HEX, a Bundle's status.revision): <bundle>-<10 hex digits>.
// A Bundle name too long to take the suffix is cut; the revision's
// spec.bundle and label name it in full.
func Name(bundle, hash string) string {
	hex := strings.TrimPrefix(hash, "sha256:")
	if len(hex) > hashDigits {
		hex = hex[:hashDigits]
	}
	if max := maxName - len(hex) - 1; len(bundle) > max {
		bundle = strings.TrimRight(bundle[:max], "-.")
	}
	return bundle + "-" + hex
}

// Template is what a revision keeps of a Bundle's spec: what its parents
// render and read (files, schema, permissions, the options, the published
// api, outputs and readiness rules, the source), not how the Bundle is
// used (namespaceSelector, rollout, revisions, pruning), which stays the
// Bundle's own.
func Template(spec v1alpha1.BundleSpec) v1alpha1.BundleSpec {
	out := *spec.DeepCopy()
	out.NamespaceSelector = nil
	out.Rollout = nil
	out.Revisions = nil
	out.Pruning = nil
	return out
}

// New is the BundleRevision number of b's current content, whose hash is
// hash: owned by b (deleted with it), labelled with its name. For a
// Bundle with a source it records the chart b's status records, never
// its files.
func New(b *v1alpha1.Bundle, hash string, number int64) *v1alpha1.BundleRevision {
	rev := &v1alpha1.BundleRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:   Name(b.Name, hash),
			Labels: map[string]string{v1alpha1.LabelBundle: labelValue(b.Name)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "Bundle", Name: b.Name, UID: b.UID,
			}},
		},
		Spec: v1alpha1.BundleRevisionSpec{Bundle: b.Name, Revision: hash, Number: number, Template: Template(b.Spec)},
	}
	if b.Spec.Source != nil && len(b.Spec.Files) == 0 && b.Status.Source != nil {
		rev.Spec.Template.Files = nil
		rev.Spec.Source = b.Status.Source.DeepCopy()
		rev.Spec.Source.ResolvedAt = metav1.Time{}
	}
	return rev
}

// labelValue is a Bundle name as a label value (at most 63 characters):
// the label selects a Bundle's revisions, spec.bundle confirms them.
func labelValue(name string) string {
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	return name
}

// Selector is the label selector of the revisions of Bundle name; a
// revision it selects belongs to name only if its spec.bundle says so
// (Of).
func Selector(name string) map[string]string {
	return map[string]string{v1alpha1.LabelBundle: labelValue(name)}
}

// Of reports whether rev is a revision of Bundle b (by name and owner).
func Of(rev *v1alpha1.BundleRevision, b *v1alpha1.Bundle) bool {
	if rev.Spec.Bundle != b.Name {
		return false
	}
	for _, o := range rev.OwnerReferences {
		if o.Kind == "Bundle" && o.Name == b.Name {
			return o.UID == b.UID
		}
	}
	return false
}

// Bundle is the Bundle a parent on rev renders: b (for its name and
// identity, generation 0) with rev's content. For a Bundle with a source, its status
// records rev's chart, and a signed chart is taken as verified only while
// b's keys are those rev was verified with (a rotation since would need
// the chart verified again: the parent waits, see NotVerifiedError).
func Bundle(b *v1alpha1.Bundle, rev *v1alpha1.BundleRevision) (*v1alpha1.Bundle, error) {
	out := &v1alpha1.Bundle{TypeMeta: b.TypeMeta, ObjectMeta: *b.ObjectMeta.DeepCopy(), Spec: *rev.Spec.Template.DeepCopy()}
	// A revision's content has no generation: its parse is kept by its
	// name (see recall.Bundles.LoadKeyed) through every edit of the Bundle.
	out.Generation = 0
	// Of the Bundle's own spec, what says how it is used.
	out.Spec.NamespaceSelector = b.Spec.NamespaceSelector.DeepCopy()
	out.Spec.Rollout, out.Spec.Revisions, out.Spec.Pruning = b.Spec.Rollout, b.Spec.Revisions, b.Spec.Pruning
	src := rev.Spec.Source
	if src == nil {
		return out, nil
	}
	out.Status.Source = src.DeepCopy()
	if v := out.Spec.Source; v != nil && v.Verify != nil {
		current := ""
		if b.Status.Source != nil {
			current = b.Status.Source.KeysFingerprint
		}
		if src.Verified != v.Verify.Provider || src.KeysFingerprint == "" || src.KeysFingerprint != current {
			return nil, &NotVerifiedError{Revision: rev.Name, Digest: src.Digest}
		}
		// As recorded: verified for the generation it was recorded at.
		out.Generation = src.VerifiedGeneration
	}
	return out, nil
}

// NotVerifiedError says a revision's signed chart was verified with keys
// the Bundle no longer has.
type NotVerifiedError struct {
	Revision, Digest string
}

func (e *NotVerifiedError) Error() string {
	return fmt.Sprintf("the chart of revision %s (%s) was verified with keys the Bundle no longer names: it is not rendered until the parent moves to a revision verified with the current keys", e.Revision, e.Digest)
}

// Check reports whether hash, the content hash of rev's content as
// loaded, is the revision rev names: a revision edited since it was
// recorded (by someone who may write BundleRevisions) is never rendered.
func Check(rev *v1alpha1.BundleRevision, hash string) error {
	if hash != rev.Spec.Revision {
		return fmt.Errorf("BundleRevision %s holds a content whose hash is %s, not the %s it names: it is not rendered", rev.Name, hash, rev.Spec.Revision)
	}
	return nil
}
