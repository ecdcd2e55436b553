package flags

import (
	"github.com/spf13/pflag"

	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// Plan are the flags of the commands that plan parents as the controller
// would, render and diff: where the parents and their Bundle come from,
// the render limits and the controller's namespace.
type Plan struct {
	// File is -f: a file of Compositions and instances of published
	// kinds ("-" for stdin); for diff, or one Bundle manifest.
	File string
	// Bundle is --bundle: a bundle folder, a Bundle manifest or a chart in
	// a registry, rendered instead of the cluster's Bundle.
	Bundle string
	// Offline is --offline: render without a cluster (render only).
	Offline bool
	// Render are the limits of every render (--render-*).
	Render Render
	// ControllerNamespace is --controller-namespace: where the controller
	// keeps the key of its generated values (package reconcile/valuestore)
	// and the order of its rollouts in waves.
	ControllerNamespace string
}

// Add adds -f, --bundle, the --render-* flags, --controller-namespace
// and, when offline is set, --offline to fl.
func (f *Plan) Add(fl *pflag.FlagSet, offline bool) {
	fl.StringVarP(&f.File, "filename", "f", "", "file holding one or more Compositions or instances of published kinds (- for stdin)")
	fl.StringVar(&f.Bundle, "bundle", "", "bundle folder, Bundle manifest or chart (oci://HOST/PATH:TAG, oci://HOST/PATH@sha256:HEX, https://REPO#CHART[@VERSION]) to render instead of the cluster's Bundle (for an instance, it must publish the instance's kind)")
	if offline {
		fl.BoolVar(&f.Offline, "offline", false, "do not contact a cluster (needs --bundle; only built-in kinds and CRDs in the bundle)")
	}
	f.Render.Add(fl)
	fl.StringVar(&f.ControllerNamespace, "controller-namespace", engine.DefaultNamespace, "the controller's namespace: where it keeps the key of the generated values it keeps and, for diff --bundle, the order of a rollout in waves ("+rollout.OrderSecret+"), read as you when you may")
}
