package serving

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Names the certificate machinery writes under. Constant forever: a
// renamed field manager leaves its fields owned and never removed.
const (
	// certRotatorFieldOwner is the field manager of the caBundle the
	// rotator injects into the webhook configuration.
	certRotatorFieldOwner = "stencil-cert-rotator"
	// certRotatorController names cert-controller's controller.
	certRotatorController = "webhook-cert-rotator"
	// certCAName is the common name of the CA the rotator makes.
	certCAName = "stencil-webhook-ca"
)

// Keys of the certificate Secret the webhook server reads, as files of
// CertDir (cert-controller's and controller-runtime's defaults).
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// setupRotation creates the certificate Secret when it is missing, adds
// cert-controller's rotator (on every replica: RequireLeaderElection
// false) and the writer of CertDir to mgr.
//
// The rotator keeps a CA (10 years) and a serving certificate (1 year,
// renewed 90 days before it expires) for DNSName() in the Secret, checks
// them every 12 hours and on every change of the Secret, and injects the CA
// into every entry of the configuration whenever the configuration
// changes, so an entry added later (the Bundle controller's published.stencil.dev)
// gets it too. It closes Ready once the files are in CertDir and the CA is
// injected.
func (s *Serving) setupRotation(ctx context.Context, mgr ctrl.Manager, c cache.Cache) error {
	o := s.opts
	if err := ensureCertSecret(ctx, mgr.GetClient(), o); err != nil {
		return err
	}
	var extra []string
	if o.Host == "" {
		extra = []string{o.Service, o.Service + "." + o.Namespace, o.DNSName() + ".cluster.local"}
	}
	if err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:             types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
		CertDir:               o.CertDir,
		CAName:                certCAName,
		CAOrganization:        "stencil",
		DNSName:               o.DNSName(),
		ExtraDNSNames:         extra,
		IsReady:               s.ready,
		Webhooks:              []rotator.WebhookInfo{{Name: o.ConfigName, Type: rotator.Validating}, {Name: o.mutatingConfigName(), Type: rotator.Mutating}},
		FieldOwner:            certRotatorFieldOwner,
		RequireLeaderElection: false,
		ControllerName:        certRotatorController,
	}); err != nil {
		return fmt.Errorf("add the webhook certificate rotator: %w", err)
	}
	return setupCertFiles(mgr, o, c)
}

// ensureCertSecret creates the (empty) certificate Secret the rotator
// fills, when it does not exist: cert-controller updates the Secret but
// never creates it.
func ensureCertSecret(ctx context.Context, c client.Client, o ServingOptions) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: o.SecretName, Namespace: o.Namespace, Labels: map[string]string{
			"app.kubernetes.io/name":       "stencil",
			"app.kubernetes.io/component":  "webhook",
			"app.kubernetes.io/managed-by": "stencil",
		}},
		Type: corev1.SecretTypeOpaque,
	}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the webhook certificate Secret %s/%s (--webhook-cert-secret, --webhook-namespace; --webhook-port=0 serves no webhook): %w", o.Namespace, o.SecretName, err)
	}
	return nil
}

// servingCache is a cache of the certificate Secret and the webhook
// configuration alone (by name), started on every replica.
type servingCache struct{ cache.Cache }

// NeedLeaderElection is false: every replica serves the webhook.
func (servingCache) NeedLeaderElection() bool { return false }

// newServingCache adds to mgr a cache holding only the Secret and the
// configurations of o (validating and mutating), so the controller neither caches every Secret nor
// every webhook configuration of the cluster.
func newServingCache(mgr ctrl.Manager, o ServingOptions) (cache.Cache, error) {
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}, Field: byName(o.SecretName)},
			&admissionregistrationv1.ValidatingWebhookConfiguration{}: {Field: byName(o.ConfigName)},
			&admissionregistrationv1.MutatingWebhookConfiguration{}:   {Field: byName(o.mutatingConfigName())},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create the webhook serving cache: %w", err)
	}
	if err := mgr.Add(servingCache{c}); err != nil {
		return nil, fmt.Errorf("add the webhook serving cache: %w", err)
	}
	return c, nil
}

// certFilesWriter writes the serving certificate and key from the Secret
// into CertDir, where the webhook server (and the rotator's own check)
// read them; the server reloads them when they change. Writing them
// rather than mounting the Secret as a volume serves at once (the kubelet
// takes up to a minute to project a new Secret) and works the same when
// the controller runs outside the cluster (`make run`).
type certFilesWriter struct {
	cache client.Reader
	key   types.NamespacedName
	dir   string
}

func setupCertFiles(mgr ctrl.Manager, o ServingOptions, c cache.Cache) error {
	w := &certFilesWriter{cache: c, key: types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}, dir: o.CertDir}
	return builder.ControllerManagedBy(mgr).
		Named("webhook-cert-files").
		WatchesRawSource(source.Kind(c, &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1}).
		Complete(w)
}

// Reconcile writes tls.crt and tls.key of the Secret into the folder when
// they differ from the files there. A Secret not yet filled by the
// rotator writes nothing.
func (w *certFilesWriter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.NamespacedName != w.key {
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{}
	if err := w.cache.Get(ctx, req.NamespacedName, secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	crt, key := secret.Data[certFile], secret.Data[keyFile]
	if len(crt) == 0 || len(key) == 0 {
		return ctrl.Result{}, nil
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return ctrl.Result{}, fmt.Errorf("create the webhook certificate folder %s: %w", w.dir, err)
	}
	// The key first: the server reloads when the certificate changes.
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{keyFile, key, 0o600}, {certFile, crt, 0o644}} {
		changed, err := writeFileAtomic(filepath.Join(w.dir, f.name), f.data, f.mode)
		if err != nil {
			return ctrl.Result{}, err
		}
		if changed {
			ctrl.LoggerFrom(ctx).Info("wrote the webhook serving certificate", "file", filepath.Join(w.dir, f.name))
		}
	}
	return ctrl.Result{}, nil
}

// writeFileAtomic replaces path by data, through a temporary file renamed
// over it, unless it already holds data; it reports whether it wrote.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	// Best effort: once renamed there is nothing to remove (ENOENT); before
	// that, a failed removal leaves a dot file and the write's own error
	// is the one reported.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close() // the file is discarded; the write error is the one reported
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close() // the file is discarded; the chmod error is the one reported
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
