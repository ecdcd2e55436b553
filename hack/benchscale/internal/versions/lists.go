package versions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/metrics"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
)

// tableAccept is what kubectl get asks for: a Table (meta.k8s.io v1,
// else v1beta1), else the objects.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// chunkSize is kubectl get's default --chunk-size.
const chunkSize = 500

// lister lists the instances as `kubectl get appservices.VERSION.app.example.com -A`
// does, through a client of its own (the admin's credentials, no
// client-side rate limit).
type lister struct {
	hc   *http.Client
	host string
}

func newLister(cfg *rest.Config) (*lister, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &lister{hc: hc, host: strings.TrimRight(cfg.Host, "/")}, nil
}

// listPage is the part of a Table (or a list) the lister reads.
type listPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Rows []json.RawMessage `json:"rows"`
}

// list lists every instance in version, a page of chunkSize at a time,
// and returns the rows and the time the pages took.
func (l *lister) list(ctx context.Context, version string) (rows int, took time.Duration, err error) {
	start := time.Now()
	cont := ""
	for {
		q := url.Values{"limit": {fmt.Sprint(chunkSize)}}
		if cont != "" {
			q.Set("continue", cont)
		}
		page, err := l.page(ctx, fmt.Sprintf("%s/apis/%s/%s/%s?%s", l.host, group, version, plural, q.Encode()))
		if err != nil {
			return rows, 0, fmt.Errorf("list %s in %s: %w", plural, version, err)
		}
		rows += len(page.Rows)
		if cont = page.Metadata.Continue; cont == "" {
			return rows, time.Since(start), nil
		}
	}
}

func (l *lister) page(ctx context.Context, u string) (*listPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", tableAccept)
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below: closing loses nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	t := &listPage{}
	return t, json.Unmarshal(body, t)
}

// webhook reads the API server's calls of the kind's conversion webhook
// so far, and the time they took, summed (apiextensions-apiserver's
// histogram apiserver_crd_conversion_webhook_duration_seconds, by CRD).
func (l *lister) webhook(ctx context.Context) (webhookCalls, error) {
	m, err := metrics.Get(ctx, l.hc, l.host+"/metrics")
	if err != nil {
		return webhookCalls{}, err
	}
	match := map[string]string{"crd_name": crdName}
	return webhookCalls{calls: m.Sum("apiserver_crd_conversion_webhook_duration_seconds_count", match),
		seconds: m.Sum("apiserver_crd_conversion_webhook_duration_seconds_sum", match)}, nil
}

// webhookCalls are the API server's conversion webhook calls so far.
type webhookCalls struct{ calls, seconds float64 }

// Minus are the calls since before.
func (w webhookCalls) Minus(before webhookCalls) table.WebhookCalls {
	return table.WebhookCalls{Calls: int(w.calls - before.calls), Time: time.Duration((w.seconds - before.seconds) * float64(time.Second))}
}

// lists is step 4: -samples LISTs in v1 and in v2, interleaved, as
// kubectl get lists, with the API server's webhook calls over them; then
// -samples conversions of every instance to v1 by the webhook itself, in
// reviews of a page each, as the API server converts a LIST it reads
// from etcd.
func (r *run) lists(ctx context.Context) error {
	if err := r.h.Plane.WaitIdle(ctx, "the lists", time.Minute); err != nil {
		return err
	}
	// A first list of each warms the connections.
	for _, version := range []string{"v1", "v2"} {
		if _, _, err := r.ls.list(ctx, version); err != nil {
			return err
		}
	}
	before, err := r.ls.webhook(ctx)
	if err != nil {
		return err
	}
	progress.Logf("versions: %d LISTs of the %d instances in v1 and in v2", r.h.Options.Samples, r.v.N)
	rows := map[string]int{"v1": r.v.N, "v2": r.v.N}
	for range r.h.Options.Samples {
		for _, version := range []string{"v1", "v2"} {
			n, d, err := r.ls.list(ctx, version)
			if err != nil {
				return err
			}
			if version == "v1" {
				r.v.ListV1 = append(r.v.ListV1, d)
			} else {
				r.v.ListV2 = append(r.v.ListV2, d)
			}
			if n != r.v.N {
				rows[version] = n
			}
		}
	}
	after, err := r.ls.webhook(ctx)
	if err != nil {
		return err
	}
	r.v.ListWebhook = after.Minus(before)
	for _, version := range []string{"v1", "v2"} {
		r.v.Check(fmt.Sprintf("rows of every LIST in %s", version), fmt.Sprint(r.v.N), fmt.Sprint(rows[version]))
	}
	return r.reviews(ctx)
}

// reviews times the conversion webhook converting every instance (read
// in v2, as stored) to v1, -samples times after a first one.
func (r *run) reviews(ctx context.Context) error {
	crd, err := getCRD(ctx, r.h.Admin)
	if err != nil {
		return err
	}
	rv, err := newReviewer(crd)
	if err != nil {
		return err
	}
	items, err := r.in.list(ctx, "v2")
	if err != nil {
		return err
	}
	progress.Logf("versions: %d conversions of the %d instances to v1 by the webhook", r.h.Options.Samples, len(items))
	for i := range r.h.Options.Samples + 1 {
		d, err := rv.convertAll(ctx, items, "v1")
		if err != nil {
			return err
		}
		if i > 0 {
			r.v.Reviews = append(r.v.Reviews, d)
		}
	}
	return nil
}
