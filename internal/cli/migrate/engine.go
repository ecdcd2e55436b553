package migrate

import "github.com/stencil-dev/stencil/templates"

// NewTarget is a placeholder until the engine lands.
func NewTarget(b *templates.Bundle, to string) (*Target, error) { return &Target{Bundle: b.Name()}, nil }
