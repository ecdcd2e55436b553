package harness

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// Window is the start of a measured stretch of the controller's requests.
type Window struct {
	// From is when it started.
	From time.Time
	base requests.Counts
}

// Begin opens a window on p's requests (p nil: a process not started yet,
// or an audit log to count them in).
func (h *Harness) Begin(ctx context.Context, p *controller.Process) (Window, error) {
	w := Window{From: time.Now(), base: requests.Counts{}}
	if h.Audit == nil && p != nil {
		m, err := p.Scrape(ctx)
		if err != nil {
			return w, err
		}
		w.base = m.Requests()
	}
	return w, nil
}

// End counts p's requests from w's start to now.
func (h *Harness) End(ctx context.Context, p *controller.Process, w Window) (requests.Counts, error) {
	to := time.Now()
	if h.Audit != nil {
		// The last events of requests answered just now may still be on
		// their way into the file.
		time.Sleep(time.Second)
		return h.Audit.Count(h.AuditUser, w.From, to)
	}
	m, err := p.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	return m.Requests().Minus(w.base), nil
}

// IPAddresses counts the cluster's IPAddress objects (networking.k8s.io/v1:
// the allocated Service IPs); false when the API server does not serve them.
func (h *Harness) IPAddresses(ctx context.Context) (int, bool) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IPAddressList"})
	if err := h.Admin.List(ctx, list); err != nil {
		return 0, false
	}
	return len(list.Items), true
}
