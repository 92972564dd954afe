package impl

import (
	"bytes"
	"embed"
	"fmt"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/template"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/userpath"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/spec"
)

//go:embed templates/*.tmpl
var templates embed.FS

// TemplateData is what a configuration template is rendered with — wirelab's own templates
// (templates/*.tmpl) and the user's (server.config), documented in docs/server.md ("Your own
// configuration"). Paths are absolute.
type TemplateData struct {
	Dir     string // the server's private directory (its configuration lives here)
	RunDir  string // writable by User: pid files, sockets, temporary files
	LogDir  string // its error and access logs
	User    string // the unprivileged user a server that starts as root switches to (www-data)
	Group   string
	Origins []OriginData
	Ports   Ports
	// CertFile, KeyFile (0600) and CAFile are the run's certificate for *.wirelab.test and the
	// origin addresses, its key and the CA that signed it (what clients trust).
	CertFile, KeyFile, CAFile string
	// Protocols of the run, one flag each.
	H1, H1S, H2, H2C, H3 bool
	TLSVersion           string // "1.2" or "1.3"
	MaxConcurrentStreams int    // 0 = the implementation's own
	SessionResumption    bool
	KeepAlive            bool
	Index                string      // the root document's file name: the directory index
	IndexRegexp          string      // Index as a regular expression (quoted)
	Types                []MIMEType  // the page's file extensions and content types
	Cache                []CacheRule // the page's cache policy: paths by Cache-Control value
	Push                 []string    // object paths pushed with the root (Link rel=preload), per server.push
	AccessLog            string      // the access log, in the format the implementation's reader takes
	ErrorLog             string
	PidFile              string
	StatusSocket         string // a unix socket for the status endpoint (nginx, h2o, Caddy's admin)
	StatusPort           int    // a loopback port for it in the server namespace (Apache)
	CPUs                 int
	ModulesDir           string // Apache's modules
}

// An implementation's own knobs are rendered beside TemplateData, under its name: each
// implementation's template data embeds *TemplateData and adds its table ({{.Apache.MPM}},
// {{.Nginx.WorkerProcesses}}, …).

// OriginData is one origin.
type OriginData struct {
	N    int    // 1-based
	Host string // sN.wirelab.test
	Addr string // its address
	Root string // its document root (Tree.OriginRoot)
}

// configure writes a real server's configuration file in.Dir/file from templates/tmpl (or the
// user's server.config): newTemplateData (name: the server's files' name), then the server's own
// knobs, the spec's server.<impl>, decoded into own; data puts the two together as the template reads
// them (the knobs under the server's name, above).
func configure(in *Provision, name, tmpl, file string, own any, data func(*TemplateData) any) (td *TemplateData, conf string, err error) {
	if td, err = newTemplateData(in, name); err != nil {
		return nil, "", err
	}
	if err := decodeOwn(in.Server, own); err != nil {
		return nil, "", err
	}
	conf = filepath.Join(in.Dir, file)
	return td, conf, render(in, tmpl, conf, data(td))
}

// launch is how a server configured from a template (conf, written by configure) runs: argv, test
// (its configuration check) and its graceful stop signal; ready when its ports answer; its index and
// access log as the template names them, the log in the format of wirelab's templates.
func (td *TemplateData) launch(conf string, argv, test []string, stop syscall.Signal) *Launch {
	return &Launch{Argv: argv, Test: test, Ready: ReadyProbe, StopSignal: stop, Index: td.Index,
		AccessLog: td.AccessLog, parseAccess: parseTemplateAccess, Config: conf}
}

// effective is the common knobs a real server runs with (Launch.Effective): mcs its
// max_concurrent_streams (its own default resolved), write_chunk_bytes 0 (each sizes its own
// writes), the others as the spec says — then own: the server's own knobs, and any common knob it
// cannot set at the value it runs with.
func effective(s spec.Server, mcs any, own map[string]any) map[string]any {
	eff := map[string]any{"max_concurrent_streams": mcs, "write_chunk_bytes": 0, "tls_version": s.TLSVersion,
		"session_resumption": s.SessionResumption, "keep_alive": s.KeepAlive, "push": s.Push}
	maps.Copy(eff, own)
	return eff
}

// serverUser is the unprivileged user servers that start as root switch to.
const serverUser = "www-data"

// newTemplateData fills what every file-serving implementation's configuration needs.
func newTemplateData(in *Provision, name string) (*TemplateData, error) {
	d := &TemplateData{
		Dir: in.Dir, RunDir: in.RunDir, LogDir: filepath.Join(in.Dir, "logs"),
		User: serverUser, Group: serverUser,
		Ports:    in.Ports,
		CertFile: filepath.Join(in.CertDir, server.CertFile), KeyFile: filepath.Join(in.CertDir, server.KeyFile),
		CAFile:     filepath.Join(in.CertDir, server.CAFile),
		TLSVersion: in.Server.TLSVersion, MaxConcurrentStreams: in.Server.MaxConcurrentStreams,
		SessionResumption: in.Server.SessionResumption, KeepAlive: in.Server.KeepAlive,
		Index: pathIndex(in), IndexRegexp: regexp.QuoteMeta(pathIndex(in)), Types: sortedTypes(in.Page),
		Cache:        cacheRules(in.Page),
		AccessLog:    filepath.Join(in.Dir, "logs", "access.log"),
		ErrorLog:     filepath.Join(in.Dir, "logs", "error.log"),
		PidFile:      filepath.Join(in.RunDir, name+".pid"),
		StatusSocket: filepath.Join(in.RunDir, "status.sock"),
		StatusPort:   8079,
		CPUs:         runtime.NumCPU(),
		ModulesDir:   "/usr/lib/apache2/modules",
	}
	for _, p := range in.Protocols {
		switch p {
		case "h1":
			d.H1 = true
		case "h1s":
			d.H1S = true
		case "h2":
			d.H2 = true
		case "h2c":
			d.H2C = true
		case "h3":
			d.H3 = true
		}
	}
	for i, a := range in.Origins {
		d.Origins = append(d.Origins, OriginData{N: i + 1, Host: in.Page.Origins[i].Host, Addr: a.String(),
			Root: filepath.Join(in.DocRoot, fmt.Sprintf("s%d", i+1))})
	}
	if in.Server.Push != "" && in.Server.Push != "none" {
		pol, err := server.ParsePushPolicy(in.Server.Push)
		if err != nil {
			return nil, fielderr.Prefix("server.", err)
		}
		for _, i := range pol.Objects(in.Page) {
			d.Push = append(d.Push, in.Page.Objects[i].Path)
		}
	}
	if err := os.MkdirAll(d.LogDir, 0o755); err != nil {
		return nil, err
	}
	return d, nil
}

// CacheRule is one Cache-Control value of the page's cache policy (page.Object.CachePolicy, the
// one owner) and the object paths that carry it, as a regular expression over the request path
// /L/<token>/<path> (the root also as its directory, /L/<token>/). A path no rule matches (a 404)
// gets page.CacheNone.
type CacheRule struct {
	Value  string
	Regexp string
}

// cacheRules groups the page's objects by their Cache-Control, in the order values first occur.
func cacheRules(pg *page.Page) []CacheRule {
	if pg == nil {
		return nil
	}
	var order []string
	paths := map[string][]string{}
	for i := range pg.Objects {
		o := &pg.Objects[i]
		v := o.CachePolicy()
		if _, ok := paths[v]; !ok {
			order = append(order, v)
		}
		paths[v] = append(paths[v], regexp.QuoteMeta(strings.TrimPrefix(o.Path, "/")))
		if i == 0 {
			paths[v] = append(paths[v], "") // the directory index
		}
	}
	rules := make([]CacheRule, 0, len(order))
	for _, v := range order {
		rules = append(rules, CacheRule{Value: v,
			Regexp: "^/L/[A-Za-z0-9_-]+/(" + strings.Join(paths[v], "|") + ")$"})
	}
	return rules
}

func pathIndex(in *Provision) string {
	if len(in.Page.Objects) == 0 {
		return "index.html"
	}
	p := in.Page.Objects[0].Path
	if len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	return p
}

// MaxConfigBytes bounds a user's configuration template (server.config).
const MaxConfigBytes = 1 << 20

// render writes a configuration: the user's template (server.config) when given, else wirelab's
// templates/<name>; the file is written to path (0644).
func render(in *Provision, name, path string, data any) error {
	var tmpl *template.Template
	var err error
	if in.Server.Config != "" {
		// a regular file only, never blocking on a FIFO or reading a device (docs/bad-input.md)
		src, rerr := userpath.ReadFile(in.Server.Config, MaxConfigBytes)
		if rerr != nil {
			return userpath.Field("server.config", rerr)
		}
		tmpl, err = template.New(filepath.Base(in.Server.Config)).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return fielderr.New("server.config", in.Server.Config, "is not a valid template: %v", err)
		}
	} else {
		tmpl, err = template.New(name).Option("missingkey=error").ParseFS(templates, "templates/"+name)
		if err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		if in.Server.Config != "" {
			return fielderr.New("server.config", in.Server.Config, "cannot be rendered: %v", err)
		}
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// UserIDs returns the uid and gid of the unprivileged user the real servers' workers run as.
func UserIDs() (int, int, error) {
	u, err := user.Lookup(serverUser)
	if err != nil {
		return 0, 0, fmt.Errorf("user %s: %w (make setup installs the servers, which create it)", serverUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid, nil
}
