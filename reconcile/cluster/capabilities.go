package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stencil-dev/stencil/templates"
)

// The controller watches CRDs and APIServices (metadata only) to learn
// when the served APIs change.
//
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;list;watch

// DiscoverCapabilities asks the API server what it serves, as .Capabilities
// gives it to templates: KubeVersion from /version; APIVersions holds every
// served group/version ("apps/v1") and group/version/kind
// ("apps/v1/Deployment"; subresources are not kinds of their own),
// sorted. The controller and `stencil render`/`diff` both use it.
//
// When some API groups cannot be discovered (an aggregated API server that
// does not answer), it returns what was discovered together with an error
// naming the groups that failed; any other failure returns no
// capabilities.
func DiscoverCapabilities(ctx context.Context, dc discovery.DiscoveryInterfaceWithContext) (*templates.Capabilities, error) {
	info, err := dc.ServerVersionWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover the server's version: %w", err)
	}
	groups, lists, err := discovery.ServerGroupsAndResourcesWithContext(ctx, dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover the served APIs: %w", err)
	}
	caps := &templates.Capabilities{KubeVersion: templates.KubeVersion{Version: info.GitVersion, Major: info.Major, Minor: info.Minor}}
	if v, perr := version.ParseGeneric(info.GitVersion); perr == nil && (caps.KubeVersion.Major == "" || caps.KubeVersion.Minor == "") {
		caps.KubeVersion.Major, caps.KubeVersion.Minor = fmt.Sprint(v.Major()), fmt.Sprint(v.Minor())
	}
	for _, g := range groups {
		for _, v := range g.Versions {
			caps.APIVersions = append(caps.APIVersions, v.GroupVersion)
		}
	}
	for _, l := range lists {
		group := ""
		if gv, err := schema.ParseGroupVersion(l.GroupVersion); err == nil {
			group = gv.Group
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") && r.Kind != "" {
				caps.APIVersions = append(caps.APIVersions, l.GroupVersion+"/"+r.Kind)
				if !r.Namespaced && !templates.BuiltinClusterScoped(group, r.Kind) {
					caps.ClusterScopedKinds = append(caps.ClusterScopedKinds, group+"/"+r.Kind)
				}
			}
		}
	}
	if err != nil {
		return normalizeCapabilities(caps), fmt.Errorf("discover the served APIs: %w", err)
	}
	return normalizeCapabilities(caps), nil
}

// normalizeCapabilities sorts the API versions and drops repeats, so equal
// capabilities print (and hash) the same.
func normalizeCapabilities(caps *templates.Capabilities) *templates.Capabilities {
	slices.Sort(caps.APIVersions)
	caps.APIVersions = slices.Clip(slices.Compact(caps.APIVersions))
	slices.Sort(caps.ClusterScopedKinds)
	caps.ClusterScopedKinds = slices.Clip(slices.Compact(caps.ClusterScopedKinds))
	return caps
}

// capabilitiesRevision identifies a set of capabilities: a render memo key
// holding it changes when an API comes or goes.
func capabilitiesRevision(caps *templates.Capabilities) string {
	h := sha256.New()
	// A hash.Hash never returns an error from Write.
	_, _ = fmt.Fprintf(h, "%s\x00%s\x00%s\x00", caps.KubeVersion.Version, caps.KubeVersion.Major, caps.KubeVersion.Minor)
	for _, v := range append(slices.Clone([]string(caps.APIVersions)), caps.ClusterScopedKinds...) {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Snapshot is what the cluster served when last discovered.
type Snapshot struct {
	Caps     *templates.Capabilities
	Revision string
}

// capabilitiesSettle is how long the controller waits after a CRD or an
// APIService changed before it discovers again, so that a burst of
// changes (a chart installing fifty CRDs, a CRD's creation followed by
// its Established status) costs one discovery.
const capabilitiesSettle = time.Second

// Capabilities keeps the controller's view of what the cluster serves.
// Renders read the snapshot and never call discovery themselves (but for
// the very first one). It is refreshed when a CustomResourceDefinition or
// an APIService is created, changed (a new version, the Established or
// Available condition) or deleted, which a metadata-only watch on both
// reports; refreshes are at least capabilitiesSettle apart. When a refresh
// finds other capabilities than before, every Composition is queued
// (changed), and its render memo key, which holds the revision, no longer
// matches.
type Capabilities struct {
	discover func(context.Context) (*templates.Capabilities, error)
	// metadata lists and watches CRDs and APIServices; nil in tests that
	// refresh by hand.
	metadata metadata.Interface

	mu      sync.Mutex // serializes discovery
	current atomic.Pointer[Snapshot]
	stale   chan struct{} // holds one token when a watched object changed
	// subs are the controllers told of a change (subscribe): the
	// Composition controller and those of the published kinds.
	subsMu sync.Mutex
	subs   map[chan event.GenericEvent]bool
}

// subscribe returns a channel told of each change of the
// served APIs, until ctx ends.
func (c *Capabilities) Subscribe(ctx context.Context) <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 1)
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	if c.subs == nil {
		c.subs = map[chan event.GenericEvent]bool{}
	}
	c.subs[ch] = true
	context.AfterFunc(ctx, func() {
		c.subsMu.Lock()
		defer c.subsMu.Unlock()
		delete(c.subs, ch)
	})
	return ch
}

// notify tells every subscriber that the served APIs changed. A
// subscriber that has a notice pending has its requeue of every parent
// pending already.
func (c *Capabilities) notify() {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	for ch := range c.subs {
		select {
		case ch <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{}}:
		default:
		}
	}
}

func newCapabilitiesCache(dc discovery.DiscoveryInterfaceWithContext, md metadata.Interface) *Capabilities {
	return &Capabilities{
		discover: func(ctx context.Context) (*templates.Capabilities, error) { return DiscoverCapabilities(ctx, dc) },
		metadata: md,
		stale:    make(chan struct{}, 1),
	}
}

// get returns the current capabilities, discovering them if no refresh
// has yet.
func (c *Capabilities) Get(ctx context.Context) (*Snapshot, error) {
	if s := c.current.Load(); s != nil {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.current.Load(); s != nil {
		return s, nil // another render discovered them meanwhile
	}
	s, _, err := c.refreshLocked(ctx)
	return s, err
}

// refresh discovers the capabilities and reports whether they differ from
// the last ones. A partial discovery (an aggregated API that does not
// answer) is kept, and logged: the group's APIService changes when it
// answers again, which refreshes once more.
func (c *Capabilities) refresh(ctx context.Context) (*Snapshot, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refreshLocked(ctx)
}

func (c *Capabilities) refreshLocked(ctx context.Context) (*Snapshot, bool, error) {
	caps, err := c.discover(ctx)
	if caps == nil {
		return nil, false, err
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("some APIs could not be discovered; .Capabilities lacks them", "error", err.Error())
	}
	s := &Snapshot{Caps: caps, Revision: capabilitiesRevision(caps)}
	old := c.current.Swap(s)
	return s, old != nil && old.Revision != s.Revision, nil
}

// markStale records that the served APIs may have changed.
func (c *Capabilities) markStale() {
	select {
	case c.stale <- struct{}{}:
	default:
	}
}

// Start watches CRDs and APIServices and refreshes the capabilities after
// they change, until ctx ends. It runs on the leader, with the controller.
func (c *Capabilities) Start(ctx context.Context) error {
	factory := metadatainformer.NewSharedInformerFactory(c.metadata, 0)
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.markStale() },
		UpdateFunc: func(any, any) { c.markStale() },
		DeleteFunc: func(any) { c.markStale() },
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
	} {
		inf := factory.ForResource(gvr).Informer()
		if err := inf.SetTransform(StripManagedFields); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watch %s: %w", gvr.GroupResource(), err)
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.stale:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(capabilitiesSettle):
		}
		_, changed, err := c.refresh(ctx)
		switch {
		case errors.Is(err, context.Canceled):
			return nil
		case err != nil:
			ctrl.LoggerFrom(ctx).Error(err, "refresh the served APIs; retrying")
			c.markStale()
		case changed:
			c.notify()
		}
	}
}

// NewManagerCapabilities returns the capabilities cache of a manager's
// controller, started (and stopped) with the manager: on the leader, or
// on every replica when everyReplica (the admission webhook, served by
// every replica, renders too).
func NewManagerCapabilities(mgr ctrl.Manager, everyReplica bool) (*Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	c := newCapabilitiesCache(dc, md)
	if everyReplica {
		return c, mgr.Add(everyReplicaRunnable{c})
	}
	return c, mgr.Add(c)
}

// everyReplicaRunnable runs a Runnable on every replica, not only the leader.
type everyReplicaRunnable struct{ manager.Runnable }

// NeedLeaderElection is false.
func (everyReplicaRunnable) NeedLeaderElection() bool { return false }
