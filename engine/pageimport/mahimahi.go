package pageimport

import (
	"bytes"
	"fmt"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/page"
)

// mahimahi's recordings (mm-webrecord): a folder with one file per request/response pair, each a
// serialized MahimahiProtobufs.RequestResponse (mahimahi's src/protobufs/http_record.proto,
// proto2):
//
//	message HTTPMessage     { optional bytes first_line = 1; repeated HTTPHeader header = 2; optional bytes body = 3; }
//	message HTTPHeader      { optional bytes key = 1; optional bytes value = 2; }
//	message RequestResponse { optional string ip = 1; optional uint32 port = 2;
//	                          enum Scheme { HTTP = 1; HTTPS = 2; } optional Scheme scheme = 3;
//	                          optional HTTPMessage request = 4; optional HTTPMessage response = 5; }
//
// The schema is declared here as a descriptor and the files are decoded by the protobuf library
// (dynamicpb), not by hand.

var recordType = func() protoreflect.MessageType {
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	field := func(name string, n int32, label *descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Label: label, Type: typ.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	const (
		tBytes   = descriptorpb.FieldDescriptorProto_TYPE_BYTES
		tString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
		tUint32  = descriptorpb.FieldDescriptorProto_TYPE_UINT32
		tEnum    = descriptorpb.FieldDescriptorProto_TYPE_ENUM
		tMessage = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	file := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("wirelab/mahimahi_http_record.proto"),
		Package: proto.String("MahimahiProtobufs"),
		Syntax:  proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("HTTPMessage"), Field: []*descriptorpb.FieldDescriptorProto{
				field("first_line", 1, opt, tBytes, ""),
				field("header", 2, rep, tMessage, ".MahimahiProtobufs.HTTPHeader"),
				field("body", 3, opt, tBytes, ""),
			}},
			{Name: proto.String("HTTPHeader"), Field: []*descriptorpb.FieldDescriptorProto{
				field("key", 1, opt, tBytes, ""),
				field("value", 2, opt, tBytes, ""),
			}},
			{Name: proto.String("RequestResponse"), Field: []*descriptorpb.FieldDescriptorProto{
				field("ip", 1, opt, tString, ""),
				field("port", 2, opt, tUint32, ""),
				field("scheme", 3, opt, tEnum, ".MahimahiProtobufs.RequestResponse.Scheme"),
				field("request", 4, opt, tMessage, ".MahimahiProtobufs.HTTPMessage"),
				field("response", 5, opt, tMessage, ".MahimahiProtobufs.HTTPMessage"),
			}, EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("Scheme"), Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("HTTP"), Number: proto.Int32(1)},
				{Name: proto.String("HTTPS"), Number: proto.Int32(2)},
			}}}},
		},
	}
	fd, err := protodesc.NewFile(file, nil)
	if err != nil {
		panic(err)
	}
	return dynamicpb.NewMessageType(fd.Messages().ByName("RequestResponse"))
}()

// mahimahiRecord is one decoded request/response pair.
type mahimahiRecord struct {
	file        string
	method, url string
	status      int
	contentType string
	body        int64
	bodyText    []byte // HTML and CSS bodies (for references), at most scanLimit bytes
}

const scanLimit = 4 << 20

// decodeRecord decodes one record file (data) or says why it is not one.
func decodeRecord(file string, data []byte) (*mahimahiRecord, error) {
	msg := recordType.New()
	if err := proto.Unmarshal(data, msg.Interface()); err != nil {
		return nil, fmt.Errorf("not a mahimahi record (MahimahiProtobufs.RequestResponse): %v", err)
	}
	fields := msg.Descriptor().Fields()
	if !msg.Has(fields.ByName("request")) || !msg.Has(fields.ByName("response")) {
		return nil, fmt.Errorf("not a mahimahi record: no request or no response")
	}
	req := msg.Get(fields.ByName("request")).Message()
	resp := msg.Get(fields.ByName("response")).Message()
	first := func(m protoreflect.Message) string {
		return string(m.Get(m.Descriptor().Fields().ByName("first_line")).Bytes())
	}
	headers := func(m protoreflect.Message) textproto.MIMEHeader {
		h := textproto.MIMEHeader{}
		list := m.Get(m.Descriptor().Fields().ByName("header")).List()
		for i := range list.Len() {
			hm := list.Get(i).Message()
			hf := hm.Descriptor().Fields()
			h.Add(string(hm.Get(hf.ByName("key")).Bytes()), strings.TrimSpace(string(hm.Get(hf.ByName("value")).Bytes())))
		}
		return h
	}
	reqLine := strings.Fields(first(req))
	if len(reqLine) != 3 || !strings.HasPrefix(reqLine[2], "HTTP/") {
		return nil, fmt.Errorf("not a mahimahi record: request line %q", cut(first(req)))
	}
	respLine := strings.Fields(first(resp))
	if len(respLine) < 2 || !strings.HasPrefix(respLine[0], "HTTP/") {
		return nil, fmt.Errorf("not a mahimahi record: status line %q", cut(first(resp)))
	}
	status, err := strconv.Atoi(respLine[1])
	if err != nil {
		return nil, fmt.Errorf("not a mahimahi record: status line %q", cut(first(resp)))
	}
	reqHeaders, respHeaders := headers(req), headers(resp)
	scheme := "http"
	if msg.Get(fields.ByName("scheme")).Enum() == 2 {
		scheme = "https"
	}
	host := reqHeaders.Get("Host")
	if host == "" {
		host = fmt.Sprintf("%s:%d", msg.Get(fields.ByName("ip")).String(), msg.Get(fields.ByName("port")).Uint())
	}
	target := reqLine[1]
	u, err := url.Parse(scheme + "://" + host + target)
	if err != nil || u.Host == "" || !strings.HasPrefix(target, "/") {
		return nil, fmt.Errorf("not a mahimahi record: request target %q of host %q", cut(target), cut(host))
	}
	body := resp.Get(resp.Descriptor().Fields().ByName("body")).Bytes()
	rec := &mahimahiRecord{file: file, method: reqLine[0], url: u.String(), status: status,
		contentType: respHeaders.Get("Content-Type"), body: int64(len(body))}
	if t := page.TypeFromMIME(rec.contentType); t == page.TypeHTML || t == page.TypeCSS {
		rec.bodyText = body[:min(len(body), scanLimit)]
	}
	return rec, nil
}

func cut(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// mahimahiPage builds a page from a recording's records. A recording has no timings and no
// initiators: the root is the HTML document that references the most recorded URLs, an object's
// initiator is the document or stylesheet whose body references it (the root when none does), and
// the graph (browser.PageFromEntries) has no computation time.
func mahimahiPage(name, label string, recs []*mahimahiRecord) (*page.Page, error) {
	var kept []*mahimahiRecord
	seen := map[string]bool{}
	for _, r := range recs {
		if r.method != "GET" || r.status < 200 || r.status >= 300 || seen[r.url] {
			continue
		}
		seen[r.url] = true
		kept = append(kept, r)
	}
	refs := func(doc *mahimahiRecord, r *mahimahiRecord) bool {
		if len(doc.bodyText) == 0 || doc == r {
			return false
		}
		u, _ := url.Parse(r.url)
		return bytes.Contains(doc.bodyText, []byte(r.url)) || (u.RequestURI() != "/" && bytes.Contains(doc.bodyText, []byte(u.RequestURI())))
	}
	root, best := -1, -1
	for i, r := range kept {
		if page.TypeFromMIME(r.contentType) != page.TypeHTML {
			continue
		}
		n := 0
		for _, o := range kept {
			if refs(r, o) {
				n++
			}
		}
		if n > best || (n == best && len(r.url) < len(kept[root].url)) {
			root, best = i, n
		}
	}
	if root < 0 {
		return nil, fmt.Errorf("no HTML document among the recording's successful GET responses")
	}
	kept[0], kept[root] = kept[root], kept[0]
	if len(kept) > page.MaxObjects {
		return nil, fmt.Errorf("%d objects (GET 2xx responses); a page has at most %d", len(kept), page.MaxObjects)
	}
	var total int64
	entries := make([]browser.Entry, len(kept))
	for i, r := range kept {
		if total += r.body; total > page.MaxPageBytes {
			return nil, fmt.Errorf("the responses' bodies pass %d bytes; a page has at most %d", int64(page.MaxPageBytes), int64(page.MaxPageBytes))
		}
		e := browser.Entry{URL: r.url, Method: "GET", Status: r.status, MimeType: r.contentType, BodyBytes: max(r.body, 1)}
		if i > 0 {
			e.Initiator = &har.Initiator{Type: "parser", URL: kept[0].url}
			for _, doc := range kept[1:] {
				if t := page.TypeFromMIME(doc.contentType); t == page.TypeCSS && refs(doc, r) {
					e.Initiator.URL = doc.url
					break
				}
			}
		}
		entries[i] = e
	}
	return browser.PageFromEntries(entries, browser.RecordOptions{Name: name,
		Source: "imported from the mahimahi recording " + label + " (no timings: the graph has no computation)"})
}
