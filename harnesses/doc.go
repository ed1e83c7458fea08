// Package harnesses runs harnesses: Starlark programs that turn a domain's
// observations into prompts, parse the model's completions into actions,
// validate them, retry, route tool calls and decide when to stop. It holds
// the sandbox (step-bounded, size-bounded, no I/O, only the re, json and
// math modules whose Go code lives here), the contract and its validation,
// the anti-cheat lint, the step-wise runtime that drives many episodes
// through one batched Policy, the identity (sha256 of normalised source),
// diff and mutation of harness sources, checking policies (oracle, random,
// null) and the built-in library under lib/.
//
// The runtime hands a policy chat messages and reads back text; it never
// renders, counts or decodes a token (it imports no tokenizer): token ids
// reach a trajectory only as the policy's completion reports them.
//
// A harness presents and validates; it must never solve. The package must
// never let Starlark code reach files, the network, the clock or a chess
// engine, and must never let a limit that changes a rollout's outcome depend
// on wall-clock time: outcome-relevant limits count Starlark steps and
// tokens only.
package harnesses
