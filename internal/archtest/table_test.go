package archtest

// design is the package table of DESIGN.md ("Packages"), as data. A row
// marked "not in DESIGN.md" or "DESIGN.md says" is where the table and the
// code part: the code is right there, and DESIGN.md is to follow.
var design = Table{
	Module:   "whale",
	TopLevel: []string{"cmd", "tui", "core", "kernels", "harnesses", "data", "internal"},
	// "internal/: small helpers every tree may use".
	Everyone: []string{"internal"},
	TestOnly: []string{"core/model/modeltest", "kernels/kerneltest", "core/metrics/metricstest", "internal/longtests"},
	Rules: []Rule{
		{Path: "kernels", Modules: []string{"gonum.org/v1/gonum", "golang.org/x/sys"}},
		{Path: "kernels/kerneltest", May: []string{"kernels"}},
		{Path: "kernels/bench", May: []string{"kernels"}},
		{Path: "kernels/cuda", May: []string{"kernels"}, Modules: []string{"gorgonia.org/cu"}},

		{Path: "core/policy"},
		// DESIGN.md says kernels only; the model's requests carry
		// policy.FinishReason and its sampler answers through
		// policy.Collect, and core/policy is a std-only leaf.
		{Path: "core/model", May: []string{"kernels", "core/policy", "core/model"}},
		{Path: "core/tokenizer", Modules: []string{"github.com/dlclark/regexp2", "golang.org/x/text"}},
		{Path: "core/chat", May: []string{"core/model", "core/policy", "core/tokenizer"}},
		{Path: "core/ckpt", May: []string{"core/model", "core/tokenizer", "kernels"}},
		{Path: "core/basemodel", May: []string{"core/ckpt", "core/model", "core/tokenizer", "kernels"}},
		{Path: "core/bundle", May: []string{"core/basemodel", "core/chat", "core/ckpt", "core/model", "core/tokenizer", "kernels"}},
		{Path: "core/remote", May: []string{"core/policy"}},
		{Path: "core/store", Modules: []string{"go.etcd.io/bbolt"}},
		{Path: "core/weights", May: []string{"core/model"}},
		{Path: "core/search", May: []string{"harnesses", "data", "core/eval", "core/policy"}},
		{Path: "core/eval"},
		// DESIGN.md says "all of core but pretrain and attach"; the engine
		// also runs harnesses on data's episodes over a kernels backend.
		{Path: "core/engine", May: []string{"core/*", "harnesses", "data", "kernels"},
			Deny: []string{"core/pretrain", "core/attach"}},
		{Path: "core/attach", May: []string{"core/engine", "core/store"}},
		// DESIGN.md's row lacks core/policy, kernels and core/model: the
		// bench takes the backend its runs' engines are built on
		// (--backend) and, for a policy server, a policy per domain, and
		// hands both to the Workspace; the engine's speed bench (speed.go:
		// `whale bench engine`, `whale bench model`) measures the model's
		// training and sampling against kernels/bench's bounds.
		{Path: "core/experiments", May: []string{"core/experiments", "core/engine", "core/bundle", "core/store", "data", "core/policy", "kernels", "core/model"},
			Modules: []string{"gonum.org/v1/gonum", "gonum.org/v1/plot"}},
		{Path: "core/pretrain", May: []string{"core/*", "data", "harnesses", "kernels"}},
		// Not in DESIGN.md: runs side by side, read from the engine's
		// stored events, scored with core/eval's intervals.
		{Path: "core/compare", May: []string{"core/engine", "core/eval"}},
		// Not in DESIGN.md: a run's events as scalars (JSON lines, CSV,
		// TensorBoard files); metricstest decodes them in tests.
		{Path: "core/metrics", May: []string{"core/metrics", "core/engine", "core/tfevent"}},
		// Not in DESIGN.md: TensorBoard's file format, a leaf.
		{Path: "core/tfevent"},
		// Not in DESIGN.md: configuration files, a leaf over TOML.
		{Path: "core/runconfig", Modules: []string{"github.com/BurntSushi/toml"}},

		{Path: "harnesses", May: []string{"data", "core/policy"}, Modules: []string{"go.starlark.net"}},
		// data/math, data/searchqa, data/chess import data; data/domains,
		// the registry, imports them.
		{Path: "data", May: []string{"data"}, Modules: []string{"github.com/corentings/chess"}},

		// tui/compare and tui/keymap (not in DESIGN.md) import no package
		// of ours; the screen's modules are tui's and cmd's alone.
		{Path: "tui", May: []string{"tui", "core/engine", "core/attach"}, Modules: []string{
			"github.com/charmbracelet", "github.com/NimbleMarkets/ntcharts", "github.com/muesli/termenv", "github.com/BurntSushi/toml"}},
		{Path: "cmd", May: []string{"*"}, Modules: []string{"*"}},
		{Path: "internal"},
	},
}

// knownViolations are the table's breaches that other work of issue 38
// removes; delete each line as that work lands (the test fails on a line
// that no longer matches, saying so).
var knownViolations = []Exception{}
