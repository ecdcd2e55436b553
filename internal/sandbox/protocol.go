package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// maxFrame bounds one message between the pool and a worker: a response
// holds at most templates' output bound of objects, as JSON.
const maxFrame = 256 << 20

// request asks a worker for one render.
type request struct {
	// Bundle names the bundle by name and revision; Spec is sent the first
	// time a worker sees that revision (and again when it forgot it).
	Bundle bundleRef `json:"bundle"`
	// Spec is the Bundle's spec, or nil when the worker has it; its files
	// that are not UTF-8 (a chart's binary .Files) are in Binary instead,
	// since JSON would turn their bytes into U+FFFD.
	Spec *v1alpha1.BundleSpec `json:"spec,omitempty"`
	// Binary are the files of Spec that are not UTF-8, byte for byte
	// (base64 in JSON).
	Binary map[string][]byte `json:"binary,omitempty"`
	// Input is the render input.
	Input templates.Input `json:"input"`
	// TimeoutMillis is the render's deadline, counted from when the
	// worker reads the request.
	TimeoutMillis int64 `json:"timeoutMillis"`
	// Probe is a test's question (see testHooks); a worker of a
	// production binary ends when it gets one.
	Probe string `json:"probe,omitempty"`
}

type bundleRef struct {
	Name     string `json:"name"`
	Revision string `json:"revision"`
}

func (r bundleRef) key() string { return r.Name + "@" + r.Revision }

// withSpec sets the request's Spec to b's, its files that are not UTF-8
// moved to Binary.
func (r *request) withSpec(b *templates.Bundle) {
	spec := b.Spec()
	r.Binary = nil
	for p, c := range spec.Files {
		if utf8.ValidString(c) {
			continue
		}
		if r.Binary == nil {
			r.Binary = map[string][]byte{}
			spec.Files = maps.Clone(spec.Files)
		}
		r.Binary[p] = []byte(c)
		delete(spec.Files, p)
	}
	r.Spec = &spec
}

// spec is the Bundle's spec a request sends, its Binary files back among
// its files.
func (r *request) spec() v1alpha1.BundleSpec {
	spec := *r.Spec
	if len(r.Binary) > 0 {
		spec.Files = maps.Clone(spec.Files)
		if spec.Files == nil {
			spec.Files = map[string]string{}
		}
		for p, c := range r.Binary {
			spec.Files[p] = string(c)
		}
	}
	return spec
}

// response is one message from a worker: what confines it (its first
// message), a progress note (the template being executed), or the final
// result.
type response struct {
	// Isolation, in a worker's first message, is what confines it.
	Isolation *Isolation `json:"isolation,omitempty"`
	// Progress, when set, is where the render is; more messages follow.
	Progress *location `json:"progress,omitempty"`
	// NeedBundle asks for the request again with the bundle's spec.
	NeedBundle bool `json:"needBundle,omitempty"`
	// ObjectsFollow says that the next message is the rendered objects, a
	// JSON array sent as is (not re-encoded inside this message: a render's
	// output is scanned once on each side).
	ObjectsFollow bool `json:"objectsFollow,omitempty"`
	// objects is that array, read by the pool.
	objects []byte
	// Observations, with ObjectsFollow, is what the render read of its
	// Input.Observed and Input.Lookups, generated and held back
	// (templates.Input.Observations); with an Error, what it read and
	// looked up before it.
	Observations *templates.Observations `json:"observations,omitempty"`
	// Notes, with ObjectsFollow, is the render's notes
	// (templates.Input.Notes).
	Notes *templates.Notes `json:"notes,omitempty"`
	// Error is the render's error.
	Error *wireError `json:"error,omitempty"`
	// HeapBytes is the worker's heap after the render: a worker that kept
	// much is retired rather than reused.
	HeapBytes uint64 `json:"heapBytes,omitempty"`
}

// location is a bundle file and line.
type location struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// wireError is a templates.RenderError on the wire.
type wireError struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason,omitempty"`
	Msg    string `json:"msg"`
}

func toWire(err error) *wireError {
	// A RenderError wrapped on its way keeps its file and line too.
	var re *templates.RenderError
	if errors.As(err, &re) {
		return &wireError{File: re.File, Line: re.Line, Path: re.Path, Reason: re.Reason, Msg: re.Msg}
	}
	return &wireError{Msg: err.Error()}
}

func (w *wireError) renderError() *templates.RenderError {
	return &templates.RenderError{File: w.File, Line: w.Line, Path: w.Path, Reason: w.Reason, Msg: w.Msg}
}

// writeFrame writes v as one length-prefixed JSON message.
func writeFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeRaw(w, data)
}

// writeRaw writes data, already JSON, as one length-prefixed message.
func writeRaw(w io.Writer, data []byte) error {
	if len(data) > maxFrame {
		return fmt.Errorf("message of %d bytes is larger than %d", len(data), maxFrame)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one length-prefixed JSON message into v.
func readFrame(r io.Reader, v any) error {
	data, err := readRaw(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// readRequest reads one request, its numbers as every unstructured
// object has them (int64 where integral, float64 otherwise), so that
// Input.Observed's values print in templates as they do in process.
func readRequest(r io.Reader, req *request) error {
	data, err := readRaw(r)
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(data, req)
}

// readRaw reads one length-prefixed message.
func readRaw(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("message of %d bytes is larger than %d", n, maxFrame)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("read message: %w", err)
	}
	return data, nil
}
