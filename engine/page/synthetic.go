package page

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/units"
)

// SyntheticPrefix starts the names of synthetic pages.
const SyntheticPrefix = "synthetic:"

// Limits of synthetic pages.
const (
	MaxSyntheticObjects = 4096
	// DefaultSyntheticRoot is the root HTML size when the references fit (otherwise the root is
	// as small as its references allow).
	DefaultSyntheticRoot = 1000
)

var syntheticRE = regexp.MustCompile(`^synthetic:([0-9]+)x([^,]+)(?:,html=(.+))?$`)

// Synthetic builds a synthetic page from its name: synthetic:NxS[,html=H] is a root HTML document
// referencing N PNG images of exactly S bytes each (a SIZE of internal/units: B, kB, KiB, MB, MiB). The root has
// H bytes, by default max(1000 B, the smallest size that holds its references). N may be 0 (a
// page that is only its root document). As in study W, N counts the objects besides the root.
func Synthetic(name string, seed int64) (*Page, error) {
	m := syntheticRE.FindStringSubmatch(name)
	if m == nil {
		return nil, fieldErr("page", name, "a synthetic page is named synthetic:NxS[,html=SIZE], e.g. synthetic:64x10kB")
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 0 || n > MaxSyntheticObjects {
		return nil, fieldErr("page", name, "the object count must be 0–%d", MaxSyntheticObjects)
	}
	size, err := units.ParseSize(m[2], MaxObjectBytes)
	if err != nil {
		return nil, fieldErr("page", name, "object size: %v", err)
	}
	if size <= 0 {
		return nil, fieldErr("page", name, "the object size must be positive")
	}
	if seed < 0 || seed > MaxSeed {
		return nil, fieldErr("seed", seed, "must be an integer in [0, 2^53-1]")
	}
	b := newBuilder(name, seed)
	b.root("www.wirelab.test", "wirelab.test")
	b.add(n, TypeImage, "image/png", "www.wirelab.test", "wirelab.test", "")
	p := b.page
	p.Description = fmt.Sprintf("synthetic page: root HTML and %d PNG images of %d bytes", n, size)
	p.Source = "W (Wang et al. 2014): synthetic pages of N objects of size S"
	for i := 1; i <= n; i++ {
		p.Objects[i].Size = size
	}
	minRoot := MinSize(p, 0)
	p.Objects[0].Size = max(int64(DefaultSyntheticRoot), minRoot)
	if m[3] != "" {
		root, err := units.ParseSize(m[3], MaxObjectBytes)
		if err != nil {
			return nil, fieldErr("page", name, "html size: %v", err)
		}
		if root < minRoot {
			return nil, fieldErr("page", name, "html=%s is below the %d bytes the root needs to reference %d objects", m[3], minRoot, n)
		}
		p.Objects[0].Size = root
	}
	p.Activities = BuildGraph(p)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// SyntheticName is the name of the synthetic page of count objects of size bytes.
func SyntheticName(count int, size int64) string {
	return fmt.Sprintf("%s%dx%s", SyntheticPrefix, count, units.FormatSize(size))
}

// The W grid (study W): object sizes 100 B → 1 MB and object counts 2 → 512, each in
// logarithmic steps.
var (
	WGridSizes  = []int64{100, 1000, 10_000, 100_000, 1_000_000}
	WGridCounts = []int{2, 8, 32, 128, 512}
)

// WGrid returns the synthetic page names of the W grid (sizes × counts, sizes outermost).
func WGrid() []string {
	var names []string
	for _, s := range WGridSizes {
		for _, c := range WGridCounts {
			names = append(names, SyntheticName(c, s))
		}
	}
	return names
}

// IsSynthetic reports whether name is a synthetic page name (not whether it is valid).
func IsSynthetic(name string) bool { return strings.HasPrefix(name, SyntheticPrefix) }
