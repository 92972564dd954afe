package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// TraceCategories are the trace categories a recording load enables: the renderer's timeline
// (ParseHTML, EvaluateScript, ParseAuthorStyleSheet, the Resource* network events) and V8's
// script compilation and execution.
var TraceCategories = []string{
	"devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing", "loading",
}

// Load loads url in a fresh Chromium (new profile, empty cache) and returns what it measured.
// The error is for input that prevents the load (bad configuration, a refused URL, Chromium that
// does not start); failures during the load are in Result.Err with the partial measurements.
// Chromium and every process it started are gone, and its profile removed, when Load returns.

// traceEndTimeout bounds the wait for Chromium's trace after a load (tracing.End and the data).
const traceEndTimeout = 30 * time.Second

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
	for _, f := range cfg.Flags() {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}

	res := &Result{URL: rawURL, Protocol: cfg.Protocol, Flags: cfg.Flags()}
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
	rec := newRecorder(cfg.Trace)
	if err := chromedp.Listen(tabCtx, rec.onEvent); err != nil {
		return nil, fmt.Errorf("chromium devtools: %w", err)
	}
	setup := func(ctx context.Context) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
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
		if cfg.Trace {
			_, err := chromedp.Call(ctx, tracing.Start, tracing.StartParams{
				TransferMode: tracing.StartTransferModeReportEvents,
				TraceConfig: &tracing.TraceConfig{IncludedCategories: TraceCategories,
					RecordMode: tracing.TraceConfigRecordModeRecordAsMuchAsPossible},
			})
			return err
		}
		return nil
	}
	if err := setup(loadCtx); err != nil {
		return nil, fmt.Errorf("chromium devtools setup: %w%s", err, stderr.tail())
	}
	res.StartedAt = time.Now()
	var frame, loader string
	nav, navErr := chromedp.Call(loadCtx, page.Navigate, page.NavigateParams{URL: rawURL})
	if navErr == nil && nav.ErrorText != "" {
		navErr = errors.New(nav.ErrorText)
	}
	frame, loader = string(nav.FrameID), string(nav.LoaderID)
	rec.setMain(frame, loader)
	if navErr != nil {
		res.Err = fmt.Errorf("navigate: %w", navErr)
	} else {
		res.Err = rec.wait(loadCtx, ctx)
		if errors.Is(res.Err, errBrowserGone) {
			res.Err = fmt.Errorf("%w%s", res.Err, stderr.tail())
		}
	}
	if cfg.Trace {
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
	return res, nil
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
