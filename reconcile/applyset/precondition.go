package applyset

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxJudgements bounds how many times one apply judges an object and
// writes over it. A write the API server refuses because the object is
// no longer the one judged (stale: see precondition) reads the object
// again, live, and judges it again; past the bound the apply fails as a
// transient error and the next pass starts afresh. Three covers the
// common sequence: a create refused by an object the cache does not hold,
// then a write over a member whose status moved after the read.
const maxJudgements = 3

// precondition makes body, the object about to be applied, an apply over
// exactly the object it was judged on: live, as read for the ownership
// test and the no-change decision, or nil when no object was found.
//
//   - Over live, body carries live's metadata.uid and
//     metadata.resourceVersion. The API server treats both in an apply as
//     preconditions: an object deleted and created again (another owner's
//     object of the same name, perhaps another tenant's) or changed since
//     the read (relabelled as another set's, its consent withdrawn) has
//     another resourceVersion, and the write is refused with a Conflict
//     before anything is stored. (The resourceVersion is checked first; a
//     uid alone that differs is refused as Invalid, "metadata.uid: field
//     is immutable", which stale also reads as a precondition failure.)
//   - Over nothing, body carries the createOnly resourceVersion, which
//     only a create meets (see create).
//
// Neither field is one any manager owns: the stored object keeps its own
// uid and gets its own resourceVersion.
func precondition(body, live *unstructured.Unstructured) {
	if live == nil {
		body.SetResourceVersion(createOnly)
		return
	}
	body.SetUID(live.GetUID())
	body.SetResourceVersion(live.GetResourceVersion())
}

// stale reports an apply the API server refused because its precondition
// failed: the object is not (or no longer) the one judged. Such an apply
// wrote nothing; the object is read and judged again.
func stale(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if c.Field != "metadata.uid" {
			return false
		}
	}
	return len(causes) > 0
}
