package server

import (
	"bytes"
	"reflect"
	"testing"

	"golang.org/x/net/http2"
)

// clientStream is what a client sends on a connection: the preface, a HEADERS that ends its
// stream, a PRIORITY_UPDATE for it, a second stream with DATA, and a reset.
func clientStream(t testing.TB) []byte {
	var b bytes.Buffer
	b.WriteString(clientPreface)
	fr := http2.NewFramer(&b, nil)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fr.WriteSettings())
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndStream: true, EndHeaders: true}))
	must(fr.WritePriorityUpdate(1, "u=2, i"))
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: []byte{0x83}, EndHeaders: true}))
	must(fr.WriteData(3, true, []byte("body")))
	must(fr.WriteRSTStream(5, http2.ErrCodeCancel))
	return b.Bytes()
}

// observed feeds data to a fresh observer's client side in the given chunk sizes (cycled) and
// returns its stats and the PRIORITY_UPDATEs it passed on.
func observed(data []byte, chunks []int) (H2Stats, []string) {
	o := newH2Observer(nil, nil)
	var updates []string
	o.in.onPayload = func(f http2.Frame) {
		if pu, ok := f.(*http2.PriorityUpdateFrame); ok {
			updates = append(updates, pu.Priority)
		}
	}
	for i := 0; len(data) > 0; i++ {
		n := len(data)
		if len(chunks) > 0 {
			n = min(max(chunks[i%len(chunks)], 1), len(data))
		}
		o.in.feed(data[:n])
		data = data[n:]
	}
	return o.snapshot(), updates
}

func TestObserverCountsClientFrames(t *testing.T) {
	data := clientStream(t)
	for _, chunks := range [][]int{nil, {1}, {7, 3}, {9}, {10, 1}} {
		st, updates := observed(data, chunks)
		want := H2Stats{Streams: 2, MaxOpenStreams: 2, FramesReceived: 6, ResetsReceived: 1, PriorityUpdates: 1}
		if !reflect.DeepEqual(st, want) {
			t.Errorf("chunks %v: stats %+v, want %+v", chunks, st, want)
		}
		if !reflect.DeepEqual(updates, []string{"u=2, i"}) {
			t.Errorf("chunks %v: priority updates %q", chunks, updates)
		}
	}
}

// FuzzH2Observer: whatever bytes a peer sends, the observer neither panics nor depends on how the
// bytes were split into reads.
func FuzzH2Observer(f *testing.F) {
	f.Add(clientStream(f), []byte{1})
	f.Add(clientStream(f), []byte{9, 2, 200})
	f.Add([]byte(clientPreface+"\x00\x00\x05\x10\x00\x00\x00\x00\x00\x00\x00\x00\x01"), []byte{3})
	f.Fuzz(func(t *testing.T, data, split []byte) {
		chunks := make([]int, len(split))
		for i, c := range split {
			chunks[i] = int(c)
		}
		whole, wholeUpdates := observed(data, nil)
		parts, partUpdates := observed(data, chunks)
		if !reflect.DeepEqual(whole, parts) || !reflect.DeepEqual(wholeUpdates, partUpdates) {
			t.Fatalf("split %v changed what was observed: %+v %q vs %+v %q", chunks, whole, wholeUpdates, parts, partUpdates)
		}
	})
}
