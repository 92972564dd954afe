package labaddr

import "testing"

func TestOriginOf(t *testing.T) {
	cases := []struct {
		a    [4]byte
		want int
	}{
		{[4]byte{10, 77, 1, 1}, 1},
		{[4]byte{10, 77, 1, 64}, 64},
		{[4]byte{10, 77, 1, 65}, 0},
		{[4]byte{10, 77, 1, 0}, 0},
		{[4]byte{10, 77, 2, 53}, 0},
		{[4]byte{10, 77, 0, 2}, 0},
		{[4]byte{192, 168, 1, 1}, 0},
	}
	for _, c := range cases {
		if got := OriginOf(c.a); got != c.want {
			t.Errorf("OriginOf(%v) = %d, want %d", c.a, got, c.want)
		}
	}
	for n := 1; n <= MaxOrigins; n++ {
		if got := OriginOf(OriginAddr(n).As4()); got != n {
			t.Errorf("OriginOf(OriginAddr(%d)) = %d", n, got)
		}
	}
}
