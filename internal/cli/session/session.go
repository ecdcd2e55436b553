package session

import (
	"context"
	"fmt"
	"io"
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

	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/pull"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// Session is what a command knows of the cluster: nothing (offline), or a
// client, a discovery client and a discovery-backed RESTMapper.
type Session struct {
	// Scheme holds stencil's types and the built-in kinds
	// (engine.NewScheme).
	Scheme *runtime.Scheme
	// Namespace is the command's namespace: -n, else the kubeconfig's,
	// else "default".
	Namespace string
	// Mapper maps kinds to resources: the cluster's discovery, or the
	// built-in kinds offline.
	Mapper meta.RESTMapper
	// APIs answers planning's questions about kinds: the cluster's, or
	// the built-in list offline.
	APIs plan.APIs
	// Client reads and dry-runs as the user; nil when offline.
	Client    client.Client
	discovery discovery.DiscoveryInterfaceWithContext // nil when offline
	// Notes receives what the user should know that is not an error,
	// such as API groups that could not be discovered (io.Discard until
	// the command sets it).
	Notes io.Writer
	// ControllerNamespace is the controller's namespace ("": the
	// install's, engine.DefaultNamespace).
	ControllerNamespace string
	// keyNoted is whether the note that the controller's key for
	// generated values cannot be read was written.
	keyNoted bool

	caps *templates.Capabilities // discovered once
	// Pull pulls a --bundle that names a chart in a registry (nil: with
	// no credentials).
	Pull *pull.Flags
	// Fixture, offline only, answers in place of a cluster (see
	// UseFixture); nil: the offline defaults.
	Fixture *Fixture
}

// Capabilities returns .Capabilities as the controller would give it to
// templates: discovered from the cluster (once per session), or
// cluster.OfflineCapabilities offline. API groups that could not be
// discovered (an aggregated API server that does not answer) are left
// out with a note, as the controller leaves them out.
func (s *Session) Capabilities(ctx context.Context) (*templates.Capabilities, error) {
	if s.discovery == nil {
		if s.Fixture != nil && s.Fixture.Capabilities != nil {
			return s.Fixture.Capabilities, nil
		}
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
		fmt.Fprintf(s.Notes, "note: .Capabilities lacks what could not be discovered: %v\n", err)
	}
	s.caps = caps
	return caps, nil
}

// RenderInput builds p's render input with plan.RenderInput, as the
// controller does: online, .Composition.UID and .Release.IsUpgrade come
// from the live parent of the same kind and name (none when it does not
// exist yet, or its kind is not served yet) and .Capabilities from
// discovery; offline, there is no UID, .Release.IsInstall is true
// (unless the Fixture says Upgrade) and .Capabilities is the built-in
// list (or the Fixture's).
func (s *Session) RenderInput(ctx context.Context, p applyset.Parent) (templates.Input, error) {
	caps, err := s.Capabilities(ctx)
	if err != nil {
		return templates.Input{}, err
	}
	var live *plan.LiveComposition
	if s.Client != nil {
		// The whole object: .Release.IsUpgrade comes from the
		// controller's record in its status (see plan.Live).
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(p.ParentGVK())
		switch err := s.Client.Get(ctx, client.ObjectKeyFromObject(p), u); {
		case err == nil:
			live = plan.Live(liveParent(p, u))
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			// Not created yet, or its kind (stencil, or the published
			// kind) is not served there: the controller's first render
			// is an install with no UID.
			fmt.Fprintf(s.Notes, "note: %s does not exist yet: rendered as its first install (no .Composition.UID, .Release.IsInstall true)\n", parents.Describe(p))
		default:
			return templates.Input{}, fmt.Errorf("read the live %s (for .Composition.UID and .Release.IsUpgrade): %w", parents.Describe(p), err)
		}
	} else if s.Fixture != nil && s.Fixture.Upgrade {
		live = &plan.LiveComposition{Installed: true}
	}
	return plan.RenderInput(p, live, caps), nil
}

// liveParent is the parent p as the cluster holds it (u, read whole):
// its metadata and status, with p's spec (plan.Live reads no spec).
func liveParent(p applyset.Parent, u *unstructured.Unstructured) applyset.Parent {
	return applyset.NewInstance(u, *p.ParentSpec())
}

// Connect returns a session on the cluster of the kubeconfig flags, failing
// when it cannot be reached within a few seconds.
func Connect(kube *genericclioptions.ConfigFlags) (*Session, error) {
	s, err := Offline(kube)
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
	if s.Mapper, err = apiutil.NewDynamicRESTMapper(cfg, hc); err != nil {
		return nil, err
	}
	if s.Client, err = client.New(cfg, client.Options{Scheme: s.Scheme, Mapper: s.Mapper}); err != nil {
		return nil, err
	}
	s.APIs = cluster.NewAPIs(s.Mapper, s.Client)
	return s, nil
}

// Offline returns a session with no cluster: the built-in kinds of
// templates.BuiltinKubeVersion and stencil's own.
func Offline(kube *genericclioptions.ConfigFlags) (*Session, error) {
	scheme, err := engine.NewScheme()
	if err != nil {
		return nil, err
	}
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return &Session{Scheme: scheme, Namespace: ns, Mapper: cluster.OfflineRESTMapper(), APIs: cluster.OfflineAPIs(), Notes: io.Discard}, nil
}
