package bundle

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

// torchPython is a python3 that imports torch: the one on PATH, else
// Debian's (apt's python3-torch installs there, beside a pyenv or venv
// python3 that may come first on PATH). "" when there is none.
func torchPython() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import torch").Run() == nil {
			return py
		}
	}
	return ""
}

// torchRequest is one forward pass asked of testdata/qwen_torch.py.
type torchRequest struct {
	Dir   string  `json:"dir"`
	IDs   []int32 `json:"ids"`
	DType string  `json:"dtype"`
}

// torchLogits runs testdata/qwen_torch.py once over every request (one
// process: importing torch is most of its time) and returns the logits of
// each.
func torchLogits(t *testing.T, py string, reqs []torchRequest) [][][]float64 {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(py, filepath.Join("testdata", "qwen_torch.py"), "--stdin")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("qwen_torch.py: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	res := make([][][]float64, len(reqs))
	for i := range reqs {
		var r struct{ Logits [][]float64 }
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("qwen_torch.py answer %d: %v", i, err)
		}
		res[i] = r.Logits
	}
	return res
}

// TestLogitsMatchAPlainTorchQwen compares whale's logits with an
// independent PyTorch implementation of the Qwen3/Qwen2 forward pass
// (testdata/qwen_torch.py, written from the architecture, not with
// transformers) on random-weight models of both architectures, GQA and
// MHA, tied and untied, exported with whale's own WriteDir in float32.
//
// Tolerance 1e-4 absolute on logits of magnitude ~1–10: both sides run in
// float32 (eps 6e-8) and differ only in summation order, whose error over
// dot products of ≤ 64 terms through two layers is ~1e-6 relative; the
// torch float64 run shows the size (its distance to torch float32 is
// logged beside whale's). A real difference — RoPE pairing, a missing
// bias or q/k norm, the GQA head mapping, eps inside or outside the root —
// moves logits by 1e-2 or more.
func TestLogitsMatchAPlainTorchQwen(t *testing.T) {
	py := torchPython()
	if py == "" {
		t.Skip("torch parity: no python3 imports torch (python3 -c 'import torch' fails); install it with apt-get install python3-torch")
	}
	models := exportTestModels(t)
	var reqs []torchRequest
	for _, m := range models {
		reqs = append(reqs, torchRequest{m.dir, m.ids, "float32"}, torchRequest{m.dir, m.ids, "float64"})
	}
	res := torchLogits(t, py, reqs)
	for k, m := range models {
		name, got, t32, t64 := m.name, m.logits, res[2*k], res[2*k+1]
		T, V := len(m.ids), m.cfg.VocabSize
		if len(t32) != T || len(t32[0]) != V || len(t64) != T {
			t.Fatalf("%s: torch gave %d×%d logits, want %d×%d", name, len(t32), len(t32[0]), T, V)
		}
		var whale64, torch3264, scale float64
		for i := 0; i < T; i++ {
			for j := 0; j < V; j++ {
				w := float64(got[i*V+j])
				whale64 = max(whale64, absf(w-t64[i][j]))
				torch3264 = max(torch3264, absf(t32[i][j]-t64[i][j]))
				scale = max(scale, absf(t64[i][j]))
				if d := absf(w - t32[i][j]); d > 1e-4 {
					t.Fatalf("%s: position %d token %d: whale %v, torch float32 %v (float64 %v): |Δ| %.3g > 1e-4", name, i, j, w, t32[i][j], t64[i][j], d)
				}
			}
		}
		if whale64 > 1e-4 {
			t.Fatalf("%s: whale is %.3g from torch float64, more than 1e-4", name, whale64)
		}
		t.Logf("%s: max |logit| %.3g; max |whale − torch f64| %.3g; max |torch f32 − torch f64| %.3g", name, scale, whale64, torch3264)
	}
}

func absf(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
