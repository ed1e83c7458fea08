package tokenizer

import "sync"

// merge is one BPE merge rule: the pair it applies to becomes id, and rules
// of lower rank apply first.
type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// mergeQueue holds candidate merges ordered by rank, then by position, so
// that equal ranks merge leftmost first, as in Hugging Face tokenizers.
type candidate struct{ rank, pos, id int32 }

type mergeQueue []candidate

func (q candidate) less(o candidate) bool {
	return q.rank < o.rank || (q.rank == o.rank && q.pos < o.pos)
}

func (q *mergeQueue) push(c candidate) {
	h := append(*q, c)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *mergeQueue) pop() candidate {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l, m := 2*i+1, i
		if l < n && h[l].less(h[m]) {
			m = l
		}
		if r := l + 1; r < n && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// mergeScratch is the working memory of one word's merges, reused across the
// words of one Encode call.
type mergeScratch struct {
	ids        []int32
	prev, next []int32
	queue      mergeQueue
}

// bpeWord appends to out the ids of one pre-token, given as raw bytes. The
// symbols start as single bytes and live in a linked list over arrays; a
// priority queue of adjacent pairs yields the next merge in O(log n), so a
// long word (a CJK sentence is one pre-token) costs n log n, not n².
func (t *BPE) bpeWord(out []int32, word string, s *mergeScratch) []int32 {
	n := len(word)
	if n == 1 {
		return append(out, t.byteID[word[0]])
	}
	s.ids, s.prev, s.next, s.queue = s.ids[:0], s.prev[:0], s.next[:0], s.queue[:0]
	for i := 0; i < n; i++ {
		s.ids = append(s.ids, t.byteID[word[i]])
		s.prev = append(s.prev, int32(i-1))
		s.next = append(s.next, int32(i+1))
	}
	s.next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		if m, ok := t.merges[pairKey(s.ids[i], s.ids[i+1])]; ok {
			s.queue.push(candidate{m.rank, int32(i), m.id})
		}
	}
	for len(s.queue) > 0 {
		c := s.queue.pop()
		i := c.pos
		if s.ids[i] < 0 { // merged into its left neighbour already
			continue
		}
		j := s.next[i]
		if j < 0 {
			continue
		}
		// The pair at i may have changed since c was queued.
		if m, ok := t.merges[pairKey(s.ids[i], s.ids[j])]; !ok || m.id != c.id {
			continue
		}
		s.ids[i] = c.id
		s.ids[j] = -1
		k := s.next[j]
		s.next[i] = k
		if k >= 0 {
			s.prev[k] = i
			if m, ok := t.merges[pairKey(c.id, s.ids[k])]; ok {
				s.queue.push(candidate{m.rank, i, m.id})
			}
		}
		if p := s.prev[i]; p >= 0 {
			if m, ok := t.merges[pairKey(s.ids[p], c.id)]; ok {
				s.queue.push(candidate{m.rank, p, m.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = s.next[i] {
		out = append(out, s.ids[i])
	}
	return out
}

// wordCache remembers the ids of recent pre-tokens: text repeats words, and
// a map lookup is far cheaper than merging again. It is cleared when full
// rather than evicting one entry at a time; the common words come back at
// once.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const (
	wordCacheEntries = 1 << 16
	wordCacheMaxLen  = 64 // bytes; longer pre-tokens rarely repeat
)

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= wordCacheEntries {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[w] = ids
	c.mu.Unlock()
}
