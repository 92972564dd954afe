package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/trial"
)

// ServersOptions configure the servers benchmark (`wirelab-engine bench servers`).
type ServersOptions struct {
	Quick    bool      // fewer loads (make bench)
	Servers  []string  // the implementations (default: every one installed)
	Progress io.Writer // one line per trial; nil for none
	Engine   string    // the wirelab-engine binary ("" = this one)
	Env      []string  // its environment (nil = this process's)
}

// ServersResult is what the servers benchmark prints: per server and protocol, the imgur page over
// an unimpaired path — its PLT and what the server spent per load.
type ServersResult struct {
	Page      string       `json:"page"`
	Network   string       `json:"network"`
	Rows      []ServersRow `json:"rows"`
	Machine   Machine      `json:"machine"`
	DurationS float64      `json:"duration_s"`
}

// ServersRow is one server and protocol.
type ServersRow struct {
	Server   string `json:"server"`
	Version  string `json:"version"`
	Protocol string `json:"protocol"`
	Loads    int    `json:"loads"`
	Errors   int    `json:"errors"`
	// PLTMsMedian is the page load time's median; ServerCPUMsMedian the server's CPU per load
	// (its control group), ServerCPUUsPerRequest that divided by the page's requests.
	PLTMsMedian           float64 `json:"plt_ms_median"`
	ServerCPUMsMedian     float64 `json:"server_cpu_ms_median"`
	ServerCPUUsPerRequest float64 `json:"server_cpu_us_per_request"`
	ServerMemPeakMBMedian float64 `json:"server_mem_peak_mb_median"`
	LatenessP99US         float64 `json:"lateness_p99_us"`
}

// Servers runs one trial per server (imgur over h1s and h2, unimpaired path), in turn, in one run.
func Servers(ctx context.Context, opt ServersOptions) (*ServersResult, error) {
	const page, network = "imgur", "native"
	res := &ServersResult{Page: page, Network: network, Machine: machine()}
	start := time.Now()
	reps := 20
	if opt.Quick {
		reps = 10
	}
	names := opt.Servers
	if len(names) == 0 {
		for _, s := range impl.All {
			if bin := s.Support().Binary; bin != "" {
				if _, err := os.Stat(bin); err != nil {
					continue
				}
			}
			names = append(names, s.Name())
		}
	}
	tmp, err := os.MkdirTemp("", "wirelab-bench-servers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, name := range names {
		spec := fmt.Sprintf(`{"trial_id":"bench-servers-%s","page":%q,"protocols":["h1s","h2"],"repetitions":%d,"network":%q,"server":{"impl":%q,"max_concurrent_streams":0},"capture":{"har":false}}`,
			name, page, reps, network, name)
		dir := filepath.Join(tmp, name)
		t0 := time.Now()
		r, recs, err := runTrial(ctx, spec, dir, trial.Options{Engine: opt.Engine, Env: opt.Env})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "bench servers: %s: %d loads in %.1f s\n", name, r.Loads, time.Since(t0).Seconds())
		}
		version := ""
		if r.Provenance.Server != nil {
			version = r.Provenance.Server.Version
		}
		for _, proto := range []string{"h1s", "h2"} {
			row := ServersRow{Server: name, Version: version, Protocol: proto, LatenessP99US: r.Emulator.LatenessUS.P99}
			var plt, cpu, mem []float64
			requests := 0
			for _, rec := range recs {
				if rec.Protocol != proto {
					continue
				}
				row.Loads++
				if rec.Error != nil || rec.ServerCPUMs == nil {
					row.Errors++
					continue
				}
				plt = append(plt, rec.PltMs)
				cpu = append(cpu, *rec.ServerCPUMs)
				if rec.ServerRSSPeakBytes != nil {
					mem = append(mem, float64(*rec.ServerRSSPeakBytes)/1e6)
				}
				requests = int(rec.Objects)
			}
			row.PLTMsMedian, row.ServerCPUMsMedian, row.ServerMemPeakMBMedian = median(plt), median(cpu), median(mem)
			if requests > 0 {
				row.ServerCPUUsPerRequest = row.ServerCPUMsMedian * 1000 / float64(requests)
			}
			res.Rows = append(res.Rows, row)
		}
		os.RemoveAll(dir)
	}
	res.DurationS = time.Since(start).Seconds()
	return res, nil
}
