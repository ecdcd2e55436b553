package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the harness reads.
type auditEvent struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	RequestURI               string    `json:"requestURI"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// resource names the object an event is about: resource.group with
// /subresource, or the request path for a request without an object
// (discovery, OpenAPI).
func (e *auditEvent) resource() string {
	if e.ObjectRef == nil || e.ObjectRef.Resource == "" {
		p, _, _ := strings.Cut(e.RequestURI, "?")
		return p
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.APIGroup != "" {
		r += "." + e.ObjectRef.APIGroup
	}
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return r
}

// requestCounts are the requests of one user in one window, by verb and
// resource ("get compositions.stencil.dev").
type requestCounts map[string]int

// readVerbs are the verbs that change nothing on the server.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// reads and writes split the counts: get, list and watch are reads;
// everything else (create, update, patch, delete, deletecollection) is a
// write, access reviews included, since they are sent as creates.
func (c requestCounts) reads() int  { return c.sum(true) }
func (c requestCounts) writes() int { return c.sum(false) }

func (c requestCounts) sum(reads bool) int {
	n := 0
	for k, v := range c {
		verb, _, _ := strings.Cut(k, " ")
		if readVerbs[verb] == reads {
			n += v
		}
	}
	return n
}

// top returns the k largest entries as "count verb resource", largest first.
func (c requestCounts) top(k int) []string {
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

// countAudit counts the requests user made that the API server received in
// [from, to), from a JSON-lines audit log. Each request counts once, by its
// audit ID, whatever stages were logged for it (a watch logs
// ResponseStarted, then ResponseComplete when it ends).
func countAudit(r io.Reader, user string, from, to time.Time) (requestCounts, error) {
	counts := requestCounts{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	needle := []byte(`"username":"` + user + `"`)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		// Cheap filter before decoding: most lines are other users'.
		if !bytes.Contains(b, needle) {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", line, err)
		}
		if e.User.Username != user || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) || seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		counts[e.Verb+" "+e.resource()]++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return counts, nil
}

// auditLog is the audit log of the local cluster.
type auditLog struct {
	path string
}

// count counts user's requests in [from, to). The API server's handler
// writes a request's last event as it returns (the log backend blocks),
// moments after the client has its answer: wait a little after to
// before counting (see settle).
func (a auditLog) count(user string, from, to time.Time) (requestCounts, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return countAudit(f, user, from, to)
}

// unselectedReads counts the lists and watches of ConfigMaps and Secrets
// that user sent without a label selector in [from, to): each one would
// bring every such object of the cluster into a cache.
func unselectedReads(r io.Reader, user string, from, to time.Time) (int, error) {
	n := 0
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	needle := []byte(`"username":"` + user + `"`)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if !bytes.Contains(b, needle) {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return 0, fmt.Errorf("audit log line %d: %w", line, err)
		}
		if e.User.Username != user || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) || seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		if (e.Verb == "list" || e.Verb == "watch") && e.ObjectRef != nil && e.ObjectRef.APIGroup == "" &&
			(e.ObjectRef.Resource == "configmaps" || e.ObjectRef.Resource == "secrets") && !strings.Contains(e.RequestURI, "labelSelector=") {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read audit log: %w", err)
	}
	return n, nil
}

// unselected is unselectedReads over the file.
func (a auditLog) unselected(user string, from, to time.Time) (int, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return unselectedReads(f, user, from, to)
}
