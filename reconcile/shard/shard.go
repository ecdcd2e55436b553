package shard

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Label is the label that assigns a Composition to a shard: a
// controller started with Options.Shard NAME reconciles only the
// Compositions labelled stencil.dev/shard=NAME, and an unsharded controller
// only those without the label (Flux's sharding.fluxcd.io/key convention).
const Label = "stencil.dev/shard"

// Validate checks a shard name: empty (unsharded) or a DNS-1123 label,
// so it is both a label value and part of the leader election Lease's name.
func Validate(shard string) error {
	if shard == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(shard); len(errs) > 0 {
		return fmt.Errorf("--shard %q: %s", shard, strings.Join(errs, "; "))
	}
	return nil
}

// Selector selects the Compositions of shard: those labelled
// stencil.dev/shard=shard, or for the unsharded controller (shard "") those
// without the label.
func Selector(shard string) labels.Selector {
	op, values := selection.DoesNotExist, []string(nil)
	if shard != "" {
		op, values = selection.In, []string{shard}
	}
	req, err := labels.NewRequirement(Label, op, values)
	if err != nil {
		// Only an invalid shard name fails, and Validate refuses it
		// first; selecting nothing keeps another shard's Compositions out.
		return labels.Nothing()
	}
	return labels.NewSelector().Add(*req)
}

// Serves reports whether shard's controller serves a Composition with
// these labels.
func Serves(shard string, compLabels map[string]string) bool {
	return Selector(shard).Matches(labels.Set(compLabels))
}

// LeaderElectionID is the name of the leader election Lease of shard's
// controllers: each shard elects its own leader.
func LeaderElectionID(shard string) string {
	if shard == "" {
		return "stencil.stencil.dev"
	}
	return "stencil-shard-" + shard + ".stencil.dev"
}

// CacheOptions returns the manager cache options stencil needs:
// the Compositions of shard only (see Selector), so another shard's
// Compositions never enter the cache and every path to a reconcile (the
// Composition's own watch, a member's or a Bundle's change mapped to its
// Compositions) goes through the shard; Bundles, their revisions and
// Namespaces (for Bundles' spec.namespaceSelector) cached whole; every other
// kind only where it carries the ApplySet part-of label, so the cache holds
// stencil's members and nothing else.
func CacheOptions(shard string) cache.Options {
	partOf, _ := labels.NewRequirement(applyset.LabelPartOf, selection.Exists, nil)
	return cache.Options{
		DefaultLabelSelector: labels.NewSelector().Add(*partOf),
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.Composition{}: {Label: Selector(shard)},
			&v1alpha1.Bundle{}:      {Label: labels.Everything()},
			// Every BundleRevision: parents render the one they are on.
			&v1alpha1.BundleRevision{}: {Label: labels.Everything()},
			// Every Namespace: a Bundle's spec.namespaceSelector is checked
			// against its labels.
			&corev1.Namespace{}: {Label: labels.Everything()},
		},
	}
}
