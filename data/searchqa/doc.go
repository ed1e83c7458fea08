// Package searchqa is whale's retrieval question-answering domain: a seeded
// world of invented people, cities, countries, companies and rivers rendered
// as a corpus of short documents (with distractors and near-duplicate
// names), single-hop and two-hop questions over it, the search tool (BM25
// over the corpus), a normalised exact-match verifier and importers for QA
// and corpus jsonl files.
//
// The package must never show a solver an answer: answers and the ids of
// the documents that hold them live in Task.Answer, Task.Aliases and
// Task.Hidden, which only the episode and the oracle read.
package searchqa
