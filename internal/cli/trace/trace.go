package trace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
)

type flags struct {
	output string
	watch  bool
	now    string // hidden: the time ages are counted to (tests)
}

// NewCommand returns `stencil trace`, reading the cluster of kube (the
// kubeconfig flags kubectl has) as the caller.
func NewCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "trace (composition/NAME | KIND/NAME | KIND NAME) [-n NAMESPACE] [-o wide|yaml|json] [--watch]",
		Short: "Show a parent's members as a tree, with their readiness, and what the parent is in and waits on",
		Long: `trace shows a Composition, or an instance of a kind a Bundle publishes
(KIND as kubectl names it: appservice, appservices.app.example.com, a short
name), and the members its status lists, as a tree: each with its kind,
name, readiness (kstatus: Current is Ready), reason and age, a member under
the member its ownerReferences name. Below the tree: the Bundle revision
the parent is on, the Bundle's rollout (when you may read the Bundle), and
the parent's conditions (what it waits on, why it stalls, a held revision)
and Helm hooks run.

Everything is read with your kubeconfig's credentials: a member you may
not get is shown as Forbidden, one that is gone as NotFound. --watch
prints again whenever the parent or a member changes. As a kubectl plugin
(the binary installed as kubectl-stencil on the PATH, e.g. a symlink):
  kubectl stencil trace appservice/nginx-app -n default`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), kube, f, args, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "output format: wide, yaml or json (default: a table)")
	fl.BoolVarP(&f.watch, "watch", "w", false, "print again whenever the parent or one of its members changes")
	fl.StringVar(&f.now, "now", "", "the time ages are counted to (RFC 3339)")
	_ = fl.MarkHidden("now")
	return cmd
}

// target is the parent named on the command line.
type target struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func run(ctx context.Context, kube *genericclioptions.ConfigFlags, f *flags, args []string, out io.Writer) error {
	switch f.output {
	case formatTable, formatWide, formatYAML, formatJSON:
	default:
		return fmt.Errorf("unknown output format %q: want wide, yaml or json", f.output)
	}
	now := time.Now
	if f.now != "" {
		at, err := time.Parse(time.RFC3339, f.now)
		if err != nil {
			return fmt.Errorf("--now: %w", err)
		}
		now = func() time.Time { return at }
	}
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return err
	}
	mapper, err := kube.ToRESTMapper()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	r := Reader{Dynamic: dyn, Mapper: mapper}
	tg, err := resolve(r, args, ns)
	if err != nil {
		return err
	}
	var last []byte
	show := func() (*Trace, error) {
		t, _, err := Collect(ctx, r, tg.gvk, tg.namespace, tg.name)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := Print(&buf, t, f.output, now()); err != nil {
			return nil, err
		}
		if !bytes.Equal(buf.Bytes(), last) {
			if last != nil && f.output != formatYAML && f.output != formatJSON {
				fmt.Fprintln(out)
			} else if last != nil && f.output == formatYAML {
				fmt.Fprintln(out, "---")
			}
			if _, err := out.Write(buf.Bytes()); err != nil {
				return nil, err
			}
			last = buf.Bytes()
		}
		return t, nil
	}
	t, err := show()
	if err != nil || !f.watch {
		return err
	}
	return follow(ctx, r, tg, t, show)
}

// resolve reads PARENT: TYPE/NAME or TYPE NAME, TYPE a resource as
// kubectl names it (plural, singular, short name, with .group when
// ambiguous).
func resolve(r Reader, args []string, ns string) (target, error) {
	typ, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else if i := strings.IndexByte(typ, '/'); i > 0 {
		typ, name = typ[:i], typ[i+1:]
	}
	if name == "" || strings.Contains(name, "/") {
		return target{}, fmt.Errorf("want the parent as TYPE/NAME or TYPE NAME, got %q", strings.Join(args, " "))
	}
	gvr, gr := schema.ParseResourceArg(strings.ToLower(typ))
	gvk, err := r.Mapper.KindFor(gr.WithVersion(""))
	if gvr != nil {
		if k, err2 := r.Mapper.KindFor(*gvr); err2 == nil {
			gvk, err = k, nil
		}
	}
	if err != nil {
		return target{}, fmt.Errorf("the server has no resource %q: %w", typ, err)
	}
	return target{gvk: gvk, namespace: ns, name: name}, nil
}
