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
