package source

import (
	"errors"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/fault"
)

// newArtifact unpacks a chart archive into an Artifact's Files, through
// chart.ExpandArchives as if it were the one archive of a bundle's
// charts/: the same bounds, the same confinement (regular files only,
// every path inside the archive's one chart folder), its own charts/*.tgz
// unpacked too. Its files are kept byte for byte: loading it as a Bundle
// checks those read as text (templates.LoadObject, chart.IsText).
func newArtifact(data []byte, maxSize int64) (*Artifact, error) {
	if int64(len(data)) > maxSize {
		return nil, fail(ReasonTooLarge, nil, "the chart archive is %d bytes, over the bound of %d (MaxArchiveSize)", len(data), maxSize)
	}
	const at = "charts/chart.tgz"
	expanded, err := chart.ExpandArchives(map[string]string{at: string(data)})
	if err != nil {
		var rerr *fault.RenderError
		if errors.As(err, &rerr) && rerr.Reason == fault.ReasonTooLarge {
			return nil, fail(ReasonTooLarge, err, "unpack the chart")
		}
		return nil, fail(ReasonInvalidChart, err, "unpack the chart")
	}
	files := make(map[string]string, len(expanded))
	top := ""
	for p, c := range expanded {
		rest, ok := strings.CutPrefix(p, "charts/")
		dir, file, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || top != "" && dir != top {
			return nil, fail(ReasonInvalidChart, nil, "the chart archive holds %s outside its chart's folder", p)
		}
		top = dir
		files[file] = c
	}
	meta, ok := files[templates.ChartFile]
	if !ok {
		return nil, fail(ReasonInvalidChart, nil, "the chart archive has no %s", templates.ChartFile)
	}
	var c struct {
		Version string `json:"version"`
	}
	if err := yaml.Unmarshal([]byte(meta), &c); err != nil || c.Version == "" {
		return nil, fail(ReasonInvalidChart, nil, "the chart's %s has no version", templates.ChartFile)
	}
	return &Artifact{Files: files, Archive: data, Version: c.Version, Digest: digestOf(data), Size: int64(len(data))}, nil
}
