package searchqa

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// Doc is one document of a corpus.
type Doc struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// BM25 parameters: the usual defaults.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Index is an inverted index over a corpus scored with Okapi BM25. It is
// read-only after NewIndex and safe for concurrent searches.
type Index struct {
	docs     []Doc
	postings map[string][]posting
	docLen   []float64
	avgLen   float64
	norm     []float64 // k1 (1 - b + b len/avgLen), per document
}

type posting struct {
	doc int32
	tf  int32
}

// Hit is one search result.
type Hit struct {
	Doc   int // index into the corpus
	Score float64
}

// NewIndex indexes docs (title and text together).
func NewIndex(docs []Doc) *Index {
	ix := &Index{docs: docs, postings: map[string][]posting{}, docLen: make([]float64, len(docs))}
	total := 0.0
	for i, d := range docs {
		tf := map[string]int32{}
		terms := Terms(d.Title + " " + d.Text)
		for _, t := range terms {
			tf[t]++
		}
		// Postings are appended in document order, so each list is sorted.
		keys := make([]string, 0, len(tf))
		for t := range tf {
			keys = append(keys, t)
		}
		sort.Strings(keys)
		for _, t := range keys {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: tf[t]})
		}
		ix.docLen[i] = float64(len(terms))
		total += float64(len(terms))
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	ix.norm = make([]float64, len(docs))
	for i, l := range ix.docLen {
		ix.norm[i] = bm25K1 * (1 - bm25B + bm25B*l/max(ix.avgLen, 1))
	}
	return ix
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Doc returns document i.
func (ix *Index) Doc(i int) Doc { return ix.docs[i] }

// maxQueryTerms bounds the work of one search.
const maxQueryTerms = 32

// Search returns the k best documents for query, best first. Ties are
// broken by corpus order, and scores are summed in query-term order, so
// results are the same on every machine.
func (ix *Index) Search(query string, k int) []Hit {
	if k <= 0 {
		return nil
	}
	terms := Terms(query)
	seen := map[string]bool{}
	uniq := terms[:0:0]
	for _, t := range terms {
		if !seen[t] && len(uniq) < maxQueryTerms {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	scores := make([]float64, len(ix.docs))
	var touched []int32
	n := float64(len(ix.docs))
	for _, t := range uniq {
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + ix.norm[p.doc])
		}
	}
	// Keep the k best in a small sorted slice: better score first, then
	// lower document index.
	better := func(a, b Hit) bool { return a.Score > b.Score || a.Score == b.Score && a.Doc < b.Doc }
	hits := make([]Hit, 0, k+1)
	for _, d := range touched {
		h := Hit{Doc: int(d), Score: scores[d]}
		if len(hits) == k && !better(h, hits[k-1]) {
			continue
		}
		i := sort.Search(len(hits), func(i int) bool { return better(h, hits[i]) })
		hits = append(hits, Hit{})
		copy(hits[i+1:], hits[i:])
		hits[i] = h
		if len(hits) > k {
			hits = hits[:k]
		}
	}
	return hits
}

// stopwords are dropped from documents and queries: they carry no
// information about which document answers a question.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by did do does for from has have he her his how in
		is it its of on or she that the their them they this to was were what when where which who whom whose
		with into than then there these those also been about after since`) {
		stopwords[w] = true
	}
}

// Terms splits text into lower-case terms (runs of letters and digits),
// dropping stopwords and possessive "s".
func Terms(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if w == "s" || stopwords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}
