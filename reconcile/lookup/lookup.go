package lookup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stencil-dev/stencil/reconcile/access"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	tlookup "github.com/stencil-dev/stencil/templates/lookup"
)

// Identity is who a lookup is made for: ServiceAccount Name of
// Namespace, or the controller itself when Name is "".
type Identity struct{ Namespace, Name string }

// Parent names a parent: its kind and key.
type Parent struct {
	Kind schema.GroupKind
	Key  types.NamespacedName
}

// Server answers lookups. Build it with New; Bind each parent kind's
// controller queue; it runs its informers until its context (Start's)
// ends.
type Server struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	access  *access.Checker

	mu        sync.Mutex
	ctx       context.Context
	informers map[informerKey]*informer
	// readers are the parents whose last render read an object, or a
	// list, of an informer: by informer, the object's name ("" for a
	// list) to the parents.
	readers map[informerKey]map[string]map[Parent]bool
	// reads are what each parent's last render read, to drop them from
	// readers when it reads anew.
	reads map[Parent][]readKey
	// denied are the lookups each parent's last render was refused (by
	// key), which Peek answers empty as Answers did.
	denied map[Parent]map[string]bool
	// queues are the controllers' queues, by parent kind.
	queues map[schema.GroupKind]workqueue.TypedRateLimitingInterface[reconcile.Request]
}

type informerKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

type readKey struct {
	inf  informerKey
	name string
}

type informer struct {
	inf    toolscache.SharedIndexInformer
	stop   context.CancelFunc
	synced bool
	// idle counts the janitor's rounds in a row that found no parent
	// reading from it.
	idle int
}

// idleRounds is how many rounds of the janitor (every idleCheck) an
// informer no parent reads from is kept: a parent that reads it again
// soon (a set re-rendered, a controller's restart of passes) finds it
// still synced.
const (
	idleCheck  = time.Minute
	idleRounds = 2
)

// New returns a Server reading with the controller's dynamic client,
// mapping kinds with mapper, and authorizing with checker.
func New(dc dynamic.Interface, mapper meta.RESTMapper, checker *access.Checker) *Server {
	return &Server{dynamic: dc, mapper: mapper, access: checker,
		informers: map[informerKey]*informer{}, readers: map[informerKey]map[string]map[Parent]bool{},
		reads: map[Parent][]readKey{}, denied: map[Parent]map[string]bool{}, queues: map[schema.GroupKind]workqueue.TypedRateLimitingInterface[reconcile.Request]{}}
}

// Start keeps the informers until ctx ends (a manager Runnable; every
// replica answers the lookups of its renders), and stops those no parent
// has read from for idleRounds rounds of idleCheck: what a chart looked
// up once is not cached for the life of the process.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	tick := time.NewTicker(idleCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			defer s.mu.Unlock()
			for k, i := range s.informers {
				i.stop()
				delete(s.informers, k)
			}
			return nil
		case <-tick.C:
			s.sweep()
		}
	}
}

// sweep stops the informers no parent has read from for idleRounds
// rounds.
func (s *Server) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, i := range s.informers {
		read := false
		for _, parents := range s.readers[k] {
			if len(parents) > 0 {
				read = true
				break
			}
		}
		if read {
			i.idle = 0
			continue
		}
		if i.idle++; i.idle >= idleRounds {
			i.stop()
			delete(s.informers, k)
			delete(s.readers, k)
			metrics.Lookups.WithLabelValues("informer-stopped").Inc()
		}
	}
}

// NeedLeaderElection is false: a render may run on any replica (the
// admission webhook's too).
func (s *Server) NeedLeaderElection() bool { return false }

// Bind sends the parents of kind whose looked-up objects change to queue.
func (s *Server) Bind(kind schema.GroupKind, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[kind] = queue
}

// Answers answers reads for identity who, fetching what an informer does
// not hold yet: the table a render of parent gets. Each read is
// authorized; one who may not make is answered empty and listed in
// denied, as the key and why. parent's reads are recorded, so a change of
// an object they name brings it back.
func (s *Server) Answers(ctx context.Context, parent Parent, who Identity, reads []tlookup.Read) (tlookup.Table, []string, error) {
	table := make(tlookup.Table, len(reads))
	var denied []string
	refused := map[string]bool{}
	var keys []readKey
	for _, r := range reads {
		obj, key, why, err := s.answer(ctx, who, r.Key)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			denied = append(denied, r.Key.String()+": "+why)
			refused[r.Key.String()] = true
			metrics.Lookups.WithLabelValues("denied").Inc()
		} else {
			metrics.Lookups.WithLabelValues("answered").Inc()
		}
		table[r.Key.String()] = obj
		if key.inf.gvr.Resource != "" {
			keys = append(keys, key)
		}
	}
	s.record(parent, keys, refused)
	sort.Strings(denied)
	return table, denied, nil
}

// Peek answers parent's reads from the informers alone, with no request
// and no access review (a pass that changes nothing compares its
// render's answers with them): a lookup parent's last Answers refused
// answers empty again, one of a kind the cluster does not serve empty;
// ok is false when an informer holds no answer yet. written are objects
// the pass has just written, as the API server returned them: they
// stand for their informer copies, which may lag (a chart that looks up
// what it applies sees its own write at once).
func (s *Server) Peek(parent Parent, reads []tlookup.Read, written ...*unstructured.Unstructured) (tlookup.Table, bool) {
	s.mu.Lock()
	refused := s.denied[parent]
	s.mu.Unlock()
	table := make(tlookup.Table, len(reads))
	for _, r := range reads {
		if refused[r.Key.String()] {
			table[r.Key.String()] = nil
			continue
		}
		inf, key, err := s.informerFor(r.Key)
		switch {
		case err != nil && (meta.IsNoMatchError(err) || errors.Is(err, errNotAVersion)):
			table[r.Key.String()] = nil
			continue
		case err != nil || inf == nil || !inf.synced:
			return nil, false
		}
		table[r.Key.String()] = overlay(read(inf, key, r.Key), r.Key, written)
	}
	return table, true
}

// overlay is answer with the objects of written that k names put in
// place of their copies: the object itself, or, in a list, each of its
// items.
func overlay(answer map[string]any, k tlookup.Key, written []*unstructured.Unstructured) map[string]any {
	var mine []*unstructured.Unstructured
	for _, w := range written {
		if w != nil && w.GetAPIVersion() == k.APIVersion && w.GetKind() == k.Kind &&
			(k.Namespace == "" || w.GetNamespace() == k.Namespace) && (k.List() || w.GetName() == k.Name) {
			mine = append(mine, w)
		}
	}
	if len(mine) == 0 {
		return answer
	}
	copyOf := func(w *unstructured.Unstructured) map[string]any {
		c := tlookup.DeepCopy(w.Object).(map[string]any)
		unstructured.RemoveNestedField(c, "metadata", "managedFields")
		return c
	}
	if !k.List() {
		return copyOf(mine[0])
	}
	items := map[string]any{}
	if answer != nil {
		list, _ := answer["items"].([]any)
		for _, it := range list {
			items[objectKey(it.(map[string]any))] = it
		}
	}
	for _, w := range mine {
		c := copyOf(w)
		items[objectKey(c)] = c
	}
	keys := make([]string, 0, len(items))
	for key := range items {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, key := range keys {
		out[i] = items[key]
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": out}
}

// Forget drops what parent read (it is gone).
func (s *Server) Forget(parent Parent) { s.record(parent, nil, nil) }

// errNotAVersion is a lookup whose apiVersion does not parse.
var errNotAVersion = errors.New("not an API version")

// answer answers one lookup for who.
func (s *Server) answer(ctx context.Context, who Identity, k tlookup.Key) (map[string]any, readKey, string, error) {
	gv, err := schema.ParseGroupVersion(k.APIVersion)
	if err != nil {
		return nil, readKey{}, "not an API version", nil //nolint:nilerr // the template's mistake, answered to it, not the pass's error
	}
	m, err := s.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: k.Kind}, gv.Version)
	if meta.IsNoMatchError(err) {
		return nil, readKey{}, "", nil // no such kind: nothing to read, as Helm answers
	} else if err != nil {
		return nil, readKey{}, "", fmt.Errorf("find the API of %s: %w", k.Kind, err)
	}
	ns := k.Namespace
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	verb := "get"
	if k.List() {
		verb = "list"
	}
	var denied *access.DeniedError
	switch err := s.authorize(ctx, who, m, ns, verb); {
	case errors.As(err, &denied):
		return nil, readKey{}, denied.Error(), nil
	case err != nil:
		return nil, readKey{}, "", err
	}
	if err := s.access.ControllerMay(ctx, m, "list", "watch"); errors.As(err, &denied) {
		return nil, readKey{}, denied.Error(), nil
	} else if err != nil {
		return nil, readKey{}, "", err
	}
	key := readKey{inf: informerKey{gvr: m.Resource, namespace: ns}, name: k.Name}
	inf, err := s.ensure(ctx, key.inf)
	if err != nil {
		return nil, readKey{}, "", err
	}
	return read(inf, key, k), key, "", nil
}

// authorize checks that who may verb the mapping's resource in ns.
func (s *Server) authorize(ctx context.Context, who Identity, m *meta.RESTMapping, ns, verb string) error {
	if who.Name == "" {
		return s.access.ControllerMay(ctx, m, verb)
	}
	return s.access.AccountMay(ctx, who.Namespace, who.Name, m, ns, verb)
}

// informerFor is the informer a lookup reads, nil when none runs yet.
func (s *Server) informerFor(k tlookup.Key) (*informer, readKey, error) {
	gv, err := schema.ParseGroupVersion(k.APIVersion)
	if err != nil {
		return nil, readKey{}, errNotAVersion
	}
	m, err := s.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: k.Kind}, gv.Version)
	if err != nil {
		return nil, readKey{}, err
	}
	ns := k.Namespace
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	key := readKey{inf: informerKey{gvr: m.Resource, namespace: ns}, name: k.Name}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.informers[key.inf], key, nil
}

// syncTimeout bounds the wait for a new informer's first list.
const syncTimeout = 30 * time.Second

// ensure returns the informer of k, started and synced.
func (s *Server) ensure(ctx context.Context, k informerKey) (*informer, error) {
	s.mu.Lock()
	if s.ctx == nil {
		s.mu.Unlock()
		return nil, errors.New("lookups: the server is not started")
	}
	inf, ok := s.informers[k]
	if !ok {
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.dynamic, 0, k.namespace, nil)
		shared := factory.ForResource(k.gvr).Informer()
		_ = shared.SetTransform(stripManagedFields)
		ictx, stop := context.WithCancel(s.ctx)
		inf = &informer{inf: shared, stop: stop}
		if _, err := shared.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.changed(k, o) },
			UpdateFunc: func(_, o any) { s.changed(k, o) },
			DeleteFunc: func(o any) { s.changed(k, o) },
		}); err != nil {
			s.mu.Unlock()
			stop()
			return nil, err
		}
		s.informers[k] = inf
		go shared.Run(ictx.Done())
		metrics.Lookups.WithLabelValues("informer").Inc()
	}
	s.mu.Unlock()
	if !inf.synced {
		sctx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if !toolscache.WaitForCacheSync(sctx.Done(), inf.inf.HasSynced) {
			return nil, fmt.Errorf("watch %s in %q for lookups: not synced", k.gvr, k.namespace)
		}
		s.mu.Lock()
		inf.synced = true
		s.mu.Unlock()
	}
	return inf, nil
}

// stripManagedFields drops managedFields from what an informer keeps.
func stripManagedFields(o any) (any, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return o, nil
}

// read answers lookup k from inf: a copy of the object, the list of its
// objects, or nil when there is nothing.
func read(inf *informer, key readKey, k tlookup.Key) map[string]any {
	store := inf.inf.GetStore()
	if key.name != "" {
		id := key.name
		if key.inf.namespace != "" {
			id = key.inf.namespace + "/" + key.name
		}
		o, ok, err := store.GetByKey(id)
		if err != nil || !ok {
			return nil
		}
		return tlookup.DeepCopy(o.(*unstructured.Unstructured).Object).(map[string]any)
	}
	objs := store.List()
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if k.Namespace != "" && u.GetNamespace() != k.Namespace {
			continue
		}
		items = append(items, tlookup.DeepCopy(u.Object))
	}
	if len(items) == 0 {
		return nil
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].(map[string]any), items[j].(map[string]any)
		return objectKey(a) < objectKey(b)
	})
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

func objectKey(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return ns + "/" + name
}

// record makes keys parent's reads, and refused its refused lookups, in
// place of its earlier ones.
func (s *Server) record(parent Parent, keys []readKey, refused map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(refused) > 0 {
		s.denied[parent] = refused
	} else {
		delete(s.denied, parent)
	}
	for _, k := range s.reads[parent] {
		if names := s.readers[k.inf]; names != nil {
			delete(names[k.name], parent)
		}
	}
	if len(keys) == 0 {
		delete(s.reads, parent)
		return
	}
	s.reads[parent] = keys
	for _, k := range keys {
		names := s.readers[k.inf]
		if names == nil {
			names = map[string]map[Parent]bool{}
			s.readers[k.inf] = names
		}
		if names[k.name] == nil {
			names[k.name] = map[Parent]bool{}
		}
		names[k.name][parent] = true
	}
}

// changed brings back the parents that read o (or listed its kind where
// it is) through their controllers' queues.
func (s *Server) changed(k informerKey, o any) {
	name := ""
	switch o := o.(type) {
	case *unstructured.Unstructured:
		name = o.GetName()
	case toolscache.DeletedFinalStateUnknown:
		if u, ok := o.Obj.(*unstructured.Unstructured); ok {
			name = u.GetName()
		} else if parts := strings.Split(o.Key, "/"); len(parts) > 0 {
			name = parts[len(parts)-1]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := s.readers[k]
	for _, n := range []string{name, ""} {
		for p := range names[n] {
			if q := s.queues[p.Kind]; q != nil {
				q.Add(reconcile.Request{NamespacedName: p.Key})
			}
		}
	}
}
