package trial

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// FuzzDecodeSpec: whatever the control plane (or a user) sends as a trial spec, DecodeSpec either
// accepts it or refuses it with a one-line *fielderr.Error (the exit-2 error of
// docs/trial-contract.md), the same way every time; never a panic. It relies only on DecodeSpec's
// signature and its documented error type.
func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []string{
		`{"page":"twitter"}`,
		`{"page":"twitter","protocols":["h1s","h2","h3"],"repetitions":3,"network":"rtt=100ms,bw=10mbit"}`,
		`{"page":"twitter","protocols":["spdy3","h2c"],"server":{"push":"dependency-level:1"},"client":{"priority":"dependency"}}`,
		`{"page":"synthetic:4x10kB","shards":0,"shard_mode":"tld","client":{"impl":"chromium","mode":"replay","compute_scale":0.5}}`,
		`{"page":"twitter","server":{"push":"dependency-level:1001"}}`,
		`{"page":"twitter","capture":{"pcap":true},"order":"random","seed":7,"gap_ms":10}`,
		`{"contract":2}`, `[]`, `{"page":1}`, `{"page":"x"} {}`, `{"page":"x","prtocols":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeSpec(data)
		if err != nil {
			if _, ok := fielderr.As(err); !ok {
				t.Fatalf("error is a %T, not a *fielderr.Error: %v", err, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
			if _, again := DecodeSpec(data); again == nil || again.Error() != err.Error() {
				t.Fatalf("refused once with %q, then %v", err, again)
			}
			return
		}
		if spec == nil {
			t.Fatal("no spec and no error")
		}
		if _, err := json.Marshal(spec); err != nil {
			t.Fatalf("an accepted spec does not marshal: %v", err)
		}
	})
}
