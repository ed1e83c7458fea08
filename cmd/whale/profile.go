package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// profiles holds the root's --cpuprofile and --memprofile: any subcommand
// can be profiled (go tool pprof reads the files), which is how the
// figures in docs/PERFORMANCE.md were located.
type profiles struct {
	cpuPath, memPath string
	cpu              *os.File
}

func (p *profiles) flags(root *cobra.Command) {
	root.PersistentFlags().StringVar(&p.cpuPath, "cpuprofile", "", "write a CPU profile of the command to this file")
	root.PersistentFlags().StringVar(&p.memPath, "memprofile", "", "write a heap profile (in use and allocated, after a GC) to this file when the command ends")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
	root.PersistentPostRunE = func(*cobra.Command, []string) error { return p.stop() }
}

func (p *profiles) start() error {
	if p.cpuPath == "" {
		return nil
	}
	f, err := os.Create(p.cpuPath)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	p.cpu = f
	return nil
}

// stop ends the CPU profile and writes the heap profile. Cobra skips it
// when the command fails; main calls it again then (it is idempotent).
func (p *profiles) stop() error {
	var first error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			first = fmt.Errorf("--cpuprofile: %w", err)
		}
		p.cpu = nil
	}
	if p.memPath != "" {
		path := p.memPath
		p.memPath = ""
		runtime.GC()
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("--memprofile: %w", err)
		}
	}
	return first
}
