package bundletest

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// The JUnit XML elements, as CI systems (GitLab, Jenkins, GitHub
// reporters) read them: testsuites, one testsuite per case file, one
// testcase per case, a failure for a case that failed.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the results as JUnit XML: a testsuite per case
// file (named by its path), a testcase per case (its class the bundle's
// name and the file's), each failed case's failures in its failure
// element, the first as its message.
func WriteJUnit(w io.Writer, bundles []Bundle) error {
	root := junitSuites{Name: "stencil test"}
	var total time.Duration
	for _, b := range bundles {
		for _, s := range b.Suites {
			js := junitSuite{Name: s.File}
			var elapsed time.Duration
			for _, c := range s.Cases {
				jc := junitCase{Name: c.Name, ClassName: b.Name + "." + suiteStem(s.File), Time: seconds(c.Elapsed)}
				if len(c.Failures) > 0 {
					jc.Failure = &junitFailure{Message: firstLine(c.Failures[0]), Type: "assertion", Text: strings.Join(c.Failures, "\n")}
					js.Failures++
				}
				elapsed += c.Elapsed
				js.Cases = append(js.Cases, jc)
			}
			js.Tests = len(js.Cases)
			js.Time = seconds(elapsed)
			root.Tests += js.Tests
			root.Failures += js.Failures
			total += elapsed
			root.Suites = append(root.Suites, js)
		}
	}
	root.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds prints a duration as JUnit does: seconds, to the millisecond.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.3f", d.Seconds())
}

// suiteStem is a case file's name without its folder and extension.
func suiteStem(path string) string {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[:i]
	}
	return base
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
