package authority

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The keys of the policy's parameters (the ConfigMap ParamsName):
//
//	default, default.<shard>        the default ServiceAccount of the controller of that shard ("" none: it
//	                                writes as itself, or stalls the parent); absent, no controller serves it
//	kind.<crd>.bundle               the Bundle that publishes the kind whose CRD is <crd> (plural.group);
//	                                absent, no Bundle does and its instances are refused
//	kind.<crd>.serviceAccount       that Bundle's spec.api.defaults.serviceAccountName ("" none)
//	epoch.<key>                     when the ServiceAccount <key> holds last changed from one value to another
//	                                (RFC 3339); absent, never
//	installed                       when stencil's admission policy was first installed (RFC 3339: the creation
//	                                time of the policy the first controller to write it found), set once and
//	                                never changed: only a parent created before may be one an earlier stencil
//	                                reconciled (Parent.Legacy); absent, none is yet
//
// A default that appears where there was none changes no parent's check:
// while it was absent, a parent that needed it was refused. One that
// changes value does (see Coverage.Check).

// DefaultKey is the key of the default ServiceAccount of the controller
// of shard ("" unsharded).
func DefaultKey(shard string) string {
	if shard == "" {
		return "default"
	}
	return "default." + shard
}

// KindKeys are the keys of the published kind gr: its Bundle and that
// Bundle's default ServiceAccount.
func KindKeys(gr schema.GroupResource) (bundle, serviceAccount string) {
	base := "kind." + gr.String()
	return base + ".bundle", base + ".serviceAccount"
}

// KindKeyFits reports whether the published kind gr's keys fit a
// ConfigMap: its CRD name is at most maxKindKey characters.
func KindKeyFits(gr schema.GroupResource) bool {
	return len(gr.String()) <= maxKindKey
}

// InstalledKey is the key of when stencil's admission policy was first
// installed (see the keys above).
const InstalledKey = "installed"

// installed returns when stencil's admission policy was first
// installed, and whether the parameters say so.
func (p Params) installed() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, p[InstalledKey])
	return t, err == nil
}

// epochKey is the key of the epoch of the ServiceAccount key holds.
func epochKey(key string) string { return "epoch." + key }

// Params are the policy's parameters as read; nil data: the ConfigMap is
// missing (the policy refuses every parent).
type Params map[string]string

// epoch returns when key's ServiceAccount last changed value, zero if
// never.
func (p Params) epoch(key string) time.Time {
	t, err := time.Parse(time.RFC3339, p[epochKey(key)])
	if err != nil {
		return time.Time{}
	}
	return t
}

// set sets key to value in a patch of p (the keys to write, a nil value
// deleting one) and bumps key's epoch to now when it held another value.
// It returns whether anything changes.
func (p Params) set(patch map[string]*string, key, value string, now time.Time) bool {
	old, had := p[key]
	if had && old == value {
		return false
	}
	patch[key] = &value
	if had {
		e := now.UTC().Format(time.RFC3339)
		patch[epochKey(key)] = &e
	}
	return true
}
