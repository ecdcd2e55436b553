package reconcile

import "time"

// TEMPORARY: the declarations the "admission" branch defines (RULES12.md),
// copied so the certs branch compiles before it lands; deleted on merge.

// WebhookPath is the admission handler's path on the webhook server.
const WebhookPath = "/validate-stencil"

// DefaultWebhookConfigName is the ValidatingWebhookConfiguration's name.
const DefaultWebhookConfigName = "stencil-validating"

// CompositionsWebhookName is the configuration's static entry.
const CompositionsWebhookName = "compositions.stencil.dev"

// PublishedWebhookName is the entry the Bundle controller keeps.
const PublishedWebhookName = "published.stencil.dev"

// AdmissionOptions configure the admission webhook.
type AdmissionOptions struct {
	Enabled    bool
	Timeout    time.Duration
	ConfigName string
	Ready      <-chan struct{}
}
