package spdy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// body returns n deterministic bytes for a path.
func testBody(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Method", r.Method)
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		io.WriteString(w, "hello "+r.Host+" "+r.URL.Scheme)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		b := testBody(n, byte(n))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for len(b) > 0 {
			k := min(len(b), 16<<10)
			if _, err := w.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(500)
			return
		}
		w.Header().Set("X-Request-Length", r.Header.Get("Content-Length"))
		w.Write(b)
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/abort", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	return mux
}

// pipeClient serves srv on one end of a net.Pipe and returns a ClientConn on the other.
func pipeClient(t *testing.T, srv *Server, cfg ClientConfig) (*ClientConn, chan error) {
	t.Helper()
	a, b := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeConn(b) }()
	cc, err := NewClientConn(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, served
}

func get(t *testing.T, cc *ClientConn, path string, o RequestOptions) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", "https://www.wirelab.test"+path, nil)
	resp, err := cc.Do(req, o)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET %s body: %v", path, err)
	}
	return resp, b
}

func TestServerClientBasics(t *testing.T) {
	cc, _ := pipeClient(t, &Server{Handler: testHandler()}, ClientConfig{})
	resp, b := get(t, cc, "/small", RequestOptions{})
	if resp.StatusCode != 200 || string(b) != "hello www.wirelab.test https" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if resp.Header.Get("X-Method") != "GET" || strings.Join(resp.Header.Values("X-Multi"), ",") != "a,b" {
		t.Fatalf("headers %v", resp.Header)
	}
	if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Proto != "HTTP/1.1" || resp.Status != "200 OK" {
		t.Fatalf("%q %q %q", resp.Header.Get("Content-Type"), resp.Proto, resp.Status)
	}
	resp, b = get(t, cc, "/empty", RequestOptions{})
	if resp.StatusCode != 204 || len(b) != 0 {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	resp, _ = get(t, cc, "/nope", RequestOptions{})
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// http.Client over the RoundTripper.
	hc := &http.Client{Transport: cc}
	r2, err := hc.Get("https://www.wirelab.test/small")
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
}

// Many concurrent requests with bodies well beyond the 64 KiB stream window and, together, the
// session window; uploads too. Every byte must arrive.
func exerciseConcurrent(t *testing.T, cc *ClientConn) {
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 1000 + i*9000 // up to ~350 KB
			if i%5 == 0 {
				body := testBody(n, 3)
				req, _ := http.NewRequest("POST", "https://www.wirelab.test/echo", bytes.NewReader(body))
				resp, err := cc.Do(req, RequestOptions{Priority: uint8(i % 8)})
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				if err != nil || !bytes.Equal(got, body) || resp.Header.Get("X-Request-Length") != strconv.Itoa(n) {
					errs <- fmt.Errorf("echo %d: %d bytes, %v", n, len(got), err)
				}
				return
			}
			req, _ := http.NewRequest("GET", "https://www.wirelab.test/big?n="+strconv.Itoa(n), nil)
			resp, err := cc.Do(req, RequestOptions{Priority: uint8(i % 8)})
			if err != nil {
				errs <- err
				return
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, testBody(n, byte(n))) || resp.ContentLength != int64(n) {
				errs <- fmt.Errorf("big %d: got %d bytes, %v", n, len(got), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestServerClientConcurrentLargeBodiesPipe(t *testing.T) {
	cc, _ := pipeClient(t, &Server{Handler: testHandler()}, ClientConfig{})
	exerciseConcurrent(t, cc)
}

func TestServerClientConcurrentSmallWindows(t *testing.T) {
	cc, _ := pipeClient(t, &Server{Handler: testHandler(), Config: Config{InitialWindowSize: 4096}, DataChunkSize: 1000},
		ClientConfig{Config: Config{InitialWindowSize: 3000}, DataChunkSize: 777})
	exerciseConcurrent(t, cc)
}

func TestMaxConcurrentStreamsQueuing(t *testing.T) {
	var inflight, maxInflight atomic.Int32
	entered := make(chan struct{}, 100)
	release := make(chan struct{}, 100)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		for {
			m := maxInflight.Load()
			if n <= m || maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		inflight.Add(-1)
		io.WriteString(w, r.URL.Path)
	})
	cc, _ := pipeClient(t, &Server{Handler: h, Config: Config{MaxConcurrentStreams: 2}}, ClientConfig{})
	// One request first, so that the server's SETTINGS has certainly arrived.
	release <- struct{}{}
	get(t, cc, "/warmup", RequestOptions{})
	<-entered
	var queued atomic.Int32
	queuedCh := make(chan struct{}, 100)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &StreamTrace{Queued: func() { queued.Add(1); queuedCh <- struct{}{} }}
			_, b := get(t, cc, fmt.Sprintf("/q%d", i), RequestOptions{Trace: tr})
			if string(b) != fmt.Sprintf("/q%d", i) {
				t.Errorf("got %q", b)
			}
		}()
	}
	<-entered
	<-entered
	for i := 0; i < 8; i++ {
		<-queuedCh
	}
	for i := 0; i < 10; i++ {
		release <- struct{}{}
	}
	wg.Wait()
	if m := maxInflight.Load(); m != 2 {
		t.Fatalf("max in flight %d, want 2", m)
	}
	if q := queued.Load(); q != 8 {
		t.Fatalf("%d requests queued, want 8", q)
	}
}

func TestRstStream(t *testing.T) {
	handlerErr := make(chan error, 1)
	mux := http.NewServeMux()
	mux.Handle("/", testHandler())
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 8192)
		for {
			if _, err := w.Write(chunk); err != nil {
				handlerErr <- err
				return
			}
		}
	})
	cc, _ := pipeClient(t, &Server{Handler: mux}, ClientConfig{})
	req, _ := http.NewRequest("GET", "https://www.wirelab.test/endless", nil)
	resp, err := cc.Do(req, RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 100000))
	resp.Body.Close() // RST_STREAM(CANCEL)
	if err := <-handlerErr; err == nil {
		t.Fatal("handler's Write did not fail after the reset")
	}
	// A handler that aborts: the client sees the stream reset with INTERNAL_ERROR.
	req, _ = http.NewRequest("GET", "https://www.wirelab.test/abort", nil)
	resp, err = cc.Do(req, RequestOptions{})
	if err == nil {
		_, err = io.ReadAll(resp.Body)
	}
	var se *StreamError
	if !errors.As(err, &se) || se.Status != InternalError {
		t.Fatalf("aborted handler: %v", err)
	}
	// The session is still fine.
	if _, b := get(t, cc, "/small", RequestOptions{}); !strings.HasPrefix(string(b), "hello") {
		t.Fatalf("after resets: %q", b)
	}
}

func TestPingRoundTrip(t *testing.T) {
	cc, _ := pipeClient(t, &Server{Handler: testHandler()}, ClientConfig{})
	for i := 0; i < 3; i++ {
		rtt, err := cc.Ping(context.Background())
		if err != nil || rtt <= 0 {
			t.Fatalf("ping: %v %v", rtt, err)
		}
	}
}

func TestGoAwayFromServer(t *testing.T) {
	srv := &Server{Handler: testHandler()}
	cc, served := pipeClient(t, srv, ClientConfig{})
	get(t, cc, "/small", RequestOptions{})
	srv.Close()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("ServeConn: %v", err)
	}
	<-cc.Done()
	req, _ := http.NewRequest("GET", "https://www.wirelab.test/small", nil)
	if _, err := cc.Do(req, RequestOptions{}); err == nil {
		t.Fatal("request succeeded after GOAWAY")
	}
}

func TestGoAwayFromClient(t *testing.T) {
	cc, served := pipeClient(t, &Server{Handler: testHandler()}, ClientConfig{})
	get(t, cc, "/small", RequestOptions{})
	if err := cc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("ServeConn after client GOAWAY: %v", err)
	}
}

// The timing hooks fire once each, in the order of a request's life.
func TestStreamTraceOrder(t *testing.T) {
	cc, _ := pipeClient(t, &Server{Handler: testHandler()}, ClientConfig{})
	for _, upload := range []bool{false, true} {
		var mu sync.Mutex
		var seq []string
		rec := func(s string) func() { return func() { mu.Lock(); seq = append(seq, s); mu.Unlock() } }
		doneCh := make(chan struct{})
		tr := &StreamTrace{
			StreamOpened:    func(id uint32) { rec(fmt.Sprintf("opened %d", id%2))() },
			RequestWritten:  rec("written"),
			ResponseHeaders: rec("headers"),
			FirstDataByte:   rec("data"),
			ResponseDone:    func() { rec("done")(); close(doneCh) },
		}
		var req *http.Request
		if upload {
			req, _ = http.NewRequest("POST", "https://www.wirelab.test/echo", bytes.NewReader(testBody(200000, 1)))
		} else {
			req, _ = http.NewRequest("GET", "https://www.wirelab.test/big?n=100000", nil)
		}
		resp, err := cc.Do(req, RequestOptions{Trace: tr})
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		<-doneCh
		mu.Lock()
		got := strings.Join(seq, ",")
		mu.Unlock()
		if got != "opened 1,written,headers,data,done" {
			t.Fatalf("upload=%v: hooks %s", upload, got)
		}
	}
}

// With both responses queued, the higher priority's DATA goes first: after its first frame, no
// frame of the lower-priority stream is sent until it has finished.
func TestServerSendsByPriority(t *testing.T) {
	var mu sync.Mutex
	type sent struct {
		id uint32
		n  int
	}
	var order []sent
	barrier := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(2)
	go func() { arrived.Wait(); close(barrier) }()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-barrier
		w.Write(testBody(60000, 0))
	})
	srv := &Server{Handler: h, DataSent: func(id uint32, prio uint8, n int) {
		mu.Lock()
		order = append(order, sent{id, n})
		mu.Unlock()
	}}
	cc, _ := pipeClient(t, srv, ClientConfig{Config: Config{SessionWindowSize: 1 << 20}})
	var wg sync.WaitGroup
	ids := make(chan uint32, 2)
	for _, prio := range []uint8{7, 0} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &StreamTrace{StreamOpened: func(id uint32) { ids <- id<<3 | uint32(prio) }}
			get(t, cc, "/p", RequestOptions{Priority: prio, Trace: tr})
		}()
	}
	wg.Wait()
	var high uint32
	for range 2 {
		v := <-ids
		if v&7 == 0 {
			high = v >> 3
		}
	}
	mu.Lock()
	defer mu.Unlock()
	first := -1
	for i, s := range order {
		if s.id == high {
			first = i
			break
		}
	}
	highBytes := 0
	for i := first; i < len(order); i++ {
		if order[i].id == high {
			highBytes += order[i].n
			continue
		}
		if highBytes < 60000 {
			t.Fatalf("low-priority DATA at position %d before the high-priority stream finished (%d bytes): %v", i, highBytes, order)
		}
	}
	if highBytes != 60000 {
		t.Fatalf("high-priority stream sent %d bytes", highBytes)
	}
}

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wirelab test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"www.wirelab.test"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// Over a real TLS loopback connection negotiated with ALPN spdy/3.1.
func TestTLSLoopback(t *testing.T) {
	cert, pool := selfSigned(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: testHandler(), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()

	tc, err := tls.Dial("tcp", l.Addr().String(), ClientTLSConfig(&tls.Config{RootCAs: pool, ServerName: "www.wirelab.test"}))
	if err != nil {
		t.Fatal(err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "spdy/3.1" {
		t.Fatalf("ALPN %q", p)
	}
	cc, err := NewClientConn(tc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	exerciseConcurrent(t, cc)
	if rtt, err := cc.Ping(context.Background()); err != nil || rtt <= 0 {
		t.Fatalf("ping: %v %v", rtt, err)
	}

	// A client that offers only h2 gets no SPDY session.
	bad, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "www.wirelab.test", NextProtos: []string{"h2"}})
	if err == nil {
		_, err = NewClientConn(bad, ClientConfig{})
		bad.Close()
	}
	if err == nil {
		t.Fatal("a client without spdy/3.1 in ALPN got a session")
	}
}

// TestServerPush: a handler pushes two resources before its response; a client that accepts
// pushes gets them (URL, headers, body, hook order) without requesting them, pushed streams carry
// the request stream's priority, a pushed response cannot push, and a client without AcceptPush
// refuses pushes while its request still completes.
func TestServerPush(t *testing.T) {
	pushErr := make(chan error, 8)
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		for _, p := range []string{"/pushed/a?n=3000", "/pushed/b?n=70000"} {
			if err := w.(http.Pusher).Push(p, nil); err != nil {
				io.WriteString(w, "push failed: "+err.Error())
				return
			}
		}
		io.WriteString(w, "page")
	})
	mux.HandleFunc("/pushed/", func(w http.ResponseWriter, r *http.Request) {
		pushErr <- w.(http.Pusher).Push("/pushed/x", nil)
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Header().Set("X-Priority", strconv.Itoa(int(w.(interface{ Priority() uint8 }).Priority())))
		w.Write(testBody(n, byte(n)))
	})
	var mu sync.Mutex
	var promises []PushPromise
	var hooks []string
	accept := func(p PushPromise) (*StreamTrace, bool) {
		mu.Lock()
		promises = append(promises, p)
		mu.Unlock()
		note := func(s string) func() {
			return func() { mu.Lock(); hooks = append(hooks, fmt.Sprint(p.StreamID, s)); mu.Unlock() }
		}
		return &StreamTrace{ResponseHeaders: note(" headers"), FirstDataByte: note(" data"), ResponseDone: note(" done")}, true
	}
	// The test reads the pushed bodies one after the other. With SPDY/3.1's initial session window
	// (64 KB, credited back as the application reads) the server may send b's 64 KB before a's
	// 3 KB, and a reader waiting for a then never frees the window a needs: a window that holds
	// every unread body avoids that deadlock (the engine's loader grants large windows too).
	cc, _ := pipeClient(t, &Server{Handler: mux}, ClientConfig{AcceptPush: accept, Config: Config{SessionWindowSize: 1 << 20}})
	_, body := get(t, cc, "/page", RequestOptions{Priority: 2})
	if string(body) != "page" {
		t.Fatalf("page body %q", body)
	}
	mu.Lock()
	got := append([]PushPromise(nil), promises...)
	mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d pushes, want 2", len(got))
	}
	for i, p := range got {
		want := []string{"/pushed/a?n=3000", "/pushed/b?n=70000"}[i]
		if p.StreamID != uint32(2*(i+1)) || p.AssociatedStreamID != 1 || p.Priority != 2 ||
			p.URL.String() != "https://www.wirelab.test"+want {
			t.Errorf("push %d: %+v (URL %s)", i, p, p.URL)
		}
		resp, err := cc.Pushed(context.Background(), p.StreamID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		n, _ := strconv.Atoi(p.URL.Query().Get("n"))
		if err != nil || !bytes.Equal(b, testBody(n, byte(n))) || resp.StatusCode != 200 ||
			resp.ContentLength != int64(n) || resp.Header.Get("X-Priority") != "2" {
			t.Errorf("pushed %s: %v, status %d, %d bytes, headers %v", p.URL, err, resp.StatusCode, len(b), resp.Header)
		}
		if _, err := cc.Pushed(context.Background(), p.StreamID); err == nil {
			t.Errorf("pushed stream %d taken twice", p.StreamID)
		}
	}
	for range 2 {
		if err := <-pushErr; !errors.Is(err, ErrRecursivePush) {
			t.Errorf("push from a pushed response: %v, want ErrRecursivePush", err)
		}
	}
	mu.Lock()
	for _, id := range []uint32{2, 4} {
		var seen []string
		for _, h := range hooks {
			if strings.HasPrefix(h, fmt.Sprint(id, " ")) {
				seen = append(seen, strings.TrimPrefix(h, fmt.Sprint(id, " ")))
			}
		}
		if strings.Join(seen, ",") != "headers,data,done" {
			t.Errorf("stream %d hooks %v", id, seen)
		}
	}
	mu.Unlock()

	// Without AcceptPush the client refuses the pushes; the page still arrives.
	cc2, _ := pipeClient(t, &Server{Handler: mux}, ClientConfig{})
	if _, body := get(t, cc2, "/page", RequestOptions{}); string(body) != "page" {
		t.Fatalf("page body without push: %q", body)
	}
}
