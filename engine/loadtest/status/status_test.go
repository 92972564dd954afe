package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// pages are what each server publishes (Apache 2.4 and nginx 1.22 as Debian ships them, a
// Prometheus endpoint with a histogram), and what does not parse.
var pages = map[string]string{
	"/server-status": "ServerVersion: Apache/2.4.62\nTotal Accesses: 1200\nBusyWorkers: 7\nIdleWorkers: 43\nScoreboard: _W_K__\n",
	"/stub_status":   "Active connections: 4 \nserver accepts handled requests\n 10 10 31 \nReading: 0 Writing: 1 Waiting: 3 \n",
	"/metrics": "# HELP http_requests_in_flight Requests being served.\n# TYPE http_requests_in_flight gauge\n" +
		"http_requests_in_flight{handler=\"a\"} 2\nhttp_requests_in_flight{handler=\"b\"} 3\n" +
		"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n" +
		"# TYPE latency_seconds histogram\nlatency_seconds_bucket{le=\"0.1\"} 4\nlatency_seconds_bucket{le=\"+Inf\"} 9\nlatency_seconds_sum 2\nlatency_seconds_count 9\n",
	"/garbage": "<html><body>502 Bad Gateway</body></html>\n",
}

func server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(pages[r.URL.Path]))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSampleFormats(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	g, err := Source{URL: srv.URL + "/server-status?auto", Format: Apache}.Sample(ctx, time.Second)
	if err != nil || g["busy_workers"] != 7 || g["idle_workers"] != 43 || g["total_accesses"] != 1200 {
		t.Errorf("apache: %v %v", g, err)
	}
	g, err = Source{URL: srv.URL + "/stub_status", Format: Nginx}.Sample(ctx, time.Second)
	if err != nil || g["active"] != 4 || g["requests"] != 31 || g["waiting"] != 3 {
		t.Errorf("nginx: %v %v", g, err)
	}
	g, err = Source{URL: srv.URL + "/metrics", Format: Prometheus, Metrics: map[string]string{
		"http_requests_in_flight": "busy", "process_cpu_seconds_total": "", "latency_seconds": "requests", "absent_metric": "x"}}.Sample(ctx, time.Second)
	if err != nil || g["busy"] != 5 || g["process_cpu_seconds_total"] != 12.5 || g["requests"] != 9 || len(g) != 3 {
		t.Errorf("prometheus: %v %v", g, err)
	}
}

func TestSampleFailsNamingTheCause(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	for _, c := range []struct {
		src  Source
		want string
	}{
		{Source{URL: srv.URL + "/garbage", Format: Apache}, "not a status page in the apache format"},
		{Source{URL: srv.URL + "/garbage", Format: Nginx}, "not a status page in the nginx format"},
		{Source{URL: srv.URL + "/garbage", Format: Prometheus, Metrics: map[string]string{"up": ""}}, "not a status page in the prometheus format"},
		{Source{URL: srv.URL + "/metrics", Format: Prometheus, Metrics: map[string]string{"up": ""}}, "none of the metrics up"},
		{Source{URL: srv.URL + "/missing", Format: Nginx}, "answered 404"},
		{Source{URL: "http://127.0.0.1:1/stub_status", Format: Nginx}, "connection refused"},
	} {
		g, err := c.src.Sample(ctx, time.Second)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "target.status_url "+c.src.URL) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s (%s): %v %v; want one line naming the URL and %q", c.src.URL, c.src.Format, g, err, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		src  Source
		want string
	}{
		{Source{URL: "ftp://x/", Format: Nginx}, "target.status_url"},
		{Source{URL: "http://x/", Format: "lighttpd"}, "target.status_format"},
		{Source{URL: "http://x/", Format: Prometheus}, "target.status_metrics: empty"},
		{Source{URL: "http://x/", Format: Apache, Metrics: map[string]string{"a": ""}}, "only a prometheus endpoint"},
	} {
		if err := c.src.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.src, err, c.want)
		}
	}
	if err := (Source{URL: "https://staging.example.com/server-status?auto", Format: Apache}).Check(); err != nil {
		t.Error(err)
	}
}
