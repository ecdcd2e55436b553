// Package templates turns a bundle, values and a Composition's identity into
// the exact list of objects stencil applies. It is pure: it never talks to
// a cluster, reads files outside the bundle, the environment or the network,
// so the controller, `stencil render`, `stencil diff` and `stencil bundle
// lint` share it and agree.
//
// # Bundles
//
// A bundle is a folder (Load) or a Bundle object's spec.files (LoadObject);
// both give the same Bundle and the same Revision, a hash of the files, the
// schema and the options. Layout, as a Helm chart's:
//
//	values.yaml               default values
//	values.schema.yaml        OpenAPI v3 schema of the values (spec.schema):
//	                          defaults and validates, as a CRD's
//	values.schema.json        JSON Schema of the values, as a Helm chart's:
//	                          validates only (schema_json.go)
//	.helmignore               files a folder leaves out, Helm's rules
//	stencil.yaml              permissions, allowNondeterministic and api (spec.*)
//	Chart.yaml                optional, read into .Chart
//	templates/**/*.yaml       rendered and emitted, in path order
//	templates/**/_*.tpl       helpers: parsed and shared, never emitted
//	charts/NAME/, charts/*.tgz  subcharts, each a chart of this layout (# Charts)
//	kustomization.yaml        optional: kustomize runs over the rendered files
//
// A folder holds regular files and folders only. Load refuses a symbolic
// link, wherever it points, and any other special file, with a RenderError
// naming it: a bundle never pulls in a file from outside its folder (such
// as /etc/passwd), and packing a folder gives exactly the files it holds.
// The CLI reads folders through an os.Root, which cannot open a file
// outside the folder even if a link appears while it is read.
//
// # Charts
//
// A bundle is a Helm chart whose dependencies are rendered as `helm
// template` renders them (read from Helm v4's source; the goldens in
// testdata/charts are its output):
//
//	chart_archive.go  charts/*.tgz unpacked in memory, nested ones too:
//	                  at most MaxArchiveBytes and MaxArchiveFiles in all,
//	                  regular files inside the archive's one folder only
//	chart.go          the tree: each charts/ folder with a Chart.yaml,
//	                  linked to Chart.yaml's dependencies by name (a
//	                  declared one missing is an error naming it, a
//	                  version outside the range too); alias; type:
//	                  library lends its _ files and renders nothing;
//	                  requirements.yaml over Chart.yaml, as Helm; at most
//	                  MaxCharts uses of charts, aliases counted
//	chart_values.go   per render: coalesce with every values.yaml, tags
//	                  then conditions (first boolean path, from the root)
//	                  disable charts and their subcharts, import-values
//	                  (string and child/parent forms) bottom up, global
//	                  copied down, each values.schema.json on its part
//	chart_render.go   what each template sees: its chart's .Values,
//	                  .Chart (Name is the alias, IsRoot), .Files,
//	                  .Subcharts, and Helm's .Template
//	                  (root/charts/alias/templates/x.yaml)
//
// Every chart's templates are parsed into the one set under their bundle
// paths (charts/sub/templates/x.yaml: errors name them), the deepest
// first so that a parent's define wins, as in Helm's engine; include also
// finds Helm's names. Budgets, guards and limits are the render's, for
// every chart alike. Unlike Helm: the root's .Template.Name stays
// templates/x.yaml; a disabled subchart's defines are still parsed (a
// bundle is parsed once, whatever the values), so include finds them.
//
// # Kustomize
//
// When the bundle has kustomization.yaml, kustomize (krusty, in process)
// runs over an in-memory filesystem that holds the rendered templates at
// their paths and the bundle's other files, and nothing else. It can use
// resources, bases and components that are folders of the bundle (each
// with its own kustomization, Kind Component or not), patches, replacements,
// crds, configurations, config map and secret generators from bundle files,
// labels, images, replicas and the other fields that only transform data.
// It cannot:
//
//   - read a file outside the bundle: there is no disk in its filesystem,
//     and absolute paths or paths out of the bundle are refused;
//   - clone a git repository or fetch a URL: every kustomization file
//     (kustomization.yaml, .yml or Kustomization, at any depth) is decoded
//     with kustomize's own decoder and written back with every location
//     rewritten as a "./" or "../" path naming a file or folder of the
//     bundle; a location that names none is refused. kustomize runs git
//     or an HTTP request only for a location with a scheme, a user@ or a
//     github.com prefix, so none is left for it to fetch, whatever the
//     spelling (user@host:repo, GITHUB.COM/org/repo, git::..., a field
//     name in another case);
//   - run a program: generators, transformers and validators (plugins,
//     exec and container functions) and Helm charts are refused, and
//     krusty runs with builtin plugins only and Helm disabled;
//   - change process-wide state: openapi (a custom schema or a builtin
//     version) is refused, as kustomize keeps it in state shared by every
//     render of the process.
//
// These hold by construction: what krusty reads is what stencil wrote,
// not the bundle's text. Every refusal is a RenderError naming the
// kustomization file.
//
// # Values
//
// MergeValues deep-merges the Composition's values over values.yaml with
// Helm's rules (maps merge, lists and scalars replace, null deletes a key),
// applies spec.schema's defaults and validates with the API server's own
// structural schema code, then validates with values.schema.json as Helm 4
// does (JSON Schema, no defaults, no reference loaded from a file or the
// network), reporting every violation of both with its field path and
// never its value.
//
// # Templates
//
// Templates are text/template with sprig's text functions, except env,
// expandenv and getHostByName (refused), and except the functions whose
// result changes on every render (now, rand*, uuidv4, gen*, bcrypt,
// htpasswd, ...), refused unless the bundle sets allowNondeterministic.
// Helm's include, tpl, required, fail, toYaml, fromYaml, fromYamlArray,
// toJson, fromJson and fromJsonArray are there; lookup is refused. Data:
// .Values, .Composition (Name, Namespace, UID, Labels, Annotations),
// .Bundle (Name, Revision), and Helm's .Release, .Chart, .Capabilities,
// .Template and .Files (what Helm's .Files holds: the bundle's files but
// Chart.yaml, Chart.lock, values.yaml, values.schema.json, templates/ and
// charts/). As in Helm, a missing key prints as an empty string (the
// "<no value>" text/template prints is erased from each file's output and
// tpl's). Unlike Helm, integers stay int64: 1000000 prints as 1000000,
// not 1e+06.
//
// # Functions
//
// Every function of sprig's map (v3.3.0, 211 of them), Helm's and
// text/template's printing builtins is listed below with what stencil
// does with it: kept as sprig has it, bounded, made deterministic, or
// refused. A render's functions share one budget, MaxFunctionBytes
// (64 MiB): each string result counts its length, each list or map
// result 16 bytes per element (nested ones too for values a function
// builds), each element the cycle check of set and merge visits one byte.
// The functions that can return much more than they are given compute
// their result's size first (saturating: no product wraps around) and
// refuse it, before allocating, when it does not fit in what is left.
// Passing the budget, MaxLoop, MaxValueDepth (100) or MaxCostlyCalls (16)
// is a RenderError with Reason ReasonTooLarge at the file and line of the
// call. Function errors name the function and types, counts and sizes,
// never an argument; errors and panics of sprig functions have their
// string arguments cut out. (required and fail carry the author's text.)
//
//	decision                           functions
//	as sprig (result charged)          abbrev abbrevboth adler32sum b32dec b64dec base camelcase clean
//	                                   compact contains decryptAES dir ext hasPrefix hasSuffix initial
//	                                   initials kebabcase kindOf lower mustCompact mustInitial mustRest
//	                                   mustReverse mustWithout nospace omit pick pluck regexQuoteMeta rest
//	                                   reverse sha1sum sha256sum sha512sum snakecase swapcase title trim
//	                                   trimAll trimall trimPrefix trimSuffix trunc typeOf untitle upper
//	                                   urlJoin urlParse without duration
//	as sprig (no allocation to charge) add add1 add1f addf all any atoi biggest buildCustomCert ceil
//	                                   coalesce date_modify dateModify deepEqual default dig div divf empty
//	                                   first float64 floor get has hasKey hello int int64 isAbs kindIs last
//	                                   max maxf min minf mod mul mulf must_date_modify mustDateModify
//	                                   mustFirst mustHas mustLast mustSlice plural regexMatch round semver
//	                                   semverCompare slice sub subf ternary toDecimal typeIs typeIsLike
//	                                   unixEpoch unset
//	bounded before allocating          repeat indent nindent wrap wrapWith replace substr b64enc b32enc
//	                                   cat quote squote toString toStrings join print printf println html
//	                                   js urlquery splitList split splitn regexReplaceAll
//	                                   regexReplaceAllLiteral mustRegexReplaceAll
//	                                   mustRegexReplaceAllLiteral regexFindAll mustRegexFindAll
//	                                   regexSplit mustRegexSplit regexFind mustRegexFind mustRegexMatch
//	                                   list tuple dict append push mustAppend mustPush prepend mustPrepend
//	                                   concat chunk mustChunk uniq mustUniq deepCopy mustDeepCopy
//	                                   toJson toPrettyJson toRawJson mustToJson mustToPrettyJson
//	                                   mustToRawJson toYaml fromYaml fromYamlArray fromJson
//	                                   fromJsonArray mustFromJson include tpl
//	loops (MaxLoop, no overflow)       until untilStep seq
//	costly (MaxCostlyCalls)            derivePassword; bcrypt htpasswd gen* when allowed
//	acyclic by construction            set merge mergeOverwrite mustMerge mustMergeOverwrite
//	made deterministic                 keys (sorted) values (by sorted key) sortAlpha (sorts a copy)
//	                                   date dateInZone date_in_zone htmlDate htmlDateInZone (a time or
//	                                   Unix seconds only; UTC only, "Local" is UTC, a named zone is
//	                                   refused) toDate mustToDate (UTC)
//	                                   durationRound (not of a time) osBase osClean osDir osExt osIsAbs
//	                                   (as path: Linux's, wherever the render runs) printf (no %p)
//	refused unless allowNondeterministic now ago randAlphaNum randAlpha randAscii randNumeric randBytes
//	                                   randInt uuidv4 shuffle genPrivateKey genCA genCAWithKey
//	                                   genSelfSignedCert genSelfSignedCertWithKey genSignedCert
//	                                   genSignedCertWithKey htpasswd bcrypt encryptAES
//	refused                            env expandenv getHostByName lookup
//	Helm's                             required fail (and include tpl toYaml fromYaml ... above)
//
// A template whose objects are all Helm test hooks (helm.sh/hook: test,
// test-success, test-failure) may call them anyway: its output is
// dropped, as `helm test` alone runs those (testhooks.go). A refused
// template is run again with them allowed to learn its objects; any
// other object keeps the refusal, at the first call's file and line.
//
// Allowed nondeterministic functions stay bounded (rand* by their count)
// and date functions take any argument as sprig does (the current time).
//
// Values cannot contain themselves: `$_ := set $d "self" $d` would make
// fmt, toYaml, deepCopy and the executor's own printing recurse until the
// stack overflows, a fatal error no recover catches. As those walkers are
// not all stencil's, cycles are prevented where they would be made: only
// set and merge insert into an existing map (every list and dict function
// makes a new value; sprig never appends in place), and both refuse an
// insertion from which the map inserted into can be reached. Sharing is
// allowed (dict "ctx" $): the functions that walk a value (toYaml, toJson,
// deepCopy, printf, cat, ...) measure it first, once per shared map or
// list, and refuse it past MaxValueDepth or past the bytes left, so a
// list doubled forty times or a value nested thousands deep is refused,
// not expanded. The printing functions also refuse a value holding a
// pointer, which fmt prints as its address, different on every render.
//
// YAML that functions parse (fromYaml, fromYamlArray), values.yaml and the
// rendered output are read strictly: a duplicate key is an error with its
// line, as kubectl. go.yaml.in/yaml refuses excessive aliasing by the
// ratio of alias expansions to other nodes (the billion laughs), but a
// few hundred aliases of a long string among enough plain nodes pass it:
// a text holding an alias is measured expanded before it is converted.
//
// # Output and errors
//
// Each template's output must be valid UTF-8 (else an error at the line
// of the first invalid byte) and is split into YAML documents; empty ones
// are dropped; each is parsed strictly (a duplicate key is an error at its
// line, and so are two keys that become the same JSON key, such as 1 and
// "1") and must have apiVersion, kind and metadata.name. A List (v1 List,
// or any kind ending in List with an items list, as kubectl expands them)
// is replaced by its items, each checked as any other object, so what
// permissions judge downstream is the items. Every object is at most
// MaxObjectBytes (1.5 MiB) as JSON, what the API server stores (etcd's
// default request limit), and a render makes at most MaxObjects; both are
// errors with Reason ReasonTooLarge. Two objects that are one once
// placed (same group, kind and name; no namespace counts as the
// Composition's) are an error naming both files and lines. Every error is a *RenderError naming the
// file and line (or the values field path). Messages never quote a value:
// a schema violation says the field, the error type and the rule (values.replicas:
// Invalid value: should be greater than or equal to 1), and YAML errors
// keep their line and drop what they quoted (but a duplicate key's name).
// Values (the Composition's and values.yaml) nest at most MaxValueDepth.
//
// # Bounds
//
// A render is bounded as a whole: every template file, {{template}},
// include and tpl it executes charges one budget, Input.Limits (zero fields
// take DefaultLimits): MaxSteps steps, MaxRangeIterations iterations of all
// ranges, MaxTemplateCalls files, include, tpl and template calls,
// MaxIncludeDepth levels of nesting and MaxOutputBytes bytes written,
// include and tpl output included. Nesting cannot multiply them, and a
// negative limit is the default, not "none". A step is a node a template
// may walk: a body is charged when it starts (a file, a define, each
// range iteration), one step per node, the larger branch of each if and
// with. RenderContext also stops once ctx is done, checked at every range
// iteration and call. (Functions have their own budget, see Functions, and
// the objects theirs, see Output and errors.) Passing a bound is a
// RenderError with Reason ReasonTooLarge (ReasonTimeout for the deadline)
// naming the bound and the file and line of the innermost range, call or
// template executing: for tpl's text, the tpl call. A canceled ctx gives a
// RenderError without Reason that wraps context.Canceled. Input.Progress
// tells a watchdog in another goroutine the same file and line, so that it
// can name them when it kills a render stuck inside one call.
//
// Templates run on text/template. Its parse trees are public: once parsed,
// each is rewritten (instrument.go) so that ranges, {{template}}, include
// and tpl call the budget (budget.go), through functions whose names,
// starting with _stencil, a bundle cannot use. What the budget cannot see,
// such as the memory or time of one function call, is for the sandbox
// (internal/sandbox) to stop.
//
// # Speed
//
// A Bundle is parsed and instrumented once per revision by each process
// that renders it (the controller keeps its last generation, each render
// worker its own copy), with the functions of a first bound set; a render
// takes a set whose functions are bound to a guard of its own from the
// bundle's pool (boundSet: the parsed set first, then clones), resets it
// and executes it. A set keeps the texts tpl parsed, each in a clone of
// its own when it may define templates, else all in one clone. The
// output is read straight to objects (a reader for the block YAML
// templates usually write, yaml/v2 for the rest, both giving what the
// YAML to JSON to objects round trip gave). values.yaml is read the same
// way, comments and all. A bundle remembers the last values it merged and
// validated (MergeValues hands out copies), and compiled schemas are
// cached by their text (newValuesSchema). toYaml writes maps, lists and
// scalars in yaml/v2's layout itself, asking yaml/v2 only about strings
// that may read as numbers (toyaml.go, with a differential test).
package templates
