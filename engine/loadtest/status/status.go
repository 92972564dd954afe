// Package status reads an external load-test target's server gauges from the status page the
// server already publishes (docs/loadtest.md, "External targets"): Apache's mod_status
// (`server-status?auto`), nginx's `stub_status`, or a Prometheus text endpoint whose metric names
// the spec gives. The page is parsed by the same parsers the lab's servers use (engine/server/impl:
// one reading of each format); Prometheus text by the Prometheus project's own parser (expfmt).
//
// A lab run samples its server's processes (CPU, memory, threads) through their control group;
// an external target has none on this machine, so its samples carry the gauges only.
package status

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/server/impl"
)

// Formats a status page may have.
const (
	Apache     = "apache"     // mod_status, machine-readable: server-status?auto
	Nginx      = "nginx"      // stub_status
	Prometheus = "prometheus" // text exposition format; Metrics names what to keep
)

// Formats is every format, in the order the docs list them.
var Formats = []string{Apache, Nginx, Prometheus}

// maxBody bounds what is read of a status page (a Prometheus endpoint of a busy server is
// rarely above a few hundred kB).
const maxBody = 8 << 20

// Source is a target's status page.
type Source struct {
	URL    string
	Format string
	// Metrics maps the Prometheus metric names to keep to the gauge names they are stored under
	// (an empty name keeps the metric's own). Required for Prometheus, refused otherwise.
	Metrics map[string]string
	// Client fetches the page (the run's client: its resolver, its CA, its address policy).
	Client *http.Client
}

// Check checks the source's fields, naming the one that is wrong.
func (s Source) Check() error {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("target.status_url: got %q; must be an http or https URL", s.URL)
	}
	switch s.Format {
	case Apache, Nginx:
		if len(s.Metrics) > 0 {
			return fmt.Errorf("target.status_metrics: given for status_format %q; only a prometheus endpoint takes metric names", s.Format)
		}
	case Prometheus:
		if len(s.Metrics) == 0 {
			return fmt.Errorf("target.status_metrics: empty; a prometheus endpoint needs the names of the metrics to sample")
		}
	default:
		return fmt.Errorf("target.status_format: got %q; must be one of %s", s.Format, strings.Join(Formats, ", "))
	}
	return nil
}

// Sample fetches the page once and returns its gauges. Any failure — the request, a status code
// other than 200, a page its format's parser refuses, a Prometheus page without any of the named
// metrics — is an error naming the cause.
func (s Source) Sample(ctx context.Context, timeout time.Duration) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("target.status_url %s: %w", s.URL, err)
	}
	if s.Format == Prometheus {
		req.Header.Set("Accept", "text/plain;version=0.0.4")
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("target.status_url %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("target.status_url %s: reading the page: %w", s.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("target.status_url %s: answered %s", s.URL, resp.Status)
	}
	g, err := s.Parse(string(body))
	if err != nil {
		return nil, fmt.Errorf("target.status_url %s: not a status page in the %s format: %w", s.URL, s.Format, err)
	}
	return g, nil
}

// Parse reads a page of the source's format.
func (s Source) Parse(text string) (map[string]float64, error) {
	switch s.Format {
	case Apache:
		return impl.ParseServerStatus(text)
	case Nginx:
		return impl.ParseStubStatus(text)
	case Prometheus:
		keep := map[string]string{}
		for name, as := range s.Metrics {
			keep[name] = as
			if as == "" {
				keep[name] = name
			}
		}
		g, err := impl.ParsePrometheus(text, keep)
		if err != nil {
			return nil, err
		}
		if len(g) == 0 {
			names := make([]string, 0, len(keep))
			for n := range keep {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("none of the metrics %s in it", strings.Join(names, ", "))
		}
		return g, nil
	}
	return nil, fmt.Errorf("status_format %q", s.Format)
}
