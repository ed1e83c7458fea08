package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// planFlags are whale bench plan's own flags; the bench's are those of
// bench conditions.
type planFlags struct {
	shards                     int
	emit, name, image, pvc     string
	mount, cpus, memory, limit string
	partition, binary          string
}

// Emitters of whale bench plan.
const (
	emitK8s   = "k8s"
	emitSlurm = "slurm"
)

// planOwn are bench conditions flags that the plan sets itself for each
// shard (or that make no sense in one).
var planOwn = map[string]bool{"shard": true, "db": true, "out": true, "help": true}

func newBenchPlanCmd() *cobra.Command {
	var pf planFlags
	bench := newBenchConditionsCmd()
	c := &cobra.Command{
		Use:   "plan --shards N --emit k8s|slurm --domain D [bench conditions flags]",
		Short: "Print a Kubernetes Indexed Job or a Slurm array script that runs 'bench conditions' in N shards",
		Long: "Prints, for the bench that 'whale bench conditions' runs with the same flags, a cluster's jobs: one\n" +
			"shard of its runs each (--shard I/N, with a store of its own), all keeping their runs in one record\n" +
			"in --out, a folder every shard can write (a shared volume, NFS). --emit k8s prints a Kubernetes Job\n" +
			"(batch/v1, completionMode Indexed: JOB_COMPLETION_INDEX is the shard; JSON, which kubectl takes:\n" +
			"whale bench plan … | kubectl apply -f -); --emit slurm prints a Slurm array script (sbatch it). When\n" +
			"every shard has finished, the command they print last (bench conditions without --shard) writes\n" +
			"the report from the record. Nothing is run or written here. docs/SCALING.md has the whole picture.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := pf.check(cmd.Flags()); err != nil {
				return err
			}
			out, _ := cmd.Flags().GetString("out")
			pass := benchArgs(cmd.Flags())
			switch pf.emit {
			case emitK8s:
				if !path.IsAbs(out) {
					if cmd.Flags().Changed("out") {
						return usageError{fmt.Errorf("--out %q: in a Kubernetes Job, the shared folder's path inside the container (absolute, under --mount %s)", out, pf.mount)}
					}
					out = path.Join(pf.mount, "results")
				}
				job := pf.k8sJob(pass, out)
				b, err := json.MarshalIndent(job, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
				fmt.Fprintf(cmd.ErrOrStderr(), "when every index has succeeded, the report: %s\n", shellJoin(pf.reportArgs(pass, out)))
			case emitSlurm:
				abs, err := filepath.Abs(out)
				if err != nil {
					return err
				}
				if strings.ContainsAny(abs, " \t\n") {
					return usageError{fmt.Errorf("--out %q: Slurm's #SBATCH --output cannot hold a path with spaces", abs)}
				}
				pf.slurmScript(cmd.OutOrStdout(), pass, abs)
			}
			return nil
		},
	}
	c.Flags().AddFlagSet(bench.Flags())
	c.Flags().IntVar(&pf.shards, "shards", 0, "how many shards (Job indexes, array tasks) share the bench's runs")
	c.Flags().StringVar(&pf.emit, "emit", "", "k8s (a Kubernetes Indexed Job, JSON) or slurm (an sbatch array script)")
	c.Flags().StringVar(&pf.name, "name", "whale-bench", "the Job's or the Slurm job's name")
	c.Flags().StringVar(&pf.binary, "whale", "whale", "the whale binary in the container or on the nodes")
	c.Flags().StringVar(&pf.image, "image", "whale:latest", "k8s: the container image holding the whale binary")
	c.Flags().StringVar(&pf.pvc, "pvc", "", "k8s: the PersistentVolumeClaim (ReadWriteMany) of the shared folder, mounted at --mount")
	c.Flags().StringVar(&pf.mount, "mount", "/shared", "k8s: where the shared folder is mounted in the container")
	c.Flags().StringVar(&pf.cpus, "cpus", "4", "CPUs of each shard (k8s request, Slurm --cpus-per-task)")
	c.Flags().StringVar(&pf.memory, "memory", "8Gi", "memory of each shard (k8s request; Slurm --mem, as 8G)")
	c.Flags().StringVar(&pf.limit, "time", "24:00:00", "slurm: each task's time limit")
	c.Flags().StringVar(&pf.partition, "partition", "", "slurm: the partition (default: the cluster's)")
	return c
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (pf *planFlags) check(f *pflag.FlagSet) error {
	switch {
	case pf.shards < 1:
		return usageError{fmt.Errorf("--shards %d: want at least 1", pf.shards)}
	case pf.emit != emitK8s && pf.emit != emitSlurm:
		return usageError{fmt.Errorf("--emit %q: want k8s or slurm", pf.emit)}
	case !f.Changed("domain"):
		return usageError{errors.New("--domain is required (the bench's flags are those of 'whale bench conditions')")}
	case f.Changed("shard"):
		return usageError{errors.New("--shard is the plan's to set, one per shard: drop it")}
	case f.Changed("db"):
		return usageError{errors.New("--db is the plan's to set (a store per shard, in --out): drop it")}
	case pf.emit == emitK8s && !dnsLabel.MatchString(pf.name):
		return usageError{fmt.Errorf("--name %q: a Kubernetes name is lowercase letters, digits and '-', at most 63", pf.name)}
	case pf.emit == emitK8s && !path.IsAbs(pf.mount):
		return usageError{fmt.Errorf("--mount %q: want an absolute path in the container", pf.mount)}
	case pf.emit == emitSlurm && strings.ContainsAny(pf.name+pf.limit+pf.partition+pf.cpus+pf.memory, " \n'\"$`\\"):
		return usageError{errors.New("--name, --time, --partition, --cpus and --memory go into #SBATCH lines: no spaces, quotes or shell characters")}
	}
	return nil
}

// benchArgs are the bench conditions flags given, as --name=value, less
// the plan's own and the ones the plan sets per shard.
func benchArgs(f *pflag.FlagSet) []string {
	bench := newBenchConditionsCmd().Flags()
	var out []string
	f.Visit(func(fl *pflag.Flag) {
		if planOwn[fl.Name] || bench.Lookup(fl.Name) == nil {
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return out
}

// shardArgs are the arguments of shard index (an expression the cluster
// expands) of N.
func (pf *planFlags) shardArgs(pass []string, index, out string) []string {
	args := append([]string{"bench", "conditions"}, pass...)
	return append(args, "--shard", index+"/"+fmt.Sprint(pf.shards), "--db", path.Join(out, "shard-"+index+".db"), "--out", out)
}

// reportArgs are the final call's: the whole bench, read from the record.
func (pf *planFlags) reportArgs(pass []string, out string) []string {
	args := append([]string{pf.binary, "bench", "conditions"}, pass...)
	return append(args, "--db", path.Join(out, "report.db"), "--out", out)
}

// k8s is the part of a batch/v1 Job the plan writes.
type k8sJob struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   k8sMeta    `json:"metadata"`
	Spec       k8sJobSpec `json:"spec"`
}

type k8sMeta struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type k8sJobSpec struct {
	CompletionMode string      `json:"completionMode"`
	Completions    int         `json:"completions"`
	Parallelism    int         `json:"parallelism"`
	BackoffLimit   int         `json:"backoffLimit"`
	Template       k8sTemplate `json:"template"`
}

type k8sTemplate struct {
	Metadata k8sMeta `json:"metadata"`
	Spec     k8sPod  `json:"spec"`
}

type k8sPod struct {
	RestartPolicy string         `json:"restartPolicy"`
	Containers    []k8sContainer `json:"containers"`
	Volumes       []k8sVolume    `json:"volumes,omitempty"`
}

type k8sContainer struct {
	Name         string           `json:"name"`
	Image        string           `json:"image"`
	Command      []string         `json:"command"`
	Args         []string         `json:"args"`
	Env          []k8sEnv         `json:"env"`
	Resources    k8sResources     `json:"resources"`
	VolumeMounts []k8sVolumeMount `json:"volumeMounts,omitempty"`
}

type k8sEnv struct {
	Name      string `json:"name"`
	ValueFrom struct {
		FieldRef struct {
			FieldPath string `json:"fieldPath"`
		} `json:"fieldRef"`
	} `json:"valueFrom"`
}

type k8sResources struct {
	Requests map[string]string `json:"requests"`
}

type k8sVolume struct {
	Name                  string `json:"name"`
	PersistentVolumeClaim struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim"`
}

type k8sVolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

// k8sJob is the Indexed Job: one pod per shard, JOB_COMPLETION_INDEX (the
// index annotation, through the downward API, as Kubernetes' own example
// does) expanded into the shard's arguments.
func (pf *planFlags) k8sJob(pass []string, out string) k8sJob {
	labels := map[string]string{"app.kubernetes.io/name": "whale", "whale/bench": pf.name}
	ctr := k8sContainer{Name: "whale", Image: pf.image, Command: []string{pf.binary},
		Args:      pf.shardArgs(pass, "$(JOB_COMPLETION_INDEX)", out),
		Resources: k8sResources{Requests: map[string]string{"cpu": pf.cpus, "memory": pf.memory}}}
	var env k8sEnv
	env.Name = "JOB_COMPLETION_INDEX"
	env.ValueFrom.FieldRef.FieldPath = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
	ctr.Env = []k8sEnv{env}
	pod := k8sPod{RestartPolicy: "Never"}
	if pf.pvc != "" {
		var v k8sVolume
		v.Name = "shared"
		v.PersistentVolumeClaim.ClaimName = pf.pvc
		pod.Volumes = []k8sVolume{v}
		ctr.VolumeMounts = []k8sVolumeMount{{Name: "shared", MountPath: pf.mount}}
	}
	pod.Containers = []k8sContainer{ctr}
	return k8sJob{APIVersion: "batch/v1", Kind: "Job",
		Metadata: k8sMeta{Name: pf.name, Labels: labels, Annotations: map[string]string{
			"whale/report-command": shellJoin(pf.reportArgs(pass, out)),
		}},
		Spec: k8sJobSpec{CompletionMode: "Indexed", Completions: pf.shards, Parallelism: pf.shards,
			// A pod that fails is retried (it resumes its shard from its
			// store); a few times per shard before the Job gives up.
			BackoffLimit: 3 * pf.shards,
			Template:     k8sTemplate{Metadata: k8sMeta{Labels: labels}, Spec: pod}}}
}

// slurmScript writes the array script: task I runs shard I.
func (pf *planFlags) slurmScript(w io.Writer, pass []string, out string) {
	fmt.Fprintf(w, "#!/bin/bash\n")
	fmt.Fprintf(w, "#SBATCH --job-name=%s\n", pf.name)
	fmt.Fprintf(w, "#SBATCH --array=0-%d\n", pf.shards-1)
	fmt.Fprintf(w, "#SBATCH --cpus-per-task=%s\n", pf.cpus)
	fmt.Fprintf(w, "#SBATCH --mem=%s\n", strings.TrimSuffix(pf.memory, "i"))
	fmt.Fprintf(w, "#SBATCH --time=%s\n", pf.limit)
	fmt.Fprintf(w, "#SBATCH --output=%s\n", path.Join(out, "slurm-%A_%a.log"))
	if pf.partition != "" {
		fmt.Fprintf(w, "#SBATCH --partition=%s\n", pf.partition)
	}
	fmt.Fprintf(w, "#\n# whale bench plan: %d shards of 'whale bench conditions', one array task each, all keeping\n", pf.shards)
	fmt.Fprintf(w, "# their runs in %s (a folder every node shares). When every task has\n", path.Join(out, "runs.jsonl"))
	fmt.Fprintf(w, "# finished, write the report (or submit it with sbatch --dependency=afterok:JOBID --wrap '…'):\n")
	fmt.Fprintf(w, "#   %s\n", shellJoin(pf.reportArgs(pass, out)))
	fmt.Fprintf(w, "set -euo pipefail\n")
	words := []string{pf.binary}
	for _, a := range pf.shardArgs(pass, indexMark, out) {
		// The task's index is the shell's to expand, outside the quotes.
		parts := strings.Split(a, indexMark)
		for i, p := range parts {
			if p != "" {
				parts[i] = shellQuote(p)
			}
		}
		words = append(words, strings.Join(parts, `"${SLURM_ARRAY_TASK_ID}"`))
	}
	fmt.Fprintf(w, "exec %s\n", strings.Join(words, " "))
}

// indexMark stands for the array task's index in a shard's arguments.
const indexMark = "\x00INDEX\x00"

// shellJoin quotes each argument for a POSIX shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
