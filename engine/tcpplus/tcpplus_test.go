package tcpplus

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

func TestBetaPlus(t *testing.T) {
	for _, tc := range []struct {
		beta float64
		n    int
		want float64
	}{
		{0.7, 1, 0.7},
		{0.7, 2, 0.85},
		{0.7, 6, 0.95},
		{0.5, 6, 1 - 0.5/6}, // Reno's β
		{0.7, 30, 0.99},
	} {
		if got := BetaPlus(tc.beta, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("BetaPlus(%v, %d) = %v, want %v", tc.beta, tc.n, got, tc.want)
		}
	}
}

func TestBetaPlusScaled(t *testing.T) {
	for _, tc := range []struct {
		beta uint32
		n    int
		want uint32
	}{
		{717, 1, 717},   // n = 1 is cubic itself
		{717, 2, 870},   // 1024 − 153.5, rounded half up
		{717, 6, 973},   // 1024 − 51.17 → 0.9502
		{717, 32, 1014}, // 1024 − 9.59
		{1024, 6, 1024},
	} {
		if got := BetaPlusScaled(tc.beta, tc.n); got != tc.want {
			t.Errorf("BetaPlusScaled(%d, %d) = %d, want %d", tc.beta, tc.n, got, tc.want)
		}
	}
}

// The fixed-point β' is the real β' rounded to the nearest 1/1024, never decreases with n, and
// is β itself for n = 1 — for every β cubic accepts.
func TestBetaPlusScaledMatchesFormula(t *testing.T) {
	for beta := uint32(1); beta <= BetaScale; beta++ {
		prev := uint32(0)
		for n := 1; n <= MaxN; n++ {
			got := BetaPlusScaled(beta, n)
			exact := BetaPlus(float64(beta)/BetaScale, n) * BetaScale
			if math.Abs(float64(got)-exact) > 0.5+1e-9 {
				t.Fatalf("BetaPlusScaled(%d, %d) = %d, exact %.3f", beta, n, got, exact)
			}
			if got < prev {
				t.Fatalf("BetaPlusScaled(%d, %d) = %d < %d for n−1", beta, n, got, prev)
			}
			if n == 1 && got != beta {
				t.Fatalf("BetaPlusScaled(%d, 1) = %d", beta, got)
			}
			prev = got
		}
	}
}

func TestExpectedSsthresh(t *testing.T) {
	for _, tc := range []struct{ cwnd, beta, want uint32 }{
		{105, 717, 73}, // ⌊73.52⌋
		{105, 973, 99}, // ⌊99.77⌋
		{100, 1024, 100},
		{3, 717, 2}, // floor of 2
		{1, 717, 2},
		{10_000_000, 717, 7_001_953}, // no 32-bit overflow in cwnd·β
	} {
		if got := ExpectedSsthresh(tc.cwnd, tc.beta); got != tc.want {
			t.Errorf("ExpectedSsthresh(%d, %d) = %d, want %d", tc.cwnd, tc.beta, got, tc.want)
		}
	}
}

func TestRouteWindows(t *testing.T) {
	for _, tc := range []struct{ iw, irw, n, wantIW, wantIRW int }{
		{0, 0, 6, 60, 60}, // kernel defaults × 6
		{10, 20, 6, 60, 120},
		{3, 0, 6, 18, 60},
		{16, 16, 1, 16, 16},
		{-1, 4, 32, 320, 128},
	} {
		iw, irw := RouteWindows(tc.iw, tc.irw, tc.n)
		if iw != tc.wantIW || irw != tc.wantIRW {
			t.Errorf("RouteWindows(%d, %d, %d) = (%d, %d), want (%d, %d)", tc.iw, tc.irw, tc.n, iw, irw, tc.wantIW, tc.wantIRW)
		}
	}
}

func TestRouteWindowsPanicsOnBadN(t *testing.T) {
	for _, n := range []int{0, -1, MaxN + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RouteWindows(10, 10, %d) did not panic", n)
				}
			}()
			RouteWindows(10, 10, n)
		}()
	}
}

func TestCheckN(t *testing.T) {
	for n := -1; n <= MaxN+1; n++ {
		err := CheckN(n)
		if ok := n >= 1 && n <= MaxN; ok != (err == nil) {
			t.Errorf("CheckN(%d) = %v", n, err)
		}
		if err != nil && !strings.Contains(err.Error(), "between 1 and 32") {
			t.Errorf("CheckN(%d) error %q does not say what is allowed", n, err)
		}
	}
}

func TestNames(t *testing.T) {
	if Name(6) != "wl_cubicp6" {
		t.Errorf("Name(6) = %q", Name(6))
	}
	for n := 1; n <= MaxN; n++ {
		name := Name(n)
		if len(name) >= caNameMax {
			t.Errorf("Name(%d) = %q does not fit TCP_CA_NAME_MAX", n, name)
		}
		if got, ok := ParseName(name); !ok || got != n {
			t.Errorf("ParseName(%q) = %d, %v", name, got, ok)
		}
	}
	for _, bad := range []string{"cubic", "wl_cubicp", "wl_cubicp0", "wl_cubicp06", "wl_cubicp33", "wl_cubicpx", "xwl_cubicp6"} {
		if n, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) = %d, want not ours", bad, n)
		}
	}
}

// The committed BPF object is what the loader expects: a struct_ops map for
// tcp_congestion_ops with BPF_F_LINK, the β' variable, every operation wl_cubicp delegates.
func TestCommittedObject(t *testing.T) {
	spec, err := loadCubicplus()
	if err != nil {
		t.Fatal(err)
	}
	ms := spec.Maps[cubicplusMapWlCubicp]
	if ms == nil || ms.Type != ebpf.StructOpsMap {
		t.Fatalf("map %s: %+v", cubicplusMapWlCubicp, ms)
	}
	const bpfFLink = 1 << 13 // BPF_F_LINK
	if ms.Flags&bpfFLink == 0 {
		t.Errorf("struct_ops map is not in .struct_ops.link (flags %#x)", ms.Flags)
	}
	if st, ok := ms.Value.(*btf.Struct); !ok || st.Name != "tcp_congestion_ops" {
		t.Errorf("struct_ops value type %v", ms.Value)
	}
	if spec.Variables[cubicplusVarWlBetaPlus] == nil {
		t.Errorf("no %s variable", cubicplusVarWlBetaPlus)
	}
	for _, op := range []string{"init", "ssthresh", "cong_avoid", "set_state", "cwnd_event", "pkts_acked", "undo_cwnd"} {
		found := false
		for _, p := range spec.Programs {
			if p.AttachTo == "tcp_congestion_ops:"+op {
				found = true
			}
		}
		if !found {
			t.Errorf("no program for tcp_congestion_ops.%s", op)
		}
	}
}

func TestSetStructOpsName(t *testing.T) {
	spec, err := loadCubicplus()
	if err != nil {
		t.Fatal(err)
	}
	ms := spec.Maps[cubicplusMapWlCubicp]
	if err := setStructOpsName(ms, Name(32)); err != nil {
		t.Fatal(err)
	}
	st := ms.Value.(*btf.Struct)
	value := ms.Contents[0].Value.([]byte)
	for _, m := range st.Members {
		if m.Name == "name" {
			off := m.Offset.Bytes()
			got := value[off : off+caNameMax]
			want := append([]byte("wl_cubicp32"), make([]byte, caNameMax-len("wl_cubicp32"))...)
			if string(got) != string(want) {
				t.Errorf("name bytes %q, want %q", got, want)
			}
		}
	}
	if err := setStructOpsName(ms, "a_name_of_16_chr"); err == nil {
		t.Error("a 16-byte name was accepted; TCP_CA_NAME_MAX leaves room for 15")
	}
}

// A kernel that refuses the kfuncs yields one line that names what is missing.
func TestLoadErrorNamesWhatIsMissing(t *testing.T) {
	err := loadError(errors.New("program wl_init: fixing up kfuncs: kfunc \"cubictcp_init\": not found\nmore detail"))
	if !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "cubictcp_* kfuncs") {
		t.Errorf("loadError = %q", err)
	}
}

func TestFastConvergenceWmax(t *testing.T) {
	for _, tc := range []struct{ cwnd, beta, want uint32 }{
		{100, 717, 85},   // ⌊85.01⌋: cubic
		{100, 973, 97},   // ⌊97.51⌋: TCP+ for n = 6
		{105, 1024, 105}, // β = 1: no reduction, W_max stays
	} {
		if got := FastConvergenceWmax(tc.cwnd, tc.beta); got != tc.want {
			t.Errorf("FastConvergenceWmax(%d, %d) = %d, want %d", tc.cwnd, tc.beta, got, tc.want)
		}
	}
}
