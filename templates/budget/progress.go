package budget

import "sync/atomic"

// Progress reports where a render is to another goroutine, such as a
// watchdog that kills a render and must say which template it was in. Set
// Input.Progress to a new Progress per render and call Where at will.
type Progress struct {
	loc  atomic.Pointer[Location]
	file atomic.Pointer[string]
}

// Where returns the bundle file and line the render is executing: the
// latest range iteration, template call, include or tpl it started (for
// tpl's text, the tpl call); the file given to SetFile and 0 once it is
// set (KustomizationFile while kustomize runs); "" and 0 before the
// templates start. Safe to call from any goroutine, during and after the
// render.
func (p *Progress) Where() (file string, line int) {
	if f := p.file.Load(); f != nil {
		return *f, 0
	}
	if l := p.loc.Load(); l != nil {
		return l.file, l.line
	}
	return "", 0
}

func (p *Progress) start() {
	if p != nil {
		p.file.Store(nil)
		p.loc.Store(nil)
	}
}

// SetFile records that the render, past its templates, works on the
// bundle file name as a whole (kustomize on KustomizationFile): Where
// names it from now on. A nil Progress records nothing.
func (p *Progress) SetFile(name string) {
	if p != nil {
		p.file.Store(&name)
	}
}
