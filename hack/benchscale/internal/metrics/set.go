package metrics

import "github.com/stencil-dev/stencil/hack/benchscale/internal/requests"

// Set is one scrape.
type Set []Sample

// Sum adds the values of the samples named name whose labels include match.
func (m Set) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.Value
		}
	}
	return total
}

// Requests returns stencil_api_requests_total as request counts: the
// controller's own count of what it sent, for a cluster with no audit log.
func (m Set) Requests() requests.Counts {
	c := requests.Counts{}
	for _, s := range m {
		if s.Name == "stencil_api_requests_total" {
			c[s.Labels["verb"]+" "+s.Labels["resource"]] += int(s.Value)
		}
	}
	return c
}

// ByLabel returns, for the samples named name, the sum of their values by
// the value of label (samples without it are left out).
func (m Set) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if v, ok := s.Labels[label]; ok && s.Name == name {
			out[v] += s.Value
		}
	}
	return out
}

// CountsSince returns what the counters named name, by label, grew by from
// before to m (zero growths left out).
func (m Set) CountsSince(before Set, name, label string) map[string]float64 {
	now, then := m.ByLabel(name, label), before.ByLabel(name, label)
	out := map[string]float64{}
	for k, v := range now {
		if d := v - then[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
