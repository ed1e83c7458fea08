package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"whale/core/experiments"
)

// jobSchema is the part of Kubernetes' batch/v1 Job schema the plan's
// manifest uses, decoded strictly: a field the schema does not have, or
// of the wrong type, fails the decode.
type jobSchema struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		CompletionMode string `json:"completionMode"`
		Completions    *int32 `json:"completions"`
		Parallelism    *int32 `json:"parallelism"`
		BackoffLimit   *int32 `json:"backoffLimit"`
		Template       struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				RestartPolicy string `json:"restartPolicy"`
				Containers    []struct {
					Name    string   `json:"name"`
					Image   string   `json:"image"`
					Command []string `json:"command"`
					Args    []string `json:"args"`
					Env     []struct {
						Name      string `json:"name"`
						Value     string `json:"value"`
						ValueFrom *struct {
							FieldRef struct {
								FieldPath string `json:"fieldPath"`
							} `json:"fieldRef"`
						} `json:"valueFrom"`
					} `json:"env"`
					Resources struct {
						Requests map[string]string `json:"requests"`
					} `json:"resources"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name                  string `json:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `json:"claimName"`
					} `json:"persistentVolumeClaim"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

var (
	k8sName     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	k8sQuantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)
	k8sVarRef   = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
)

// checkJob checks what Kubernetes requires of an Indexed Job of n
// completions (the API server's validation of batch/v1 Job and its pod
// template, for the fields used), and that each index's arguments are a
// valid 'whale bench conditions' command line for shard index/n.
func checkJob(t *testing.T, b []byte, n int) jobSchema {
	t.Helper()
	var j jobSchema
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		t.Fatalf("the manifest is not a batch/v1 Job as the schema has it: %v\n%s", err, b)
	}
	s := j.Spec
	switch {
	case j.APIVersion != "batch/v1" || j.Kind != "Job":
		t.Fatalf("apiVersion %q kind %q", j.APIVersion, j.Kind)
	case len(j.Metadata.Name) > 63 || !k8sName.MatchString(j.Metadata.Name):
		t.Fatalf("metadata.name %q is not a DNS-1123 label", j.Metadata.Name)
	case s.CompletionMode != "Indexed" || s.Completions == nil || int(*s.Completions) != n || s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > *s.Completions:
		t.Fatalf("spec: completionMode %q, completions %v, parallelism %v; want Indexed with %d", s.CompletionMode, s.Completions, s.Parallelism, n)
	case s.BackoffLimit == nil || *s.BackoffLimit < 0:
		t.Fatalf("backoffLimit %v", s.BackoffLimit)
	case s.Template.Spec.RestartPolicy != "Never" && s.Template.Spec.RestartPolicy != "OnFailure":
		t.Fatalf("a Job's pods restart Never or OnFailure, not %q", s.Template.Spec.RestartPolicy)
	case len(s.Template.Spec.Containers) == 0:
		t.Fatal("no containers")
	}
	vols := map[string]bool{}
	for _, v := range s.Template.Spec.Volumes {
		if !k8sName.MatchString(v.Name) || v.PersistentVolumeClaim.ClaimName == "" || vols[v.Name] {
			t.Fatalf("volume %+v", v)
		}
		vols[v.Name] = true
	}
	for _, c := range s.Template.Spec.Containers {
		if !k8sName.MatchString(c.Name) || c.Image == "" || len(c.Command) == 0 {
			t.Fatalf("container %q image %q command %v", c.Name, c.Image, c.Command)
		}
		for k, q := range c.Resources.Requests {
			if (k != "cpu" && k != "memory") || !k8sQuantity.MatchString(q) {
				t.Fatalf("resource request %s: %q", k, q)
			}
		}
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] || !strings.HasPrefix(m.MountPath, "/") {
				t.Fatalf("volume mount %+v names no volume or a relative path", m)
			}
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
				t.Fatalf("env %s from %q", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = true
		}
		// Kubernetes expands $(VAR) in args only for variables the
		// container declares; the index must reach every shard.
		joined := strings.Join(c.Args, " ")
		for _, m := range k8sVarRef.FindAllStringSubmatch(joined, -1) {
			if !env[m[1]] {
				t.Fatalf("args use $(%s), which the container does not declare", m[1])
			}
		}
		for i := range n {
			args := slices.Clone(c.Args)
			for k := range args {
				args[k] = strings.ReplaceAll(args[k], "$(JOB_COMPLETION_INDEX)", string(rune('0'+i)))
			}
			checkShardArgs(t, args, i, n)
		}
	}
	return j
}

// checkShardArgs checks that args are bench conditions of shard i/n.
func checkShardArgs(t *testing.T, args []string, i, n int) {
	t.Helper()
	if len(args) < 2 || args[0] != "bench" || args[1] != "conditions" {
		t.Fatalf("shard %d args %v", i, args)
	}
	c := newBenchConditionsCmd()
	if err := c.ParseFlags(args[2:]); err != nil {
		t.Fatalf("shard %d: %v: %v", i, args, err)
	}
	shard, _ := c.Flags().GetString("shard")
	if sh, err := experiments.ParseShard(shard); err != nil || sh != (experiments.Shard{I: i, N: n}) {
		t.Fatalf("shard %d runs --shard %q (%v)", i, shard, err)
	}
	if db, _ := c.Flags().GetString("db"); !strings.Contains(db, "shard-"+string(rune('0'+i))) {
		t.Fatalf("shard %d's store %q is not its own", i, db)
	}
}

func TestBenchPlanEmitsAKubernetesIndexedJob(t *testing.T) {
	out, err := runWhale(t, "bench", "plan", "--shards", "3", "--emit", "k8s", "--domain", "all", "--preset", "small", "--seeds", "3",
		"--conditions", "weight-only,harness-only", "--pvc", "whale-shared", "--image", "registry.example/whale:1")
	if err != nil {
		t.Fatal(err)
	}
	j := checkJob(t, []byte(out), 3)
	c := j.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example/whale:1" || !slices.Contains(c.Args, "--conditions=weight-only,harness-only") || !slices.Contains(c.Args, "--out") {
		t.Errorf("container %+v", c)
	}
	if rc := j.Metadata.Annotations["whale/report-command"]; !strings.Contains(rc, "--db /shared/results/report.db --out /shared/results") || strings.Contains(rc, "--shard") {
		t.Errorf("report command %q", rc)
	}
	// kubectl, where it is installed, checks it too. Its client-side dry
	// run still asks a cluster for the API's schema, so without one the
	// schema check above stands alone.
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		cmd := exec.Command(kubectl, "create", "--dry-run=client", "-o", "name", "-f", "-")
		cmd.Stdin = strings.NewReader(out)
		if b, err := cmd.CombinedOutput(); err == nil {
			if !strings.Contains(string(b), "job.batch/whale-bench") {
				t.Errorf("kubectl: %s", b)
			}
		} else if !strings.Contains(string(b), "connection refused") && !strings.Contains(string(b), "openapi") {
			t.Errorf("kubectl refused the manifest: %v\n%s", err, b)
		}
	}
}

func TestBenchPlanEmitsASlurmArrayScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared folder's") // a quote to quote
	shared = strings.ReplaceAll(shared, " ", "_")
	out, err := runWhale(t, "bench", "plan", "--shards", "4", "--emit", "slurm", "--domain", "math", "--seeds", "2", "--out", shared, "--partition", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "bench.sbatch")
	if err := os.WriteFile(script, []byte(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s\n%s", err, b, out)
	}
	for _, want := range []string{"#!/bin/bash\n", "#SBATCH --array=0-3\n", "#SBATCH --partition=cpu\n", "#SBATCH --cpus-per-task=4\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("script lacks %q:\n%s", want, out)
		}
	}
	// Run it as task 2 with a whale that prints its arguments, one a line.
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "whale"), []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "SLURM_ARRAY_TASK_ID=2")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the script as task 2: %v\n%s", err, b)
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	checkShardArgs(t, args, 2, 4)
	if !slices.Contains(args, shared) || !slices.Contains(args, filepath.Join(shared, "shard-2.db")) {
		t.Errorf("task 2's arguments %q do not name the shared folder %q exactly", args, shared)
	}
}

func TestBenchPlanMisuse(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "plan", "--emit", "k8s", "--domain", "math"},
		{"bench", "plan", "--shards", "2", "--emit", "helm", "--domain", "math"},
		{"bench", "plan", "--shards", "2", "--emit", "k8s"},
		{"bench", "plan", "--shards", "2", "--emit", "k8s", "--domain", "math", "--shard", "0/2"},
		{"bench", "plan", "--shards", "2", "--emit", "k8s", "--domain", "math", "--db", "x.db"},
		{"bench", "plan", "--shards", "2", "--emit", "k8s", "--domain", "math", "--name", "Whale_Bench"},
		{"bench", "plan", "--shards", "2", "--emit", "k8s", "--domain", "math", "--out", "results"},
		{"bench", "plan", "--shards", "2", "--emit", "slurm", "--domain", "math", "--out", "/a b"},
	} {
		if _, err := runWhale(t, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
