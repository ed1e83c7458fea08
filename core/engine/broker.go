package engine

import "sync"

// Broker fans events out to subscribers without ever blocking the
// publisher: each subscriber has a bounded queue, and when a slow reader's
// queue is full the oldest queued events are dropped (and counted), so the
// reader catches up to the latest state instead of stalling training. Every
// event is also stored, so nothing dropped here is lost for good.
type Broker[T any] struct {
	mu   sync.Mutex
	subs map[*Subscription[T]]struct{}
}

// NewBroker returns a broker with no subscribers.
func NewBroker[T any]() *Broker[T] {
	return &Broker[T]{subs: map[*Subscription[T]]struct{}{}}
}

// Subscription is one reader's view of a broker.
type Subscription[T any] struct {
	b       *Broker[T]
	mu      sync.Mutex
	queue   []T
	cap     int
	dropped int
	ready   chan struct{}
	closed  bool
}

// Subscribe returns a subscription that queues at most capacity events.
func (b *Broker[T]) Subscribe(capacity int) *Subscription[T] {
	if capacity < 1 {
		capacity = 1
	}
	s := &Subscription[T]{b: b, cap: capacity, ready: make(chan struct{}, 1)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Publish queues ev for every subscriber; it never blocks on a reader.
func (b *Broker[T]) Publish(ev T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		s.push(ev)
	}
}

// Close ends every subscription: readers drain what is queued, then see
// their Ready channel closed.
func (b *Broker[T]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		s.close()
	}
	b.subs = map[*Subscription[T]]struct{}{}
}

func (s *Subscription[T]) push(ev T) {
	s.mu.Lock()
	if len(s.queue) == s.cap {
		copy(s.queue, s.queue[1:])
		s.queue = s.queue[:len(s.queue)-1]
		s.dropped++
	}
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default: // a wake-up is already pending
	}
}

func (s *Subscription[T]) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ready)
	}
}

// Ready is signalled when events may be waiting, and closed when the broker
// closes or the subscription is cancelled.
func (s *Subscription[T]) Ready() <-chan struct{} { return s.ready }

// Drain returns the queued events in publication order and how many were
// dropped since the last Drain because the queue was full.
func (s *Subscription[T]) Drain() (events []T, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	events, dropped = s.queue, s.dropped
	s.queue, s.dropped = nil, 0
	return events, dropped
}

// Cancel unsubscribes.
func (s *Subscription[T]) Cancel() {
	s.b.mu.Lock()
	delete(s.b.subs, s)
	s.b.mu.Unlock()
	s.close()
}
