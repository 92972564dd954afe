package client

import (
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/wirelab/wirelab/engine/har"
)

// HARPageID is the id of the one page of a load's HAR.
const HARPageID = "page_1"

// HAR converts the load into a HAR 1.2 log (write it with har.Write). One page, one entry per
// request in issue order, with wirelab's _connection, _protocol and _stream_id (absent for HTTP/1.1),
// _was_pushed (1, as Chrome writes it) for responses that came by server push and _priority for
// requests that signalled one.
// The page's onLoad is the PLT (the loader has no DOM: onContentLoad is -1). Request headers are
// those the loader sends; response headers are not kept (empty, as HAR allows); a failed
// request's error is its entry's comment.
func (r *Result) HAR(creatorVersion string) *har.Log {
	l := &har.Log{
		Creator: har.Creator{Name: "wirelab-engine", Version: creatorVersion},
		Pages: []har.Page{{
			StartedDateTime: r.StartedAt.UTC(),
			ID:              HARPageID,
			Title:           r.URL,
			PageTimings:     har.PageTimings{OnContentLoad: -1, OnLoad: ms(r.PLT)},
		}},
		Entries: make([]har.Entry, 0, len(r.Entries)),
	}
	if r.Err != nil {
		l.Pages[0].Comment = "load error: " + r.Err.Error()
	}
	remote := map[int]string{}
	for _, c := range r.Conns {
		if host, _, err := net.SplitHostPort(c.Remote); err == nil {
			remote[c.ID] = host
		}
	}
	for _, e := range r.Entries {
		l.Entries = append(l.Entries, harEntry(e, remote[e.Connection], r.userAgent))
	}
	return l
}

func harEntry(e Entry, serverIP, userAgent string) har.Entry {
	httpVersion := e.Protocol
	u, _ := url.Parse(e.URL)
	var query []har.NameValue
	if u != nil {
		for k, vs := range u.Query() {
			for _, v := range vs {
				query = append(query, har.NameValue{Name: k, Value: v})
			}
		}
	}
	host := ""
	if u != nil {
		host = u.Host
	}
	he := har.Entry{
		Pageref:         HARPageID,
		StartedDateTime: e.StartedAt.UTC(),
		Time:            e.Time,
		Request: har.Request{
			Method: http.MethodGet, URL: e.URL, HTTPVersion: httpVersion,
			Headers: []har.NameValue{
				{Name: "Host", Value: host},
				{Name: "User-Agent", Value: userAgent},
				{Name: "Accept", Value: "*/*"},
				{Name: "Accept-Encoding", Value: "identity"},
			},
			QueryString: query, HeadersSize: -1, BodySize: 0,
		},
		Response: har.Response{
			Status: e.Status, StatusText: http.StatusText(e.Status), HTTPVersion: httpVersion,
			Content:     har.Content{Size: e.BodyBytes, MimeType: e.ContentType},
			HeadersSize: -1, BodySize: e.BodyBytes,
		},
		Timings: har.Timings{
			Blocked: e.Timings.Blocked, DNS: e.Timings.DNS, Connect: e.Timings.Connect, SSL: e.Timings.SSL,
			Send: e.Timings.Send, Wait: e.Timings.Wait, Receive: e.Timings.Receive,
		},
		ServerIPAddress: serverIP,
		Comment:         e.Error,
		Protocol:        e.Protocol,
	}
	if e.Connection > 0 {
		he.ConnectionID = strconv.Itoa(e.Connection)
	}
	if e.StreamID >= 0 {
		he.StreamID = har.Stream(uint64(e.StreamID))
	}
	if e.Pushed {
		he.WasPushed = 1 // as Chrome marks pushed responses
	}
	if e.cacheBefore != nil {
		he.Cache.BeforeRequest = e.cacheBefore
		he.Cache.Comment = e.Cache // hit: no request was sent; revalidated: answered 304
	}
	for _, h := range [...]har.NameValue{{Name: "If-None-Match", Value: e.ifNoneMatch}, {Name: "If-Modified-Since", Value: e.ifModifiedSince}} {
		if h.Value != "" {
			he.Request.Headers = append(he.Request.Headers, h)
		}
	}
	he.PrioritySignal = e.Priority
	return he
}
