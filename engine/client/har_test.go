package client

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/hartest"
)

// TestHAR: every protocol's load converts to a HAR that validates against HAR 1.2, with the
// loader's timings, connection ids, protocols and stream ids; a failed request's error is kept.
func TestHAR(t *testing.T) {
	schema := hartest.Schema(t)
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 2, 6, serverOpts{})
			s.page.edit(func(objects map[string]*testObject) { delete(objects, "/img/003.png") })
			res := s.load(t, s.config(), nil)
			if res.Err == nil {
				t.Fatal("the missing object did not fail the load")
			}
			var buf bytes.Buffer
			if err := har.Write(&buf, res.HAR("test")); err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Fatalf("HAR does not validate: %v", err)
			}
			var f struct {
				Log struct {
					Pages []struct {
						ID          string `json:"id"`
						PageTimings struct {
							OnLoad float64 `json:"onLoad"`
						} `json:"pageTimings"`
					} `json:"pages"`
					Entries []struct {
						Pageref    string      `json:"pageref"`
						Connection string      `json:"connection"`
						ConnID     string      `json:"_connection"`
						Protocol   string      `json:"_protocol"`
						StreamID   uint64      `json:"_stream_id"`
						Time       float64     `json:"time"`
						Timings    har.Timings `json:"timings"`
						Comment    string      `json:"comment"`
						Response   struct {
							Status  int `json:"status"`
							Content struct {
								Size int64 `json:"size"`
							} `json:"content"`
						} `json:"response"`
						ServerIP string `json:"serverIPAddress"`
					} `json:"entries"`
				} `json:"log"`
			}
			if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
				t.Fatal(err)
			}
			if len(f.Log.Pages) != 1 || f.Log.Pages[0].PageTimings.OnLoad != ms(res.PLT) || len(f.Log.Entries) != len(res.Entries) {
				t.Fatalf("pages %+v, %d entries for %d requests", f.Log.Pages, len(f.Log.Entries), len(res.Entries))
			}
			failed := 0
			for i, he := range f.Log.Entries {
				e := res.Entries[i]
				if he.Pageref != HARPageID || he.Protocol != proto.wireName() || he.ConnID != strconv.Itoa(e.Connection) || he.Connection != he.ConnID {
					t.Errorf("%s: pageref %q protocol %q connection %q/%q, want connection %d", e.URL, he.Pageref, he.Protocol, he.Connection, he.ConnID, e.Connection)
				}
				if want := max(e.StreamID, 0); he.StreamID != uint64(want) {
					t.Errorf("%s: _stream_id %d, want %d", e.URL, he.StreamID, want)
				}
				if he.Timings.Blocked != e.Timings.Blocked || he.Timings.Connect != e.Timings.Connect || he.Timings.Wait != e.Timings.Wait || he.Time != e.Time {
					t.Errorf("%s: HAR timings %+v differ from the loader's %+v", e.URL, he.Timings, e.Timings)
				}
				if he.Response.Status != e.Status || he.Response.Content.Size != e.BodyBytes || he.ServerIP != "127.0.0.1" {
					t.Errorf("%s: status %d size %d server %q", e.URL, he.Response.Status, he.Response.Content.Size, he.ServerIP)
				}
				if he.Comment != "" {
					failed++
				}
			}
			if failed != 1 {
				t.Errorf("%d entries carry an error comment, want 1", failed)
			}
		})
	}
}
