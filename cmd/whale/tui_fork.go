package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"whale/core/engine"
)

// forkRun starts a new run in ws from kept checkpoint ckptID (the TUI's r
// and `whale run --from-checkpoint`): the checkpoint's weights and harness,
// its run's configuration otherwise. dataPath and format are the --data and
// --format that run was started with, if any.
func forkRun(ws *engine.Workspace, ckptID, dataPath, format string) (*engine.Engine, error) {
	cfg, err := ws.ForkPlan(ckptID)
	if err != nil {
		return nil, err
	}
	dom, err := runDomain(cfg.Domain, dataPath, format, cfg.DataSeed)
	if err != nil {
		return nil, err
	}
	// The checkpoint's run's tokenizer comes from the store.
	return ws.Fork(ckptID, engine.Env{Domain: dom})
}

// runFromCheckpoint is `whale run --headless --from-checkpoint ID`: the
// run's configuration comes from the checkpoint's run, so flags that would
// set it are refused rather than silently ignored.
func runFromCheckpoint(cmd *cobra.Command, dbPath, ckptID, dataPath, format string, asJSON bool) error {
	allowed := map[string]bool{"headless": true, "db": true, "json": true, "data": true, "format": true, "from-checkpoint": true, "tensorboard": true}
	var bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !allowed[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usageError{fmt.Errorf("--from-checkpoint takes the configuration of the checkpoint's run; drop %v", bad)}
	}
	if (dataPath == "") != (format == "") {
		return usageError{fmt.Errorf("--data and --format go together")}
	}
	ws, err := openWorkspace(dbPath)
	if err != nil {
		return err
	}
	defer ws.Close()
	eng, err := forkRun(ws, ckptID, dataPath, format)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "run %s: from checkpoint %s (%s, %s, preset %s), db %s\n", eng.RunID, ckptID, eng.Cfg.Domain, eng.Cfg.ScheduleName(), eng.Cfg.Preset, dbPath)
	return drive(cmd, ws, eng, asJSON)
}
