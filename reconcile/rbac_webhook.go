package reconcile

// The webhook serving certificate (Serving): cert-controller's rotator
// injects the CA into the ValidatingWebhookConfiguration, watching it
// (cluster-wide: its cache lists every configuration), and the loopback
// mode points its entries at the controller's URL. The certificate Secret
// is namespaced: config/rbac/webhook_cert.yaml grants it in the
// controller's namespace only.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;update;patch
