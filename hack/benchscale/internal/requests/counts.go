package requests

import (
	"fmt"
	"sort"
	"strings"
)

// Counts are the requests of one user in one window, by verb and resource
// ("get compositions.stencil.dev").
type Counts map[string]int

// readVerbs are the verbs that change nothing on the server.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// Reads counts the gets, lists and watches.
func (c Counts) Reads() int { return c.sum(true) }

// Writes counts everything else (create, update, patch, delete,
// deletecollection), access reviews included, since they are sent as
// creates.
func (c Counts) Writes() int { return c.sum(false) }

// Total counts every request.
func (c Counts) Total() int { return c.Reads() + c.Writes() }

func (c Counts) sum(reads bool) int {
	n := 0
	for k, v := range c {
		verb, _, _ := strings.Cut(k, " ")
		if readVerbs[verb] == reads {
			n += v
		}
	}
	return n
}

// Top returns the k largest entries as "count verb resource", largest first.
func (c Counts) Top(k int) []string {
	keys := make([]string, 0, len(c))
	for key := range c {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, 0, k)
	for _, key := range keys[:min(k, len(keys))] {
		out = append(out, fmt.Sprintf("%d %s", c[key], key))
	}
	return out
}

// Minus returns c - base, entry by entry, zero differences left out.
func (c Counts) Minus(base Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
