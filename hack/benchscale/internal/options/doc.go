// Package options is benchscale's command line: the Options every part
// of the run reads, the flags that set them (Register) and what must hold
// of them (Validate). The defaults of -concurrency, -apply-concurrency,
// -qps and -burst are the controller's (internal/cli/controller).
package options
