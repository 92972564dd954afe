package impl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// accessEntry is one request as a real server logs it, read by its implementation's parser
// (Launch.parseAccess): nginx, Apache and h2o write the JSON of their templates
// (parseTemplateAccess), Caddy its own structured access log (parseCaddyAccess).
type accessEntry struct {
	Start    float64 // Unix seconds
	Duration float64 // seconds
	Proto    string  // HTTP/1.1, HTTP/2.0, HTTP/3.0 …
	TLS      bool
	Origin   int // 0-based; -1 unknown
	Remote   string
	Method   string
	URI      string
	Status   int
	Bytes    int64
}

// ConvertAccessLog reads a real server's access log and writes its requests as the built-in
// server's request records (server/requests.jsonl, one server.Record per line, in start order):
// start, duration, protocol (h1, h1s, h2, h2c, h3), origin, a connection id per client address
// and port (1, 2, … in order of appearance), method, path, token, object, status and body bytes.
// Requests of the tokens in skip (the readiness probes) are left out. It returns how many records
// it wrote. The log is the launch's (Launch.AccessLog), read in its implementation's format.
func ConvertAccessLog(l *Launch, out string, pg *page.Page, ports Ports, skip ...string) (int, error) {
	logPath := l.AccessLog
	if logPath == "" || l.parseAccess == nil {
		return 0, errors.New("the server keeps no access log")
	}
	f, err := os.Open(logPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	index := pg.ObjectIndex()
	hosts := map[string]int{}
	for i, o := range pg.Origins {
		hosts[o.Host] = i
	}
	var recs []server.Record
	conns := map[string]uint64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		e, ok, err := l.parseAccess([]byte(text), ports, hosts)
		if err != nil {
			return 0, fmt.Errorf("%s line %d: %w", logPath, line, err)
		}
		if !ok {
			continue
		}
		r := server.Record{
			Start:    time.Unix(0, int64(math.Round(e.Start*1e9))).UTC(),
			Duration: time.Duration(math.Round(e.Duration * 1e9)),
			Protocol: server.Protocol(protocolOf(e.Proto, e.TLS)),
			Origin:   e.Origin, Remote: e.Remote, Method: e.Method, Path: e.URI, Status: e.Status, Bytes: e.Bytes,
		}
		path := e.URI
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if tok, objPath, ok := page.SplitPath(path); ok {
			if slices.Contains(skip, tok) {
				continue
			}
			r.Token = tok
			if objPath == "/" {
				objPath = pg.Objects[0].Path
			}
			if i, ok := index[objPath]; ok && (e.Origin < 0 || pg.Objects[i].Origin == e.Origin) {
				r.Object = pg.Objects[i].ID
			}
		}
		if id, ok := conns[e.Remote]; ok {
			r.Conn = id
		} else {
			r.Conn = uint64(len(conns) + 1)
			conns[e.Remote] = r.Conn
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Start.Before(recs[j].Start) })
	w, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			w.Close()
			return 0, err
		}
	}
	return len(recs), w.Close()
}

// protocolOf names a request's protocol as the contract does.
func protocolOf(proto string, tls bool) string {
	switch {
	case strings.HasPrefix(proto, "HTTP/3"):
		return "h3"
	case strings.HasPrefix(proto, "HTTP/2") && tls:
		return "h2"
	case strings.HasPrefix(proto, "HTTP/2"):
		return "h2c"
	case tls:
		return "h1s"
	}
	return "h1"
}

// num reads a JSON number that a log format may have written as a string ("0.002").
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "-" {
		*n = 0
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	*n = num(f)
	return err
}

// accessParser reads one line of an implementation's access log: ports are the run's, hosts the
// page's origins by name (0-based); ok is false for a line that records no request.
type accessParser func(line []byte, ports Ports, hosts map[string]int) (e accessEntry, ok bool, err error)

var _ accessParser = parseTemplateAccess

// parseTemplateAccess reads the JSON line wirelab's templates have nginx, Apache and h2o write:
// start or end, duration (seconds or µs), protocol, the local and remote address, method, URI,
// status and body bytes, numbers possibly as strings.
func parseTemplateAccess(b []byte, ports Ports, _ map[string]int) (accessEntry, bool, error) {
	var e struct {
		Start      num    `json:"start"`
		End        num    `json:"end"`
		Duration   num    `json:"duration"`
		DurationUS num    `json:"duration_us"`
		Protocol   string `json:"protocol"`
		Local      string `json:"local"`
		Remote     string `json:"remote"`
		Method     string `json:"method"`
		URI        string `json:"uri"`
		Status     int    `json:"status"`
		Bytes      num    `json:"bytes"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return accessEntry{}, false, err
	}
	dur := float64(e.Duration)
	if e.DurationUS != 0 {
		dur = float64(e.DurationUS) / 1e6
	}
	start := float64(e.Start)
	if start == 0 {
		start = float64(e.End) - dur
	}
	origin, tls := -1, false
	if ap, err := netip.ParseAddrPort(e.Local); err == nil {
		tls = int(ap.Port()) == ports.HTTPS
		if a := ap.Addr().As4(); a[0] == 10 && a[1] == 77 && a[2] == 1 && a[3] >= 1 {
			origin = int(a[3]) - 1
		}
	}
	return accessEntry{Start: start, Duration: dur, Proto: e.Protocol, TLS: tls, Origin: origin, Remote: e.Remote,
		Method: e.Method, URI: e.URI, Status: e.Status, Bytes: int64(e.Bytes)}, true, nil
}
