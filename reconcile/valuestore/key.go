package valuestore

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
)

// +kubebuilder:rbac:groups="",namespace=stencil-system,resources=secrets,verbs=get;list;watch;create;update;patch;delete

// KeySecretName is the Secret of the controller's namespace that holds
// the controller's key (field KeyField, KeySize random bytes): the key
// every set's key (Key.ForSet) is derived from. The controller makes it
// on first use; every replica and every shard of an install (they share
// the namespace) reads the same one.
const KeySecretName = "stencil-generated-key"

// KeyField is the data field of KeySecretName holding the key.
const KeyField = "key"

// KeySize is the size of the controller's key, in bytes.
const KeySize = 32

// KeyRecheck is how often a Keys that holds the key checks, on use, that
// its Secret is still there (and makes it again, with the same key, when
// it is not), and how soon a parent stalled on a KeyError looks again
// (a Secret restored raises no event of the parent's).
const KeyRecheck = time.Minute

// Key is the controller's key for generated values.
type Key struct{ secret []byte }

// ForSet is the key of set setID (templates.Input.GeneratedKey): an
// HMAC-SHA256 of the set's id keyed with the controller's key. It is
// stable for the life of the set's id (a parent deleted and made again
// under the same name, a namespace restored from a backup, keep their
// values) and no reader of a store can compute it.
func (k Key) ForSet(setID string) []byte {
	mac := hmac.New(sha256.New, k.secret)
	mac.Write([]byte("stencil.dev/generated-values/set\x00" + setID))
	return mac.Sum(nil)
}

// ID names the key without revealing it: the first 16 hexadecimal
// digits of an HMAC of a constant. Every store records the ID of the key
// its keys were made with (AnnotationKey).
func (k Key) ID() string {
	mac := hmac.New(sha256.New, k.secret)
	mac.Write([]byte("stencil.dev/generated-values/key-id"))
	return hex.EncodeToString(mac.Sum(nil))[:16]
}

// KeyError is a key that cannot be used: a store of the set was written
// with another key than the controller's (its Secret was deleted and
// made again, or replaced), or the Secret holds no key of KeySize bytes.
// The parent is Stalled (reason GeneratedKeyLost) and nothing is
// rendered, so no value is made anew in place of one the store keeps.
type KeyError struct {
	// Store names the store (Secret namespace/name), "" for the key's Secret.
	Store string
	// Want is the ID the store records, Have the controller key's.
	Want, Have string
	// Namespace is the controller's.
	Namespace string
	// Invalid says what is wrong with the key's Secret, when it is that.
	Invalid string
}

func (e *KeyError) Error() string {
	if e.Invalid != "" {
		return fmt.Sprintf("the controller's key for generated values, Secret %s/%s, %s: nothing is rendered, so no generated value is made anew; "+
			"restore the Secret from a backup, or delete it to have a new key made (then the stores made with the old one stall their sets)", e.Namespace, KeySecretName, e.Invalid)
	}
	return fmt.Sprintf("the store of generated values %s was written with key %s, and the controller's key (Secret %s/%s) is %s: "+
		"nothing is rendered, so no generated value is made anew; restore that Secret from a backup, "+
		"or delete the set's stores (stencil-generated-* Secrets labelled with its ApplySet id) to have every value generated again", e.Store, e.Want, e.Namespace, KeySecretName, e.Have)
}

// Keys holds the controller's key (Get): read from KeySecretName, or made
// there when it does not exist. Its methods may be called from several
// goroutines.
type Keys struct {
	// Client writes the Secret (the controller's own client).
	Client client.Client
	// Reader reads it live (the controller's API reader).
	Reader client.Reader
	// Namespace is the controller's (engine.Options.Namespace).
	Namespace string

	mu      sync.Mutex
	key     *Key
	checked time.Time
}

// Get returns the controller's key. The first call reads the Secret, or
// creates it with a new random key when there is none (two controllers
// racing make one: the loser reads the winner's). A Keys that holds the
// key checks again at most every minute that the Secret still holds it:
// one deleted is made again with the same key (logged), so deleting it
// while a controller runs loses nothing; one replaced is taken as it now
// is. A Secret holding no valid key is a *KeyError.
func (k *Keys) Get(ctx context.Context) (Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil && time.Since(k.checked) < KeyRecheck {
		return *k.key, nil
	}
	for range 2 {
		key, raced, err := k.load(ctx)
		if !raced {
			return key, err
		}
	}
	return Key{}, fmt.Errorf("read Secret %s/%s: made and gone again", k.Namespace, KeySecretName)
}

// load reads the key's Secret, or creates it; raced is true when another
// created it first (it is to be read again).
func (k *Keys) load(ctx context.Context) (_ Key, raced bool, _ error) {
	live := &corev1.Secret{}
	err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: KeySecretName}, live)
	switch {
	case apierrors.IsNotFound(err):
		secret := make([]byte, KeySize)
		if k.key != nil {
			copy(secret, k.key.secret)
			ctrl.LoggerFrom(ctx).Info("the Secret of the key for generated values was deleted: making it again with the key held", "namespace", k.Namespace, "name", KeySecretName)
		} else if _, err := rand.Read(secret); err != nil {
			return Key{}, false, fmt.Errorf("make the key for generated values: %w", err)
		}
		err := k.create(ctx, secret)
		switch {
		case apierrors.IsAlreadyExists(err):
			return Key{}, true, nil
		case err != nil:
			return Key{}, false, fmt.Errorf("create Secret %s/%s: %w", k.Namespace, KeySecretName, err)
		}
		k.key, k.checked = &Key{secret: secret}, time.Now()
		return *k.key, false, nil
	case err != nil:
		if k.key != nil {
			return *k.key, false, nil // held: a failed check is tried again on the next use
		}
		return Key{}, false, fmt.Errorf("read Secret %s/%s: %w", k.Namespace, KeySecretName, err)
	}
	secret := live.Data[KeyField]
	if len(secret) != KeySize {
		return Key{}, false, &KeyError{Namespace: k.Namespace, Invalid: fmt.Sprintf("holds no key of %d bytes in its field %q", KeySize, KeyField)}
	}
	k.key, k.checked = &Key{secret: secret}, time.Now()
	return *k.key, false, nil
}

// create creates the Secret of the key.
func (k *Keys) create(ctx context.Context, secret []byte) error {
	return k.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: KeySecretName,
			Annotations: map[string]string{"stencil.dev/description": "the controller's key for the stores of generated values (stencil-generated-*): keep it, and back it up; " +
				"without it no store can be read, and their sets stall (GeneratedKeyLost) rather than make their values anew"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KeyField: secret},
	})
}

// NewKey returns the key secret (KeySize bytes), for tests and `stencil
// render`, which reads the Secret as the user.
func NewKey(secret []byte) (Key, error) {
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("a key for generated values is %d bytes, not %d", KeySize, len(secret))
	}
	return Key{secret: secret}, nil
}
