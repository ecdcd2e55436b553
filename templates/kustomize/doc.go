// Package kustomize owns a bundle's kustomize post-processing: Run
// builds kustomization.yaml (File) with krusty over an in-memory
// filesystem of the rendered templates and the bundle's other files, no
// remote, no plugin, no file outside.
//
// krusty reaches past that filesystem in two ways and touches process-wide
// state in a third; each is closed here by construction rather than by
// recognising bad strings:
//
//   - A location (resource, base, component, patch, generator source, ...)
//     that kustomize parses as a git URL (it runs `git`) or an http(s) URL
//     (it calls http.Get). krusty cannot be given another cloner or HTTP
//     client, so instead every kustomization file is decoded, and written
//     back (confine) with each location replaced by a "./" or "../" path to
//     a file or folder of the bundle; kustomize's parsers never see such a
//     path as remote (no scheme, no user@, no github.com prefix).
//   - Plugins (exec and container functions, Go plugins) and Helm (the
//     `helm` program): the kustomization fields that configure them are
//     refused, and krusty runs with builtin plugins only and Helm disabled.
//   - openapi: kyaml keeps the schema in process-wide state, shared by every
//     render in the process; it is refused.
//
// # Invariants
//
//   - krusty reads the files given and nothing else: no git, no HTTP, no
//     plugin, no helm, no process-wide openapi schema.
//   - Every error is a *fault.RenderError naming the kustomization file.
//
// # Example
//
//	objs, err := kustomize.Run(map[string]string{
//		"kustomization.yaml":  "resources: [templates/cm.yaml]\n",
//		"templates/cm.yaml":   renderedConfigMap,
//	})
package kustomize
