package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestEngineBenchReportsBounds: the engine bench names the width of the
// FMAs its peak was measured with and the read bandwidth, and gives every
// GEMM, the training step and the 110M sampling as a fraction of its
// bound, in the table and in the JSON.
func TestEngineBenchReportsBounds(t *testing.T) {
	r := engineBench{CPU: "test", Threads: 2, Kernels: "k", PeakGFLOPS: 400, PeakBits: 512, ReadGBPS: 20,
		Gemm:         []gemmFigure{{M: 1024, K: 256, N: 256, Layout: "NN", GFLOPS: 300, OfPeak: 0.75}},
		Train:        rate{TokensPerS: 5000, GFLOPS: 100, OfBound: 0.25},
		Sample110MB1: rate{TokensPerS: 80, GBPS: 16, OfBound: 0.8}}
	var out bytes.Buffer
	printEngineBench(&out, r)
	for _, want := range []string{"400.0 GFLOP/s (512-bit FMAs)", "read       20.0 GB/s", "300.0   75.0 %",
		"100.0 GFLOP/s (25.0 % of peak)", "16.0 GB/s, 80.0 % of read bandwidth"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := printJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"peak_gflops", "peak_bits", "read_gbps"} {
		if _, ok := j[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out.String())
		}
	}
	if g := j["gemm"].([]any)[0].(map[string]any); g["of_peak"] != 0.75 {
		t.Errorf("gemm of_peak = %v, want 0.75", g["of_peak"])
	}
	if s := j["sample_110m_b1"].(map[string]any); s["of_bound"] != 0.8 {
		t.Errorf("sample_110m_b1 of_bound = %v, want 0.8", s["of_bound"])
	}
}

func TestBenchRolloutsRefusesAnUnknownDomain(t *testing.T) {
	if _, err := runWhale(t, "bench", "rollouts", "--domain", "nope"); !isUsage(err) {
		t.Fatalf("--domain nope: %v, want a usage error", err)
	}
}
