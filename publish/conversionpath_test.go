package publish_test

import (
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/publish"
)

func TestParseConversionPath(t *testing.T) {
	token := strings.Repeat("0a", publish.ConversionTokenBytes)
	if got, ok := publish.ParseConversionPath(publish.ConversionPath(token)); !ok || got != token {
		t.Errorf("ParseConversionPath(ConversionPath(%s)) = %q, %v", token, got, ok)
	}
	for _, path := range []string{
		"", "/convert", "/convert/", "/convert/abc",
		"/convert/" + strings.Repeat("0A", publish.ConversionTokenBytes), // not lowercase
		"/convert/" + token + "0",
		"/convert/" + token + "/x",
		"/validate-stencil/" + token,
		"/convert/" + strings.Repeat("0g", publish.ConversionTokenBytes),
	} {
		if got, ok := publish.ParseConversionPath(path); ok || got != "" {
			t.Errorf("ParseConversionPath(%q) = %q, %v, want none", path, got, ok)
		}
	}
}
