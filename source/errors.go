package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Error is a failed pull, with the Reason a Bundle's condition shows.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Msg says what failed.
	Msg string
	// Err is the cause, if any. A registry's or repository's answer is
	// kept here only behind a fixed description (see remoteError): what
	// Error prints never quotes what a server sent.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func fail(reason string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Reason is err's reason: an *Error's, else PullFailed.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonPullFailed
}

// remoteError is err, the failure of a request to a registry or
// repository, as an *Error: Unauthorized for 401 and 403, NotFound for
// 404 and the registry's unknown-name codes, PullFailed otherwise; an
// *Error in err's chain (a refusal of this package's transport) is
// returned as it is. The cause is kept for errors.As, but its text is
// replaced by a fixed description (see describe): a registry chooses its
// error body, its reason phrase and its certificate's names, and none of
// them reaches a condition, an event or a log.
func remoteError(err error, format string, args ...any) *Error {
	var serr *Error
	if errors.As(err, &serr) {
		return serr
	}
	cause := &remoteCause{err: err, text: describe(err)}
	// go-containerregistry refuses a redirect to a private or link-local
	// address literal itself, before this package's transport sees it,
	// with an error of no type of its own: told by its text.
	if strings.Contains(err.Error(), "SSRF protection") {
		cause.text = "a redirect to a private or link-local address was refused"
		return fail(ReasonURLRefused, cause, format, args...)
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fail(ReasonUnauthorized, cause, format, args...)
		case http.StatusNotFound:
			return fail(ReasonNotFound, cause, format, args...)
		}
		for _, d := range terr.Errors {
			switch d.Code {
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return fail(ReasonUnauthorized, cause, format, args...)
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
				return fail(ReasonNotFound, cause, format, args...)
			}
		}
	}
	return fail(ReasonPullFailed, cause, format, args...)
}

// remoteCause is a failed request behind a fixed description.
type remoteCause struct {
	err  error
	text string
}

func (c *remoteCause) Error() string { return c.text }
func (c *remoteCause) Unwrap() error { return c.err }

// describe is a fixed description of a failed request: the HTTP status
// (its number and Go's text for it, never the server's reason phrase)
// and the registry's error codes that the distribution spec defines, or
// the kind of network or TLS failure. Nothing of it is text a server
// chose, but for a code from a fixed list.
func describe(err error) string {
	var (
		terr     *transport.Error
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		dns      *net.DNSError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &terr):
		return httpStatus(terr.StatusCode) + errorCodes(terr.Errors)
	case errors.As(err, &unknown):
		return "the server's certificate is signed by an authority that is not trusted (caSecretRef, else the system's roots)"
	case errors.As(err, &hostname):
		return "the server's certificate is not valid for its host"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "the server's certificate has expired or is not yet valid"
		}
		return "the server's certificate is not valid"
	case errors.As(err, &record):
		return "the server does not speak TLS"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host"
		}
		return "the host's name could not be resolved"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the connection closed early"
	case errors.As(err, new(errPlainHTTP)):
		return "the registry is reached over https only"
	}
	return "the request failed"
}

// httpStatus is "HTTP 404 Not Found": the status code and Go's text for
// it.
func httpStatus(code int) string {
	if text := http.StatusText(code); text != "" {
		return fmt.Sprintf("HTTP %d %s", code, text)
	}
	return fmt.Sprintf("HTTP %d", code)
}

// knownCodes are the error codes of the OCI distribution spec (and
// docker/distribution's UNAVAILABLE): the only part of a registry's error
// body a message repeats.
var knownCodes = map[transport.ErrorCode]bool{
	transport.BlobUnknownErrorCode: true, transport.BlobUploadInvalidErrorCode: true, transport.BlobUploadUnknownErrorCode: true,
	transport.DigestInvalidErrorCode: true, transport.ManifestBlobUnknownErrorCode: true, transport.ManifestInvalidErrorCode: true,
	transport.ManifestUnknownErrorCode: true, transport.ManifestUnverifiedErrorCode: true, transport.NameInvalidErrorCode: true,
	transport.NameUnknownErrorCode: true, transport.SizeInvalidErrorCode: true, transport.TagInvalidErrorCode: true,
	transport.UnauthorizedErrorCode: true, transport.DeniedErrorCode: true, transport.UnsupportedErrorCode: true,
	transport.TooManyRequestsErrorCode: true, transport.UnknownErrorCode: true, transport.UnavailableErrorCode: true,
}

// errorCodes is " (CODE, CODE)" of the known codes of ds, or "".
func errorCodes(ds []transport.Diagnostic) string {
	var codes []string
	seen := map[transport.ErrorCode]bool{}
	for _, d := range ds {
		if knownCodes[d.Code] && !seen[d.Code] {
			seen[d.Code] = true
			codes = append(codes, string(d.Code))
		}
	}
	if len(codes) == 0 {
		return ""
	}
	return " (" + strings.Join(codes, ", ") + ")"
}
