package templates_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// TestTimeZones: a render never reads the machine's time zones: UTC and
// "Local" (as UTC) format the same everywhere, whatever ZONEINFO and TZ
// say, and a named zone is refused with the line of the call.
func TestTimeZones(t *testing.T) {
	t.Setenv("ZONEINFO", t.TempDir()) // an empty database: a read would fail
	t.Setenv("TZ", "Asia/Tokyo")
	for _, tt := range []struct {
		call, want string
	}{
		{`dateInZone "2006-01-02 15:04 MST" 0 "UTC"`, "1970-01-01 00:00 UTC"},
		{`dateInZone "2006-01-02 15:04 MST" 0 "Local"`, "1970-01-01 00:00 UTC"},
		{`date_in_zone "15:04" 3600 ""`, `"01:00"`},
		{`htmlDateInZone 86400 "UTC"`, `"1970-01-02"`},
		{`date "15:04 MST" 0`, "00:00 UTC"},
	} {
		out, err := renderFiles(t, tmpl(cm("{{ "+tt.call+" | quote }}")), "")
		if err != nil {
			t.Errorf("%s: %v", tt.call, err)
		} else if !strings.Contains(out, "v: "+tt.want) {
			t.Errorf("%s: got\n%s\nwant v: %s", tt.call, out, tt.want)
		}
	}
	for _, call := range []string{`dateInZone "15:04" 0 "Europe/Paris"`, `htmlDateInZone 0 "America/New_York"`, `date_in_zone "15:04" 0 "Etc/GMT+2"`} {
		_, err := renderFiles(t, tmpl("a: 1\n{{ "+call+" }}"), "")
		var re *templates.RenderError
		if !errors.As(err, &re) || re.File != "templates/t.yaml" || re.Line != 2 || !strings.Contains(re.Msg, "only the UTC time zone") {
			t.Errorf("%s: err = %v, want a RenderError at templates/t.yaml:2 refusing the zone", call, err)
		}
	}
}
