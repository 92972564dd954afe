package page

import "testing"

// The default policy by type, an object's own cache_control in its place, and a malformed one
// refused naming the field.
func TestCachePolicy(t *testing.T) {
	pg, err := Corpus("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pg.Objects {
		want := CacheStatic
		if o.Type == TypeHTML || o.Type == TypeOther {
			want = CacheDocument
		}
		if got := o.CachePolicy(); got != want {
			t.Errorf("%s (%s): %q, want %q", o.ID, o.Type, got, want)
		}
	}
	pg.Objects[1].CacheControl = "public, max-age=600, stale-while-revalidate=30"
	if err := pg.Validate(); err != nil || pg.Objects[1].CachePolicy() != pg.Objects[1].CacheControl {
		t.Errorf("an own policy: %v, %q", err, pg.Objects[1].CachePolicy())
	}
	pg.Objects[1].CacheControl = "max-age=600\r\nX-Evil: 1"
	fe, ok := AsFieldError(pg.Validate())
	if !ok || fe.Field != "objects[1].cache_control" {
		t.Errorf("a header injection: %v", fe)
	}
}
