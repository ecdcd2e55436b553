// Package wiring builds stencil's controllers on a manager, in the one
// place both `stencil controller` (package internal/cli/controller) and
// the test environment (package internal/testenv) build them: the engine
// first (package reconcile/engine), then each controller on it.
//
// Data flows one way: the API (package api/v1alpha1) is read by the
// engine's caches and loader; the controllers (the Composition
// controller and one per published kind: package reconcile; the Bundle
// controller: package published; the rollout controller: package
// rollout) run passes on the engine; each pass writes its parent's
// status. The admission webhook (package admission) reviews through the
// engine alone and imports no controller.
package wiring

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/migration"
	"github.com/stencil-dev/stencil/reconcile/published"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// Controllers are the controllers Setup built, on their engine.
type Controllers struct {
	// Engine is what every controller shares.
	Engine *engine.Engine
	// Compositions is the Composition controller.
	Compositions *reconcile.Controller
	// Kinds are the published kinds' controllers, which the Bundle
	// controller starts and stops.
	Kinds *published.Kinds
}

// Setup builds the engine of mgr with opts and, on it, the Composition
// controller, the Bundle controller with the published kinds'
// controllers, the rollout controller, the storage migration of the
// published kinds (package migration), and, when admit.Enabled, the
// admission webhook (on every replica: opts.EveryReplica is set for it;
// its renderer is the engine's unless admit gives one).
func Setup(ctx context.Context, mgr ctrl.Manager, opts engine.Options, admit admission.Options) (*Controllers, error) {
	opts.EveryReplica = opts.EveryReplica || admit.Enabled
	e, err := engine.New(mgr, opts)
	if err != nil {
		return nil, err
	}
	comps, err := reconcile.SetupWithManager(ctx, mgr, e)
	if err != nil {
		return nil, err
	}
	serve := func(ctx context.Context, kind engine.Kind) (<-chan struct{}, error) {
		return reconcile.ServeKind(ctx, e, kind)
	}
	convConfig := admit.ConfigName
	if convConfig == "" {
		convConfig = admission.DefaultWebhookConfigName
	}
	kinds, err := published.SetupWithManager(mgr, e, serve,
		published.Conversion{Enabled: admit.Enabled, ConfigName: convConfig, BaseEntry: admission.CompositionsWebhookName})
	if err != nil {
		return nil, err
	}
	// The rollouts of the Bundles' revisions to this shard's parents; the
	// published kinds' controllers tell it of their instances' changes.
	notifier := rollout.NewNotifier()
	e.SetRolloutNotifier(notifier)
	if err := rollout.SetupWithManager(mgr, &rollout.Reconciler{Client: mgr.GetClient(), Shard: e.Options.Shard, Parents: e, Loader: e, Order: e.Order}, notifier); err != nil {
		return nil, fmt.Errorf("build the rollout controller: %w", err)
	}
	// The storage migration of the published kinds (leader only).
	if err := migration.SetupWithManager(mgr, migration.Options{}); err != nil {
		return nil, err
	}
	if admit.Renderer == nil {
		admit.Renderer = e.Renderer
	}
	if admit.Version == "" {
		admit.Version = e.Options.Version
	}
	if err := admission.SetupWithManager(mgr, e, kinds, admit); err != nil {
		return nil, err
	}
	return &Controllers{Engine: e, Compositions: comps, Kinds: kinds}, nil
}
