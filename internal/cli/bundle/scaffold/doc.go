// Package scaffold holds the bundle `stencil bundle init` writes, embedded
// (files/, each a text/template with [[ ]] delimiters around the
// bundle's own {{ }} templates): Chart.yaml, values.yaml,
// values.schema.json, stencil.yaml, templates/ (helpers, a Deployment
// and a Service), tests/defaults.yaml, a README and a .helmignore that
// leaves tests/ out of the Bundle.
//
// Invariants: Write overwrites nothing (a folder that exists must be
// empty, and each file is created exclusively); what it writes passes
// `stencil bundle lint` and `stencil test` as written, for a bundle that
// publishes a kind (Options.Kind) and for one used by Compositions, and
// asks for no permission (all it renders is namespaced, in the parent's
// namespace).
//
//	o := scaffold.Options{Name: "web", Kind: "WebApp", Group: "apps.example.com"}
//	if err := o.Check(); err != nil { ... }
//	files, err := scaffold.Write("web", o)
package scaffold
