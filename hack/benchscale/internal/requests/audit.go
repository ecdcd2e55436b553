package requests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// eachEvent calls fn once per request of user the API server received in
// [from, to), from a JSON-lines audit log: by its audit ID, whatever
// stages were logged for it (a watch logs ResponseStarted, then
// ResponseComplete when it ends).
func eachEvent(r io.Reader, user string, from, to time.Time, fn func(*auditEvent)) error {
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	needle := []byte(`"username":"` + user + `"`)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		// Cheap filter before decoding: most lines are other users'.
		if !bytes.Contains(b, needle) {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("audit log line %d: %w", line, err)
		}
		if e.User.Username != user || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) || seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		fn(&e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	return nil
}

// countAudit counts the requests user made that the API server received
// in [from, to), from a JSON-lines audit log; each request counts once.
func countAudit(r io.Reader, user string, from, to time.Time) (Counts, error) {
	counts := Counts{}
	if err := eachEvent(r, user, from, to, func(e *auditEvent) { counts[e.Verb+" "+e.resource()]++ }); err != nil {
		return nil, err
	}
	return counts, nil
}

// unselectedReads counts the lists and watches of ConfigMaps and Secrets
// that user sent without a label selector in [from, to): each one would
// bring every such object of the cluster into a cache.
func unselectedReads(r io.Reader, user string, from, to time.Time) (int, error) {
	n := 0
	err := eachEvent(r, user, from, to, func(e *auditEvent) {
		if (e.Verb == "list" || e.Verb == "watch") && e.ObjectRef != nil && e.ObjectRef.APIGroup == "" &&
			(e.ObjectRef.Resource == "configmaps" || e.ObjectRef.Resource == "secrets") && !strings.Contains(e.RequestURI, "labelSelector=") {
			n++
		}
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// AuditLog is an API server's JSON audit log, a file.
type AuditLog struct {
	Path string
}

// Count counts user's requests in [from, to). The API server's handler
// writes a request's last event as it returns (the log backend blocks),
// moments after the client has its answer: wait a little after to
// before counting.
func (a AuditLog) Count(user string, from, to time.Time) (Counts, error) {
	f, err := os.Open(a.Path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // opened only to read: closing loses nothing
	return countAudit(f, user, from, to)
}

// Unselected is unselectedReads over the file.
func (a AuditLog) Unselected(user string, from, to time.Time) (int, error) {
	f, err := os.Open(a.Path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // opened only to read: closing loses nothing
	return unselectedReads(f, user, from, to)
}
