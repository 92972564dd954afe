package pcap

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/pkttest"
)

var (
	client = netip.MustParseAddrPort("10.77.0.2:40000")
	server = netip.MustParseAddrPort("10.77.1.1:443")
)

func samplePackets() [][]byte {
	return [][]byte{
		pkttest.TCP(client, server, 1000, 0, pkttest.SYN, nil),
		pkttest.TCP(server, client, 5000, 1001, pkttest.SYN|pkttest.ACK, nil),
		pkttest.TCP(client, server, 1001, 5001, pkttest.ACK|pkttest.PSH, []byte("GET / HTTP/1.1\r\nHost: s1\r\n\r\n")),
		pkttest.UDP(netip.MustParseAddrPort("10.77.0.2:5353"), netip.MustParseAddrPort("10.77.2.53:53"), []byte("query")),
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1700000000, 123456789)
	pkts := samplePackets()
	for i, p := range pkts {
		if err := w.WritePacket(base.Add(time.Duration(i)*1500*time.Microsecond+7), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(pkts) || w.Packets() != int64(len(pkts)) {
		t.Fatalf("%d records, want %d", len(recs), len(pkts))
	}
	for i, r := range recs {
		want := base.Add(time.Duration(i)*1500*time.Microsecond + 7)
		if !r.Time.Equal(want) {
			t.Errorf("record %d at %v, want %v (nanoseconds must survive)", i, r.Time, want)
		}
		if !bytes.Equal(r.Data, pkts[i]) || r.OrigLen != len(pkts[i]) {
			t.Errorf("record %d differs", i)
		}
	}
}

func TestSnapLen(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 40)
	p := samplePackets()[2]
	w.WritePacket(time.Unix(1, 0), p)
	w.Flush()
	recs, err := ReadAll(&buf)
	if err != nil || len(recs) != 1 || len(recs[0].Data) != 40 || recs[0].OrigLen != len(p) {
		t.Fatalf("%+v %v", recs, err)
	}
	if _, err := NewWriter(&buf, 10); err == nil {
		t.Fatal("snaplen 10 accepted")
	}
}

// TestTshark checks that tshark decodes the file: link type, nanosecond times, TCP and UDP.
func TestTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed")
	}
	path := filepath.Join(t.TempDir(), "x.pcap")
	f, _ := os.Create(path)
	w, _ := NewWriter(f, 0)
	for i, p := range samplePackets() {
		w.WritePacket(time.Unix(1700000000, int64(i)*1000+1), p)
	}
	w.Flush()
	f.Close()
	cmd := exec.Command(tshark, "-r", path, "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "tcp.flags.str", "-e", "udp.dstport", "-e", "tcp.checksum.status")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var data []string
	for _, l := range lines {
		if strings.HasPrefix(l, "1700000000") {
			data = append(data, l)
		}
	}
	if len(data) != 4 {
		t.Fatalf("tshark printed:\n%s", out)
	}
	if !strings.HasPrefix(data[1], "1700000000.000001001") {
		t.Errorf("nanoseconds lost: %q", data[1])
	}
	if !strings.Contains(data[0], "10.77.0.2") || !strings.Contains(data[0], "S") {
		t.Errorf("SYN not decoded: %q", data[0])
	}
	if !strings.Contains(data[3], "53") {
		t.Errorf("DNS over UDP not decoded: %q", data[3])
	}
}
