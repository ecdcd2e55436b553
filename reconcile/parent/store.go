package parent

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/recall"
)

// Store reads and writes the parents of one controller, and remembers,
// for each, the resourceVersion this process last wrote or read it live
// at: what decides whether the cached parent can be trusted (see
// Recorded). It is the only writer of a parent's metadata and status.
type Store struct {
	// Client writes the parents, as the controller.
	Client client.Client
	// Live reads the parents from the API server, as the controller.
	Live client.Reader
	// Mapper maps kinds to resources (the record's seeding lists them).
	Mapper meta.RESTMapper
	// Recorder records the Warning events of ignored annotations.
	Recorder events.EventRecorder
	// Tooling is stencil's version, in the ApplySet tooling annotation.
	Tooling string

	versions recall.Memo[string]
}

// unconfirmedVersion is what the versions memo holds for a parent whose
// unconfirmed pass found a newer version than its cache's: no
// resourceVersion equals it, so the next pass reads live.
const unconfirmedVersion = "unconfirmed"

// Version is the resourceVersion of the parent name as this process last
// wrote or read it live, "" when it did neither.
func (p *Store) Version(name types.NamespacedName) string {
	v, _ := p.versions.Get(name, "")
	return v
}

// Wrote records that this process wrote (or read live) the parent name
// at version.
func (p *Store) Wrote(name types.NamespacedName, version string) {
	p.versions.Put(name, "", version)
}

// Unconfirm makes the next pass of the parent name read it live.
func (p *Store) Unconfirm(name types.NamespacedName) {
	p.versions.Put(name, "", unconfirmedVersion)
}

// LockStatus reports whether a status write of the parent name, read as
// st, must carry its resourceVersion as a precondition: the pass read an
// unconfirmed cached parent that no write of this process confirmed since.
func (p *Store) LockStatus(name types.NamespacedName, st State) bool {
	v, written := p.versions.Get(name, "")
	return st.Unconfirmed && (!written || v == unconfirmedVersion)
}

// Forget drops what the store remembers of the parent name.
func (p *Store) Forget(name types.NamespacedName) { p.versions.Forget(name) }
