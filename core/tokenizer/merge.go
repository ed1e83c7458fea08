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
	ids         []int32
	prev, next  []int32
	queue       mergeQueue
	ranks, mids []int32 // bpeSmall: rank and result of the pair at i, i+1
}

// smallWord is the length up to which bpeSmall's linear scans beat the
// queue: most pre-tokens are a word or a number, a few bytes long.
const smallWord = 24

const noMerge = int32(1<<31 - 1)

// bpeSmall merges like bpeWord, keeping the rank of each adjacent pair in an
// array and taking the leftmost lowest one by a scan: no queue, and only the
// two pairs beside a merge are looked up again.
func (t *BPE) bpeSmall(out []int32, word string, s *mergeScratch) []int32 {
	n := len(word)
	ids, ranks, mids := s.ids[:0], s.ranks[:0], s.mids[:0]
	for i := 0; i < n; i++ {
		ids = append(ids, t.byteID[word[i]])
	}
	for i := 0; i+1 < n; i++ {
		m, ok := t.merges[pairKey(ids[i], ids[i+1])]
		if !ok {
			m.rank = noMerge
		}
		ranks, mids = append(ranks, m.rank), append(mids, m.id)
	}
	for {
		best, rank := -1, noMerge
		for i, r := range ranks {
			if r < rank {
				best, rank = i, r
			}
		}
		if best < 0 {
			break
		}
		ids[best] = mids[best]
		ids = append(ids[:best+1], ids[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		mids = append(mids[:best], mids[best+1:]...)
		if best > 0 {
			m, ok := t.merges[pairKey(ids[best-1], ids[best])]
			if !ok {
				m.rank = noMerge
			}
			ranks[best-1], mids[best-1] = m.rank, m.id
		}
		if best < len(ranks) {
			m, ok := t.merges[pairKey(ids[best], ids[best+1])]
			if !ok {
				m.rank = noMerge
			}
			ranks[best], mids[best] = m.rank, m.id
		}
	}
	s.ids, s.ranks, s.mids = ids, ranks, mids
	return append(out, ids...)
}

// bpeWord appends to out the ids of one pre-token, given as raw bytes.
// Symbols start as single bytes; the adjacent pair of lowest rank merges
// first, the leftmost among equals, until no pair has a merge rule.
func (t *BPE) bpeWord(out []int32, word string, s *mergeScratch) []int32 {
	n := len(word)
	if n <= smallWord {
		return t.bpeSmall(out, word, s)
	}
	return t.bpeQueue(out, word, s)
}

// bpeQueue keeps the symbols in a linked list over arrays and the candidate
// pairs in a priority queue, so a long word (a CJK sentence is one
// pre-token) costs n log n, not n².
func (t *BPE) bpeQueue(out []int32, word string, s *mergeScratch) []int32 {
	n := len(word)
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
