package spdy

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/adler32"
	"testing"
)

// The dictionary is pinned three ways: its length from the spec (1423 bytes), the DICTID that
// real SPDY/3 peers put in their zlib headers (0xe3c6a7c2, as in Chromium's framer test vectors:
// 38 ea e3 c6 a7 c2 …), and a SHA-256 so that any edit shows.
func TestDictionaryLengthAndChecksum(t *testing.T) {
	if got := len(headerDictionary); got != 1423 {
		t.Fatalf("dictionary length %d, want 1423", got)
	}
	if got := adler32.Checksum(headerDictionary[:]); got != 0xe3c6a7c2 {
		t.Fatalf("dictionary Adler-32 %#08x, want 0xe3c6a7c2", got)
	}
	if HeaderDictionaryID != 0xe3c6a7c2 {
		t.Fatalf("HeaderDictionaryID %#08x", HeaderDictionaryID)
	}
	sum := sha256.Sum256(headerDictionary[:])
	if got := hex.EncodeToString(sum[:]); got != "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02" {
		t.Fatalf("dictionary SHA-256 %s", got)
	}
}

// The dictionary starts with length-prefixed method names and ends with the spec's tail.
func TestDictionaryShape(t *testing.T) {
	d := HeaderDictionary()
	if string(d[:11]) != "\x00\x00\x00\x07options" {
		t.Fatalf("dictionary starts %q", d[:11])
	}
	if tail := string(d[len(d)-24:]); tail != "iso-8859-1,utf-,*,enq=0." {
		t.Fatalf("dictionary ends %q", tail)
	}
	d[0] = 0xff
	if headerDictionary[0] != 0 {
		t.Fatal("HeaderDictionary returned the package's array, not a copy")
	}
}
