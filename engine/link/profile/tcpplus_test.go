package profile

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTCPPlusResolvedForm: tcpplus is written in the resolved form and read back; a resolved form
// without it (written before the key existed) still decodes, as 0; Validate refuses it out of
// range or with a congestion control other than cubic; the canonical string carries it.
func TestTCPPlusResolvedForm(t *testing.T) {
	r := MustParse("rtt=100ms,iw=4,tcpplus=6")
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"tcpplus":6`) {
		t.Fatalf("%s %v", b, err)
	}
	back, err := DecodeResolved(b)
	if err != nil || !back.Equal(r) {
		t.Fatalf("round trip: %v %#v", err, back)
	}
	if s := r.String(); s != "rtt=100ms,iw=4,tcpplus=6" {
		t.Errorf("String() = %q", s)
	}
	old := strings.Replace(string(b), `"tcpplus":6,`, "", 1)
	if old == string(b) {
		t.Fatal("tcpplus not found in the resolved JSON")
	}
	back, err = DecodeResolved([]byte(old))
	if err != nil || back.TCPPlus != 0 {
		t.Errorf("without tcpplus: %v %#v", err, back)
	}
	for _, bad := range []func(*Resolved){
		func(r *Resolved) { r.TCPPlus = 33 },
		func(r *Resolved) { r.TCPPlus = -1 },
		func(r *Resolved) { r.CC = "bbr" },
	} {
		x := r
		bad(&x)
		if err := x.Validate(); err == nil || !strings.HasPrefix(err.Error(), "tcpplus: ") {
			t.Errorf("%#v: Validate = %v", x, err)
		}
	}
}
