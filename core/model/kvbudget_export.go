package model

// PrefixBudgetFor and PoolBudgetFor are the default bounds of the prefix
// cache and of the pool of freed caches after a run's sequences held live
// bytes of caches at once, the largest seq of them (kvbudget.go): for a
// caller that checks or reports how a sampler sized them.
func PrefixBudgetFor(live int64) int64 { return prefixBudget(live) }

// PoolBudgetFor: see PrefixBudgetFor.
func PoolBudgetFor(seq int64) int64 { return poolBudget(seq) }
