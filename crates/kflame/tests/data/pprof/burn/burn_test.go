// A small CPU and allocation burner whose profiles are the pprof fixtures of this folder
// (see ../README.md).
package burn

import (
	"crypto/sha256"
	"sort"
	"testing"
)

//go:noinline
func hash(n int) [32]byte {
	var sum [32]byte
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		buf[i%len(buf)] = byte(i)
		sum = sha256.Sum256(buf)
	}
	return sum
}

//go:noinline
func sortMany(n int) int {
	total := 0
	for i := 0; i < n; i++ {
		s := make([]int, 1000)
		for j := range s {
			s[j] = (j * 7919) % 1000
		}
		sort.Ints(s)
		total += s[len(s)/2]
	}
	return total
}

func TestBurn(t *testing.T) {
	var keep int
	for r := 0; r < 20; r++ {
		h := hash(4000)
		keep += int(h[0])
		keep += sortMany(400)
	}
	if keep < 0 {
		t.Fatal(keep)
	}
}
