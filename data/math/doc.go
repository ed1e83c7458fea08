// Package math is whale's grade-school arithmetic domain: a seeded
// generator of multi-step word problems with worked gold solutions, the
// calc tool (an exact, bounded arithmetic evaluator), a numeric verifier
// and a GSM8K jsonl importer.
//
// The package must never show a solver the answer or the worked solution:
// both live in Task.Answer and Task.Hidden, which only the episode and the
// oracle read.
package math
