package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/stencil-dev/stencil/templates/fault"
)

// This file unpacks the chart archives of a bundle (charts/*.tgz, as
// `helm dependency build` leaves them) in memory. An archive is hostile
// input: it is read through bounds on the bytes it unpacks to and on its
// entries, and only regular files whose names stay inside the archive's
// one chart folder are taken.

// Bounds of the chart archives of one bundle, all archives together
// (nested ones too).
const (
	// MaxArchiveBytes bounds the bytes the archives of a bundle unpack to.
	MaxArchiveBytes = 64 << 20
	// MaxArchiveFiles bounds the entries of the archives of a bundle.
	MaxArchiveFiles = 10000
	// maxArchiveNesting bounds archives in archives.
	maxArchiveNesting = 8
)

// archiveBudget is what is left of the archives' bounds.
type archiveBudget struct {
	bytes, files int64
}

// isChartArchive reports a chart archive: a .tgz right under a charts/
// folder (the bundle's or a subchart's).
func isChartArchive(p string) bool {
	dir := path.Dir(p)
	return strings.HasSuffix(p, ".tgz") && (dir == "charts" || strings.HasSuffix(dir, "/charts"))
}

// ExpandArchives returns the bundle's files with each chart archive
// replaced by the files it holds, under charts/NAME/ where NAME is its
// folder in the archive, as if `helm dependency build` had left folders.
// Archives in the archives are unpacked too.
func ExpandArchives(files map[string]string) (map[string]string, error) {
	var archives []string
	for p := range files {
		if isChartArchive(p) {
			archives = append(archives, p)
		}
	}
	if len(archives) == 0 {
		return files, nil
	}
	out := make(map[string]string, len(files))
	for p, c := range files {
		out[p] = c
	}
	budget := &archiveBudget{bytes: MaxArchiveBytes, files: MaxArchiveFiles}
	for depth := 0; len(archives) > 0; depth++ {
		if depth >= maxArchiveNesting {
			return nil, &fault.RenderError{File: archives[0], Reason: fault.ReasonTooLarge, Msg: fmt.Sprintf("chart archives nested more than %d deep", maxArchiveNesting)}
		}
		sort.Strings(archives)
		var next []string
		for _, p := range archives {
			unpacked, err := unpackChart(p, out[p], budget)
			if err != nil {
				return nil, err
			}
			delete(out, p)
			for q, c := range unpacked {
				if _, dup := out[q]; dup {
					return nil, &fault.RenderError{File: p, Msg: fmt.Sprintf("holds %s, which the bundle holds too (a chart both as a folder and an archive?)", q)}
				}
				out[q] = c
				if isChartArchive(q) {
					next = append(next, q)
				}
			}
		}
		archives = next
	}
	return out, nil
}

// unpackChart unpacks the archive at p into files under p's folder: the
// archive's one top folder becomes charts/NAME.
func unpackChart(p, data string, budget *archiveBudget) (map[string]string, error) {
	fail := func(reason, format string, args ...any) (map[string]string, error) {
		return nil, &fault.RenderError{File: p, Reason: reason, Msg: "chart archive: " + fmt.Sprintf(format, args...)}
	}
	zr, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		return fail("", "not gzip: %v", err)
	}
	// Everything the tar reader reads, skipped entries and padding too,
	// is counted: a small archive cannot unpack to more than the bound.
	lr := &limitedReader{r: zr, left: budget.bytes}
	tr := tar.NewReader(lr)
	out := map[string]string{}
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if lr.over {
				return fail(fault.ReasonTooLarge, "unpacks to more than %d bytes (MaxArchiveBytes)", MaxArchiveBytes)
			}
			return fail("", "%v", err)
		}
		if budget.files--; budget.files < 0 {
			return fail(fault.ReasonTooLarge, "more than %d files (MaxArchiveFiles)", MaxArchiveFiles)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		default:
			return fail("", "%q is not a regular file: an archive holds regular files and folders only", h.Name)
		}
		name := strings.TrimPrefix(h.Name, "./")
		first, rest, ok := strings.Cut(name, "/")
		if !ok || first == "" || rest == "" || path.IsAbs(name) || path.Clean(name) != name || strings.Contains(name, "\\") ||
			first == ".." || strings.HasPrefix(rest, "../") || strings.Contains(name, "/../") {
			return fail("", "%q is not a path inside the chart's folder", h.Name)
		}
		if top == "" {
			top = first
		} else if first != top {
			return fail("", "%q is outside the chart's folder %s/: an archive holds one chart", h.Name, top)
		}
		if h.Size > lr.left {
			return fail(fault.ReasonTooLarge, "unpacks to more than %d bytes (MaxArchiveBytes)", MaxArchiveBytes)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, io.LimitReader(tr, h.Size)); err != nil {
			if lr.over {
				return fail(fault.ReasonTooLarge, "unpacks to more than %d bytes (MaxArchiveBytes)", MaxArchiveBytes)
			}
			return fail("", "%v", err)
		}
		q := path.Join(path.Dir(p), top, rest)
		if _, dup := out[q]; dup {
			return fail("", "%q twice", h.Name)
		}
		out[q] = buf.String()
	}
	budget.bytes = lr.left
	if top == "" {
		return fail("", "holds no chart")
	}
	return out, nil
}

// limitedReader reads at most left bytes of r, then fails.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.over = true
		return 0, errors.New("archive too large")
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
