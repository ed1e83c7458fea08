package tokenizer

import (
	"sort"
	"strings"
)

// addedMatcher finds added tokens (<|im_start|>, <think>, …) in text,
// leftmost first and, among tokens starting at the same byte, longest
// first, as Hugging Face's added vocabulary does.
type addedMatcher struct {
	first [256]bool             // bytes that start some token
	byLen map[byte][]addedToken // tokens by first byte, longest first
}

type addedToken struct {
	content string
	id      int32
}

func newAddedMatcher(toks []addedToken) *addedMatcher {
	m := &addedMatcher{byLen: map[byte][]addedToken{}}
	for _, t := range toks {
		if t.content == "" {
			continue
		}
		b := t.content[0]
		m.first[b] = true
		m.byLen[b] = append(m.byLen[b], t)
	}
	for _, ts := range m.byLen {
		sort.SliceStable(ts, func(i, j int) bool { return len(ts[i].content) > len(ts[j].content) })
	}
	return m
}

// find returns the first added token in s: its byte range and id, or
// start -1.
func (m *addedMatcher) find(s string) (start, end int, id int32) {
	if len(m.byLen) == 0 {
		return -1, -1, 0
	}
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		for _, t := range m.byLen[s[i]] {
			if strings.HasPrefix(s[i:], t.content) {
				return i, i + len(t.content), t.id
			}
		}
	}
	return -1, -1, 0
}
