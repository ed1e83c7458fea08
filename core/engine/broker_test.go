package engine

import (
	"testing"
)

func TestBrokerNeverBlocksAndKeepsLatest(t *testing.T) {
	b := NewBroker[int]()
	fast := b.Subscribe(1000)
	slow := b.Subscribe(3)
	for i := 1; i <= 100; i++ {
		b.Publish(i) // must not block although slow never reads
	}
	evs, dropped := slow.Drain()
	if len(evs) != 3 || evs[0] != 98 || evs[2] != 100 || dropped != 97 {
		t.Fatalf("slow reader got %v, dropped %d; want the latest 3 and 97 dropped", evs, dropped)
	}
	evs, dropped = fast.Drain()
	if len(evs) != 100 || dropped != 0 || evs[0] != 1 {
		t.Fatalf("fast reader got %d events, dropped %d", len(evs), dropped)
	}
	select {
	case <-fast.Ready(): // the pending wake-up from the publishes
	default:
		t.Fatal("no wake-up after publishing")
	}
	fast.Cancel()
	b.Publish(101)
	if evs, _ := fast.Drain(); len(evs) != 0 {
		t.Fatalf("a cancelled subscription received %v", evs)
	}
	if _, ok := <-fast.Ready(); ok {
		t.Fatal("Ready of a cancelled subscription is not closed")
	}
	b.Close()
	<-slow.Ready() // drains the pending signal or sees the close
	if _, ok := <-slow.Ready(); ok {
		t.Fatal("Ready not closed after the broker closed")
	}
}
