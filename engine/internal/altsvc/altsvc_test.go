package altsvc

import "testing"

func TestParse(t *testing.T) {
	got := Parse(`h3=":443"; ma=86400, h3-29=":8443", h2="alt.example.org:443"; persist=1, h%33="[2001:db8::1]:9443", clear, bogus`)
	want := []AltService{{"h3", "", 443}, {"h3-29", "", 8443}, {"h2", "alt.example.org", 443}, {"h3", "2001:db8::1", 9443}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := Parse("clear"); len(got) != 0 {
		t.Errorf("clear: %v", got)
	}
	if got := Parse(`h3="a,b:443"`); len(got) != 1 || got[0].Host != "a,b" {
		t.Errorf("quoted comma: %v", got)
	}
}
