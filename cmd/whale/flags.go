package main

import (
	"strings"

	"github.com/spf13/pflag"

	"whale/data/domains"
)

// The flags many commands share, registered in one place so that their
// names, defaults and help read the same everywhere.

// dbFlag registers --db: the workspace file, ./whale.db by default. (The
// bench's own, bench.db, is registered with its reason beside it.)
func dbFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "db", "whale.db", "workspace file")
}

// jsonObject is --json's help where a command prints one JSON object.
const jsonObject = "print one JSON object"

// jsonFlag registers --json with help saying what the command then
// prints (jsonObject for most).
func jsonFlag(f *pflag.FlagSet, p *bool, help string) {
	f.BoolVar(p, "json", false, help)
}

// threadsFlag registers --threads on the measuring commands.
func threadsFlag(f *pflag.FlagSet, p *int) {
	f.IntVar(p, "threads", 0, "kernel threads (default: GOMAXPROCS); a small model's rollouts decode in lanes, one sampler a thread")
}

// domainFlag registers --domain on the commands that take one domain by
// name.
func domainFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "domain", "", "domain: "+strings.Join(domains.Names(), ", "))
}

// formatFlag registers --format, the format of the tasks file --data
// names.
func formatFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "format", "", "format of --data: gsm8k, qa, lichess or splits")
}

// dataUsage is --data's help where it imports a run's tasks.
const dataUsage = "import tasks from FILE instead of the generated splits"

// modelUsage is --model's help where it names a new run's starting model.
const modelUsage = "starting model: a whale model file or a Hugging Face folder (default: the embedded base model)"

// headlessFlag registers --headless on the commands that run a run.
func headlessFlag(f *pflag.FlagSet, p *bool) {
	f.BoolVar(p, "headless", false, "run without the TUI, progress on stderr")
}
