package policy

import (
	"context"
	"errors"
	"testing"
)

// Collect puts each result at the id it came with, whatever the order of
// arrival, and stops at the first error.
func TestCollectOrdersByID(t *testing.T) {
	order := []int{2, 0, 3, 1}
	i := 0
	got, err := Collect(context.Background(), 4, func(context.Context) (int, string, error) {
		id := order[i]
		i++
		return id, string(rune('a' + id)), nil
	})
	if err != nil || len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "d" {
		t.Fatalf("Collect = %q, %v; want a b c d", got, err)
	}
	boom := errors.New("boom")
	calls := 0
	if _, err := Collect(context.Background(), 3, func(context.Context) (int, int, error) {
		calls++
		return 0, 0, boom
	}); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("error %v after %d calls, want boom after 1", err, calls)
	}
}
