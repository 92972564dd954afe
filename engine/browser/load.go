package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performancetimeline"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// TraceCategories are the trace categories a recording load enables: the renderer's timeline
// (ParseHTML, EvaluateScript, ParseAuthorStyleSheet, the Resource* network events) and V8's
// script compilation and execution.
var TraceCategories = []string{
	"devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing", "loading",
}

// traceEndTimeout bounds the wait for Chromium's trace after a load (tracing.End and the data).
const traceEndTimeout = 30 * time.Second

// Load loads url in a fresh Chromium (new profile, empty cache) and returns what it measured: a
// first view, or with Config.View repeat the second of two loads in the same profile (the first
// one's measurements in Result.FirstView). The error is for input that prevents the load (bad
// configuration, a refused URL, Chromium that does not start); failures during the load are in
// Result.Err with the partial measurements. Chromium and every process it started are gone, and
// its profile removed, when Load returns.
func Load(ctx context.Context, cfg Config, rawURL string) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want an absolute http or https URL", rawURL)
	}
	if u.Scheme != cfg.Protocol.Scheme() {
		return nil, fmt.Errorf("url %q: scheme %s does not match protocol %s (which needs %s URLs)", rawURL, u.Scheme, cfg.Protocol, cfg.Protocol.Scheme())
	}
	if err := cfg.checkHost(u.Hostname()); err != nil {
		return nil, fmt.Errorf("url %q: %w", rawURL, err)
	}
	profile, err := newProfile(cfg.ProfileParent)
	if err != nil {
		return nil, err
	}
	becomeSubreaper()
	started := time.Now()
	var cmd *exec.Cmd
	var stderr lineWriter
	stderr.fn = cfg.Stderr
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(cfg.ExecPath),
		chromedp.UserDataDir(profile),
		chromedp.CombinedOutput(&stderr),
		chromedp.ModifyCmdFunc(func(c *exec.Cmd) {
			if c.SysProcAttr == nil {
				c.SysProcAttr = &syscall.SysProcAttr{}
			}
			c.SysProcAttr.Setpgid = true
			c.SysProcAttr.Pdeathsig = syscall.SIGKILL
			cmd = c
		}),
	}
	if len(cfg.QUICHosts) == 0 {
		cfg.QUICHosts = []string{u.Hostname()}
	}
	netLog := ""
	if u.Scheme == "https" {
		// Whether a handshake resumed, and QUIC's 0-RTT, are in the NetLog only (netlog.go).
		netLog = filepath.Join(profile, netLogFile)
		opts = append(opts, chromedp.Flag("log-net-log", netLog))
	}
	recordedSince := time.Now() // when the recorded view begins (a repeat view: after the first)
	for _, f := range cfg.Flags() {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}

	res := &Result{URL: rawURL, Protocol: cfg.Protocol, Flags: cfg.Flags(), View: cfg.View,
		cpuSlowdown: cfg.CPUSlowdown, viewport: cfg.Viewport, h3: cfg.H3}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	pid := 0
	defer func() {
		cancelTab()
		cancelAlloc() // kills the browser process and waits for it
		killTree(pid, started)
		if pid > 0 {
			trackBrowser(pid, false)
		}
		if netLog != "" {
			res.readHandshakes(netLog, recordedSince)
		}
		if err := removeAll(profile); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("remove chromium profile: %w", err)
		}
	}()

	// Start the browser (attaching to its first tab) within the load's time budget.
	loadCtx, cancelLoad := context.WithTimeout(tabCtx, cfg.Timeout)
	defer cancelLoad()
	stopWithParent := context.AfterFunc(ctx, cancelLoad)
	defer stopWithParent()
	startCtx, stopStart := context.WithCancel(tabCtx)
	defer stopStart()
	stopOnDone := context.AfterFunc(loadCtx, stopStart)
	err = chromedp.Do(startCtx)
	stopOnDone()
	if cmd != nil && cmd.Process != nil {
		pid = cmd.Process.Pid
		trackBrowser(pid, true)
	}
	if err != nil {
		return nil, fmt.Errorf("chromium did not start: %w%s", err, stderr.tail())
	}
	if v, err := chromedp.CallBrowser(tabCtx, cdpbrowser.GetVersion, cdp.Empty{}); err == nil {
		res.Version = v.Product
	}
	// One listener for the whole tab; events go to the recorder of the view being loaded.
	var current atomic.Pointer[recorder]
	if err := chromedp.Listen(tabCtx, func(ev any) {
		if r := current.Load(); r != nil {
			r.onEvent(ev)
		}
	}); err != nil {
		return nil, fmt.Errorf("chromium devtools: %w", err)
	}
	if err := setupTab(loadCtx, cfg); err != nil {
		return nil, fmt.Errorf("chromium devtools setup: %w%s", err, stderr.tail())
	}
	if cfg.View == RepeatView {
		first := newRecorder(false, false)
		current.Store(first)
		firstRes := &Result{URL: rawURL, Protocol: cfg.Protocol}
		err := navigateAndWait(loadCtx, ctx, first, rawURL, &stderr)
		first.fill(firstRes, cfg.checkHost)
		res.FirstView = firstRes
		if err == nil {
			err = firstRes.Err
		}
		if err != nil {
			res.Err = fmt.Errorf("first view: %w", err)
			return res, nil
		}
		if err := closeConnections(loadCtx); err != nil {
			res.Err = fmt.Errorf("between the views: %w%s", err, stderr.tail())
			return res, nil
		}
	}
	// Every recorded view is traced: LCP and layout shifts (category loading) cost little; the
	// screenshots only with Config.Screenshots, the devtools timeline only with Config.Trace.
	rec := newRecorder(cfg.Trace, true)
	current.Store(rec)
	{
		categories := []string{categoryLoading}
		if cfg.Trace {
			categories = TraceCategories
		}
		if cfg.Screenshots {
			categories = append(categories, categoryScreenshots)
		}
		if _, err := chromedp.Call(loadCtx, tracing.Start, tracing.StartParams{
			TransferMode: tracing.StartTransferModeReportEvents,
			TraceConfig: &tracing.TraceConfig{IncludedCategories: categories,
				RecordMode: tracing.TraceConfigRecordModeRecordAsMuchAsPossible},
		}); err != nil {
			return nil, fmt.Errorf("chromium devtools setup: %w%s", err, stderr.tail())
		}
	}
	recordedSince = time.Now()
	res.StartedAt = recordedSince
	res.Err = navigateAndWait(loadCtx, ctx, rec, rawURL, &stderr)
	{
		if res.Err == nil {
			// What arrived last is on screen before the trace ends (visualSettle).
			if err := visualSettle(loadCtx); err != nil {
				res.Err = fmt.Errorf("after the load: %w", err)
			}
		}
		endCtx, cancel := context.WithTimeout(tabCtx, traceEndTimeout)
		_, err := chromedp.Call(endCtx, tracing.End, cdp.Empty{})
		if err == nil {
			err = rec.waitTrace(endCtx)
		}
		cancel()
		if err != nil && res.Err == nil {
			res.Err = fmt.Errorf("tracing: %w", err)
		}
	}
	rec.fill(res, cfg.checkHost)
	if v, err := rec.visual(res.t0, cfg.Screenshots); err != nil {
		if res.Err == nil {
			res.Err = fmt.Errorf("visual metrics: %w", err)
		}
	} else {
		res.Visual = v
	}
	if cfg.Trace {
		res.Trace = rec.traceEvents
	}
	if cfg.KeepVisualTrace {
		res.VisualTrace = rec.visualTrace()
	}
	return res, nil
}

// setupTab enables the CDP domains a load reads and applies the emulated device.
func setupTab(ctx context.Context, cfg Config) error {
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return err
	}
	// A first view's profile is fresh anyway; a repeat view needs the first view's cache.
	if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: cfg.View != RepeatView}); err != nil {
		return err
	}
	// Chromium asks for /favicon.ico by itself once a page has loaded; lab pages have none
	// (their objects live below /L/<token>/), so it is blocked and never sent.
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{
		URLPatterns: []*network.BlockPattern{{URLPattern: "*://*:*/favicon.ico", Block: true}}}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, page.Enable, page.EnableParams{}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, page.SetLifecycleEventsEnabled, page.SetLifecycleEventsEnabledParams{Enabled: true}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, performancetimeline.Enable, performancetimeline.EnableParams{
		EventTypes: []string{"largest-contentful-paint"}}); err != nil {
		return err
	}
	vp := cfg.Viewport
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(vp.Width), Height: int64(vp.Height), DeviceScaleFactor: vp.DPR, Mobile: vp.Mobile}); err != nil {
		return err
	}
	if cfg.CPUSlowdown > 1 {
		if _, err := chromedp.Call(ctx, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: cfg.CPUSlowdown}); err != nil {
			return err
		}
	}
	return nil
}

// navigateAndWait navigates the tab to url and waits for the page to load (recorder.wait).
func navigateAndWait(loadCtx, parent context.Context, rec *recorder, rawURL string, stderr *lineWriter) error {
	nav, err := chromedp.Call(loadCtx, page.Navigate, page.NavigateParams{URL: rawURL})
	if err == nil && nav.ErrorText != "" {
		err = errors.New(nav.ErrorText)
	}
	rec.setMain(string(nav.FrameID), string(nav.LoaderID))
	if err != nil {
		return fmt.Errorf("navigate: %w", err)
	}
	err = rec.wait(loadCtx, parent)
	if errors.Is(err, errBrowserGone) {
		err = fmt.Errorf("%w%s", err, stderr.tail())
	}
	return err
}

// closeConnections ends the first view: the tab leaves the page (about:blank) and every
// connection of the network service closes — idle sockets, HTTP/2 sessions, QUIC sessions —
// while the HTTP cache, the TLS session cache, QUIC's resumption state, the host cache and the
// Alt-Svc cache stay (chrome.benchmarking, --enable-net-benchmarking).
func closeConnections(ctx context.Context) error {
	if _, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
		return fmt.Errorf("about:blank: %w", err)
	}
	r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    "chrome.benchmarking.closeConnections(), true",
		ReturnByValue: new(true)})
	if err == nil && r.ExceptionDetails != nil {
		err = fmt.Errorf("%s", r.ExceptionDetails.Text)
	}
	if err != nil {
		return fmt.Errorf("close connections: %w", err)
	}
	return nil
}

// settleScript resolves once every image the page has loaded is decoded and two animation frames
// have run since: what arrived last has been painted.
const settleScript = `(async () => {
	await Promise.all(Array.from(document.images, i => i.complete && i.naturalWidth > 0 && i.decode ? i.decode().catch(() => 0) : 0));
	await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
	return true;
})()`

// PresentationGrace is how long the trace goes on after the last paint of a load (settleScript) so
// that the frame is presented, its screenshot taken and its LCP candidate emitted.
const PresentationGrace = 100 * time.Millisecond

// visualSettle waits, after a load, until its last paint is on screen: every loaded image decoded,
// two animation frames, then PresentationGrace.
func visualSettle(ctx context.Context) error {
	r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: settleScript, AwaitPromise: new(true), ReturnByValue: new(true)})
	if err == nil && r.ExceptionDetails != nil {
		err = fmt.Errorf("%s", r.ExceptionDetails.Text)
	}
	if err != nil {
		return err
	}
	select {
	case <-time.After(PresentationGrace):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// removeAll removes the profile directory. Chromium's processes are gone when it is called.
func removeAll(dir string) error {
	var err error
	for range 3 { // a last write racing the kill can make one RemoveAll fail with ENOTEMPTY
		if err = removeDir(dir); err == nil {
			return nil
		}
	}
	return err
}

// lineWriter keeps the last lines Chromium printed (for error messages) and forwards each line.
type lineWriter struct {
	mu    sync.Mutex
	fn    func(string)
	part  []byte
	lines []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := strings.IndexByte(string(w.part), '\n')
		if i < 0 {
			break
		}
		line := string(w.part[:i])
		w.part = w.part[i+1:]
		if w.fn != nil {
			w.fn(line)
		}
		w.lines = append(w.lines, line)
		if len(w.lines) > 20 {
			w.lines = w.lines[1:]
		}
	}
	return len(p), nil
}

// tail is the last lines of Chromium's output, for an error message.
func (w *lineWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lines) == 0 {
		return ""
	}
	return "; chromium said: " + strings.Join(w.lines[max(0, len(w.lines)-3):], " | ")
}

var removeDir = os.RemoveAll
