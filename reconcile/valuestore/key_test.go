package valuestore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// TestKeys (issue 37 item 2): the controller's key is made on first use
// and read by every later Keys (another replica, another shard); a
// deleted Secret is made again with the key held, never with a new one;
// a Secret holding no key is a KeyError. Each set's key is its own, and
// the key's ID reveals nothing of it.
func TestKeys(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	first := &valuestore.Keys{Client: c, Reader: c, Namespace: "stencil-system"}
	k1, err := first.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "stencil-system", Name: valuestore.KeySecretName}, secret); err != nil {
		t.Fatalf("the key's Secret: %v", err)
	}
	if len(secret.Data[valuestore.KeyField]) != valuestore.KeySize {
		t.Fatalf("the key's Secret holds %d bytes, want %d", len(secret.Data[valuestore.KeyField]), valuestore.KeySize)
	}
	other := &valuestore.Keys{Client: c, Reader: c, Namespace: "stencil-system"}
	k2, err := other.Get(ctx)
	if err != nil || k2.ID() != k1.ID() {
		t.Fatalf("another controller's key: %v, ID %s; want the same key %s", err, k2.ID(), k1.ID())
	}

	if bytes.Equal(k1.ForSet("set-a"), k1.ForSet("set-b")) || !bytes.Equal(k1.ForSet("set-a"), k2.ForSet("set-a")) {
		t.Errorf("set keys: want one per set, the same from every controller")
	}
	if bytes.Contains([]byte(k1.ID()), secret.Data[valuestore.KeyField]) || len(k1.ID()) != 16 {
		t.Errorf("the key's ID %q: want 16 hexadecimal digits, not the key", k1.ID())
	}

	// Deleted while a controller holds it: made again with the same key
	// (by a Keys past its recheck: a new one that read it before).
	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	fresh := &valuestore.Keys{Client: c, Reader: c, Namespace: "stencil-system"}
	valuestore.HoldKey(fresh, k1)
	if k, err := fresh.Get(ctx); err != nil || k.ID() != k1.ID() {
		t.Fatalf("after the Secret was deleted: %v, ID %s; want the key held, %s", err, k.ID(), k1.ID())
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil || len(secret.Data[valuestore.KeyField]) != valuestore.KeySize {
		t.Fatalf("the Secret was not made again: %v", err)
	}
	if again, err := (&valuestore.Keys{Client: c, Reader: c, Namespace: "stencil-system"}).Get(ctx); err != nil || again.ID() != k1.ID() {
		t.Errorf("the Secret made again holds another key: %v", err)
	}

	broken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: valuestore.KeySecretName}, Data: map[string][]byte{valuestore.KeyField: []byte("short")}}
	if err := c.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	_, err = (&valuestore.Keys{Client: c, Reader: c, Namespace: "elsewhere"}).Get(ctx)
	var keyErr *valuestore.KeyError
	if !errors.As(err, &keyErr) {
		t.Errorf("a Secret with no valid key: %v, want a KeyError", err)
	}
	if _, err := valuestore.NewKey([]byte("short")); err == nil {
		t.Errorf("NewKey took a short key")
	}
}
