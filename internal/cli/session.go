package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/pull"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// session is what a command knows of the cluster: nothing (offline), or a
// client, a discovery client and a discovery-backed RESTMapper.
type session struct {
	scheme    *runtime.Scheme
	namespace string
	mapper    meta.RESTMapper
	// apis answers planning's questions about kinds: the cluster's, or
	// the built-in list offline.
	apis      plan.APIs
	client    client.Client                           // nil when offline
	discovery discovery.DiscoveryInterfaceWithContext // nil when offline
	// notes receives what the user should know that is not an error,
	// such as API groups that could not be discovered.
	notes io.Writer
	// controllerNamespace is the controller's namespace ("": the
	// install's, reconcile.DefaultNamespace); keyNoted, whether the note
	// that its key for generated values cannot be read was written.
	controllerNamespace string
	keyNoted            bool

	caps *templates.Capabilities // discovered once
	// pull pulls a --bundle that names a chart in a registry (nil: with
	// no credentials).
	pull *pull.Flags
}

// capabilities returns .Capabilities as the controller would give it to
// templates: discovered from the cluster (once per session), or
// cluster.OfflineCapabilities offline. API groups that could not be
// discovered (an aggregated API server that does not answer) are left
// out with a note, as the controller leaves them out.
func (s *session) capabilities(ctx context.Context) (*templates.Capabilities, error) {
	if s.discovery == nil {
		return cluster.OfflineCapabilities(), nil
	}
	if s.caps != nil {
		return s.caps, nil
	}
	caps, err := cluster.DiscoverCapabilities(ctx, s.discovery)
	if caps == nil {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(s.notes, "note: .Capabilities lacks what could not be discovered: %v\n", err)
	}
	s.caps = caps
	return caps, nil
}

// renderInput builds p's render input with plan.RenderInput, as the
// controller does: online, .Composition.UID and .Release.IsUpgrade come
// from the live parent of the same kind and name (none when it does not
// exist yet, or its kind is not served yet) and .Capabilities from
// discovery; offline, there is no UID, .Release.IsInstall is true and
// .Capabilities is the built-in list.
func (s *session) renderInput(ctx context.Context, p applyset.Parent) (templates.Input, error) {
	caps, err := s.capabilities(ctx)
	if err != nil {
		return templates.Input{}, err
	}
	var live *plan.LiveComposition
	if s.client != nil {
		// The whole object: .Release.IsUpgrade comes from the
		// controller's record in its status (see plan.Live).
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(p.ParentGVK())
		switch err := s.client.Get(ctx, client.ObjectKeyFromObject(p), u); {
		case err == nil:
			live = plan.Live(liveParent(p, u))
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			// Not created yet, or its kind (stencil, or the published
			// kind) is not served there: the controller's first render
			// is an install with no UID.
			fmt.Fprintf(s.notes, "note: %s does not exist yet: rendered as its first install (no .Composition.UID, .Release.IsInstall true)\n", parents.Describe(p))
		default:
			return templates.Input{}, fmt.Errorf("read the live %s (for .Composition.UID and .Release.IsUpgrade): %w", parents.Describe(p), err)
		}
	}
	return plan.RenderInput(p, live, caps), nil
}

// liveParent is the parent p as the cluster holds it (u, read whole):
// its metadata and status, with p's spec (plan.Live reads no spec).
func liveParent(p applyset.Parent, u *unstructured.Unstructured) applyset.Parent {
	return applyset.NewInstance(u, *p.ParentSpec())
}

// connect returns a session on the cluster of the kubeconfig flags, failing
// when it cannot be reached within a few seconds.
func connect(kube *genericclioptions.ConfigFlags) (*session, error) {
	s, err := offline(kube)
	if err != nil {
		return nil, err
	}
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Errorf("reach the cluster: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	if s.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if s.mapper, err = apiutil.NewDynamicRESTMapper(cfg, hc); err != nil {
		return nil, err
	}
	if s.client, err = client.New(cfg, client.Options{Scheme: s.scheme, Mapper: s.mapper}); err != nil {
		return nil, err
	}
	s.apis = cluster.NewAPIs(s.mapper, s.client)
	return s, nil
}

// offline returns a session with no cluster: the built-in kinds of
// templates.BuiltinKubeVersion and stencil's own.
func offline(kube *genericclioptions.ConfigFlags) (*session, error) {
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return nil, err
	}
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return &session{scheme: scheme, namespace: ns, mapper: cluster.OfflineRESTMapper(), apis: cluster.OfflineAPIs(), notes: io.Discard}, nil
}

// loadBundle loads the bundle named name: from a folder, a Bundle
// manifest or a chart in a registry (oci://..., URL#CHART[@VERSION],
// pulled as the controller pulls it) when from is set, else from the
// cluster.
func loadBundle(ctx context.Context, s *session, from, name string) (*templates.Bundle, error) {
	if src, _, ok, err := pull.ParseSource(from); ok {
		if err != nil {
			return nil, err
		}
		p := s.pull
		if p == nil {
			p = &pull.Flags{}
		}
		return p.Load(ctx, from, name, src)
	}
	if from == "" {
		if s.client == nil {
			return nil, fmt.Errorf("no --bundle given and no cluster to read Bundle %q from", name)
		}
		b := &v1alpha1.Bundle{}
		if err := s.client.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
			return nil, fmt.Errorf("read Bundle %s: %w", name, err)
		}
		return templates.LoadObject(b)
	}
	info, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return loadFolder(from, name)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict(data, b); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if b.Kind != "Bundle" {
		return nil, fmt.Errorf("%s is a %s, want a Bundle manifest or a bundle folder", from, b.Kind)
	}
	if b.Spec.Source != nil && len(b.Spec.Files) == 0 {
		// A Bundle of a chart in a registry: pulled as the controller
		// pulls it (its verify checked with --verify-key), with the
		// command's credentials (its Secrets are the controller's).
		p := s.pull
		if p == nil {
			if b.Spec.Source.Verify != nil {
				return nil, fmt.Errorf("%s: spec.source.verify is set and this command takes no --verify-key to check the chart's signature with; use stencil render --bundle %s --verify-key FILE", from, from)
			}
			p = &pull.Flags{}
		}
		return p.Load(ctx, from, name, b.Spec.Source)
	}
	b.Name = name
	return templates.LoadObject(b)
}

// bundleName is the name a folder's bundle gets by default.
func bundleName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Base(dir)
	}
	return filepath.Base(abs)
}
