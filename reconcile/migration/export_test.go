package migration

import "github.com/stencil-dev/stencil/api/v1alpha1"

// SetAfterPage has m call f once each page's progress is recorded; a
// false return ends the pass there, as a stop of the controller would.
func SetAfterPage(m *Migrator, f func(v1alpha1.StorageStatus) bool) { m.afterPage = f }
