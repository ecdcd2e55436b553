package rollout

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",namespace=stencil-system,resources=secrets,verbs=get;create

// The order parents move in: a keyed hash of each parent's name, under a
// key only the controller holds, so that no tenant chooses its place in
// the batches (a parent named to sort first, to fail the first wave): the
// hash of a name cannot be computed, nor a name found that sorts first,
// without the key. The key is the same in every shard and replica (one
// Secret), so every process ranks a parent alike.

// OrderSecret is the Secret, in the controller's namespace, that keeps the
// key of the order (its data key OrderSecretKey): made by the controller
// when missing, read by the controller only (and by whoever the cluster
// admin lets read the namespace's Secrets: `stencil diff --bundle` shows
// the batches' members only to them).
const (
	OrderSecret    = "stencil-rollout-order"
	OrderSecretKey = "key"
)

// Order ranks the parents of rollouts.
type Order struct{ key []byte }

// NewOrder is the order of key. The zero Order's key is empty: an order
// anyone can compute, for tests and for a CLI that cannot read the key.
func NewOrder(key []byte) Order { return Order{key: key} }

// Keyed reports whether o has a key.
func (o Order) Keyed() bool { return len(o.key) > 0 }

// Rank is k's place in the order every rollout of Bundle bundle moves
// parents in: 16 hex digits of HMAC-SHA256, under o's key, of the
// Bundle's name and the parent's kind, namespace and name; the same in
// every rollout, shard and process, and known to a parent's pass without
// a list of the others.
func (o Order) Rank(bundle string, k Key) string {
	h := hmac.New(sha256.New, o.key)
	h.Write([]byte(bundle + "\x00" + k.Kind + "\x00" + k.Namespace + "\x00" + k.Name))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Ranked reports whether b's rollout of shard places a parent by its
// rank: a rollout under way whose batches moved some parents and not all.
// Only then does a parent's assignment need the Order (so a Bundle that
// rolls out all at once never waits for the key).
func Ranked(b *v1alpha1.Bundle, shard string) bool {
	st := Find(b, shard)
	return st != nil && st.Target != "" && st.Bound != "" && st.Bound != boundAll
}

// OrderKey gives the Order of the controller's key, read from OrderSecret
// (made, with 32 random bytes, when it does not exist) once and kept.
type OrderKey struct {
	// Client makes the Secret, as the controller.
	Client client.Client
	// Reader reads it live (the manager's API reader: no Secret is
	// cached).
	Reader client.Reader
	// Namespace is the controller's own.
	Namespace string

	mu    sync.Mutex
	order *Order
}

// Order returns the controller's Order; an error (to retry) while the
// Secret can be neither read nor made.
func (k *OrderKey) Order(ctx context.Context) (Order, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.order != nil {
		return *k.order, nil
	}
	key, err := k.read(ctx)
	if apierrors.IsNotFound(err) {
		key, err = k.make(ctx)
	}
	if err != nil {
		return Order{}, err
	}
	o := NewOrder(key)
	k.order = &o
	return o, nil
}

// Start reads (or makes) the key as the controller starts, so that the
// Secret exists before any rollout in waves needs it (and `stencil diff
// --bundle` can show a new version's batches), trying again every
// orderRetry until it succeeds or ctx ends. A failure is logged: the
// passes that need the Order report it themselves.
func (k *OrderKey) Start(ctx context.Context) error {
	for {
		_, err := k.Order(ctx)
		if err == nil {
			return nil
		}
		ctrl.LoggerFrom(ctx).Error(err, "read the rollout order's key")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(orderRetry):
		}
	}
}

// NeedLeaderElection is false: every replica ranks parents.
func (k *OrderKey) NeedLeaderElection() bool { return false }

// orderRetry is how long OrderKey.Start waits between tries.
const orderRetry = 10 * time.Second

// read reads the key from the Secret.
func (k *OrderKey) read(ctx context.Context) ([]byte, error) {
	s := &corev1.Secret{}
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: OrderSecret}, s); err != nil {
		return nil, err
	}
	key := s.Data[OrderSecretKey]
	if len(key) < 16 {
		return nil, fmt.Errorf("the rollout order's Secret %s/%s holds no key %q of at least 16 bytes: delete it, and the controller makes another", k.Namespace, OrderSecret, OrderSecretKey)
	}
	return key, nil
}

// make makes the Secret with a new key; another process that made it
// first wins, and its key is read.
func (k *OrderKey) make(ctx context.Context) ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: OrderSecret, Labels: map[string]string{
			"app.kubernetes.io/name":       "stencil",
			"app.kubernetes.io/component":  "rollout",
			"app.kubernetes.io/managed-by": "stencil",
		}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{OrderSecretKey: key},
	}
	switch err := k.Client.Create(ctx, s); {
	case apierrors.IsAlreadyExists(err):
		return k.read(ctx)
	case err != nil:
		return nil, fmt.Errorf("make the rollout order's Secret %s/%s: %w", k.Namespace, OrderSecret, err)
	}
	return key, nil
}
