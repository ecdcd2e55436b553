package reconcile

import (
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/prune"
)

// Names kept while their importers move to the packages that own them.

// PruneCandidates is prune.Candidates.
var PruneCandidates = prune.Candidates

// NewScheme is engine.NewScheme.
var NewScheme = engine.NewScheme

// DefaultNamespace is engine.DefaultNamespace.
const DefaultNamespace = engine.DefaultNamespace
