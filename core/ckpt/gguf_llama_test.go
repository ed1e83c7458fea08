package ckpt

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"whale/core/model"
	"whale/core/tokenizer"
	"whale/kernels"
)

// The llama.cpp fixture: whale's GGUF files of small random models, run by
// llama.cpp itself (testdata/llama/logits.cpp, one float32 forward pass),
// with the logits it gave committed beside the file's sha256. CI has no
// llama.cpp: these tests read the fixture only. testdata/llama/regen.sh
// remakes it.

const llamaDir = "testdata/llama"

// llamaConfigs: Qwen3's shape (q/k norm, tied embeddings, no biases, a
// head_dim other than hidden/heads) and Qwen2's (q/k/v biases, untied
// embeddings, a vocabulary padded past the byte tokenizer's 259 ids), both
// with grouped-query attention.
var llamaConfigs = map[string]model.Config{
	"qwen3": {ModelType: "qwen3", VocabSize: 259, HiddenSize: 64, IntermediateSize: 128, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 4096, TieWordEmbeddings: true, HiddenAct: "silu"},
	"qwen2": {ModelType: "qwen2", VocabSize: 264, HiddenSize: 64, IntermediateSize: 160, NumHiddenLayers: 2,
		NumAttentionHeads: 8, NumKeyValueHeads: 2, RMSNormEps: 1e-5, RopeTheta: 10000,
		MaxPositionEmbeddings: 4096, AttentionBias: true, HiddenAct: "silu"},
}

// llamaCases are the fixture's files: every config in float32, and Qwen3's
// in bfloat16 and float16 too.
var llamaCases = []struct {
	config string
	dtype  DType
}{{"qwen3", F32}, {"qwen2", F32}, {"qwen3", BF16}, {"qwen3", F16}}

const llamaSeed = 15

func llamaCaseName(config string, dtype DType) string {
	return config + "-" + strings.ToLower(string(dtype))
}

// llamaIDs is a ChatML turn in the byte tokenizer, special ids included.
func llamaIDs() []int32 {
	ids := []int32{tokenizer.BytesImStart}
	ids = append(ids, tokenizer.Bytes{}.Encode("user\nWhat is 2+3?")...)
	return append(ids, tokenizer.BytesImEnd)
}

// llamaFixture is testdata/llama/fixture.json.
type llamaFixture struct {
	// LlamaCpp is the ggml-org/llama.cpp commit that computed the logits.
	LlamaCpp string           `json:"llama_cpp"`
	IDs      []int32          `json:"ids"`
	Cases    []llamaFixedCase `json:"cases"`
	// Tokens is llama.cpp's encoding of the tokenizer strings with the
	// GGUF vocabulary of Qwen3's tokenizer.
	Tokens llamaTokensCase `json:"tokens"`
}

type llamaTokensCase struct {
	SHA256 string `json:"gguf_sha256"`
	// File names the gzip JSON-lines file that tokenize.cpp wrote.
	File string `json:"file"`
}

type llamaFixedCase struct {
	Name   string `json:"name"`
	Seed   uint64 `json:"seed"`
	SHA256 string `json:"gguf_sha256"`
	// Logits names the gzip file of llama.cpp's T×V little-endian float32
	// logits, beside fixture.json.
	Logits string `json:"logits"`
}

// llamaModel is cfg with every parameter drawn from its own stream seeded
// by (seed, name) — not model.New's initialisation, so the fixture depends
// on the exporter and on nothing else of the model package but its
// parameter names. Norm weights are around 1 and q/k norms and biases far
// from their defaults, so a loader that skipped one would be caught.
func llamaModel(t *testing.T, cfg model.Config, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(cfg, kernels.NewCPU(), seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		h := fnv.New64a()
		h.Write([]byte(p.Name))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		v := make([]float32, p.Len)
		for i := range v {
			switch {
			case strings.HasSuffix(p.Name, "norm.weight"):
				v[i] = float32(1 + 0.2*rng.NormFloat64())
			case strings.HasSuffix(p.Name, ".bias"):
				v[i] = float32(0.1 * rng.NormFloat64())
			default:
				v[i] = float32(0.15 * rng.NormFloat64())
			}
		}
		if err := m.WriteParam(p.Name, v); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// roundModel stores m's matrices as dtype stores them, as a GGUF of dtype
// does (1-D tensors stay float32), so that whale runs the weights llama.cpp
// reads.
func roundModel(t *testing.T, m *model.Model, dtype DType) {
	t.Helper()
	for _, p := range m.Params() {
		if len(p.Shape) == 1 {
			continue
		}
		v, err := m.ReadParam(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range v {
			v[i] = roundTo(dtype, v[i])
		}
		if err := m.WriteParam(p.Name, v); err != nil {
			t.Fatal(err)
		}
	}
}

func readLlamaFixture(t *testing.T) llamaFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(llamaDir, "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f llamaFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s/fixture.json: %v", llamaDir, err)
	}
	return f
}

func readGzipF32(t *testing.T, path string) []float32 {
	t.Helper()
	zb, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zb))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(b)%4 != 0 {
		t.Fatalf("%s: %d bytes, not whole float32s", path, len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// llamaTolerance is the largest |whale − llama.cpp| allowed on a logit of a
// dtype's file whose largest llama.cpp logit is maxLogit. Measured at
// llama.cpp 81ff7ab on this project's Zen 3 machine:
//
//	case        max |logit|   max |Δ|    Δ / (u × max |logit|)
//	qwen3-f32   4.26          3.5e-6     —
//	qwen2-f32   4.79          3.0e-6     —
//	qwen3-bf16  4.27          3.7e-2     2.2   (u = 2⁻⁸)
//	qwen3-f16   4.26          5.7e-3     2.7   (u = 2⁻¹¹)
//
// F32: both sides compute in float32 from the same weights and differ only
// in summation order and in their exp/SiLU approximations: about seven
// float32 ulps of the largest logits (an ulp at 4 is 4.8e-7). 2e-5 leaves
// 6×, and adding 1e-3 to a single element of one weight (a k-norm, the
// final norm, one down-projection) already moves a logit past it; a whole
// tensor wrong (RoPE pairing, a missing bias or q/k norm, the GQA head
// mapping, a transposed matrix) moves logits by far more.
//
// BF16, F16: whale runs the same rounded weights in float32 (roundModel),
// but llama.cpp's CPU first rounds the activations of each matrix product
// to the weights' type (its vec_dot_type), a relative error of up to the
// unit roundoff u: 2⁻⁸ for bfloat16's 8-bit significand, 2⁻¹¹ for
// float16's 11. A product's output moves by up to u × Σ|w·x|, and a logit
// sits above nine rounded inputs (to q/k/v, output, gate/up and down in
// each of two layers, then to the head), so |Δ| scales as u × |logit|:
// the measured ratio is 2.2 and 2.7, about the same for both types, as it
// should be. The tolerance is 8u × max |logit|, 3× the measured ratio (a
// calibration from this measurement, not a proven bound).
func llamaTolerance(dtype DType, maxLogit float64) float64 {
	switch dtype {
	case BF16:
		return 8 * 0x1p-8 * maxLogit
	case F16:
		return 8 * 0x1p-11 * maxLogit
	}
	return 2e-5
}

// TestGGUFLogitsMatchLlamaCpp: llama.cpp, reading whale's GGUF export,
// computes the logits whale does — the file's tensors, names, shapes,
// metadata and vocabulary size are what llama.cpp's qwen2 and qwen3
// graphs need, not only what its loader accepts.
func TestGGUFLogitsMatchLlamaCpp(t *testing.T) {
	f := readLlamaFixture(t)
	if len(f.Cases) != len(llamaCases) {
		t.Fatalf("%s/fixture.json has %d cases, the test %d: regenerate it with %s/regen.sh", llamaDir, len(f.Cases), len(llamaCases), llamaDir)
	}
	for k, c := range llamaCases {
		fc := f.Cases[k]
		name := llamaCaseName(c.config, c.dtype)
		t.Run(name, func(t *testing.T) {
			if fc.Name != name || fc.Seed != llamaSeed {
				t.Fatalf("fixture case %d is %s seed %d, want %s seed %d: regenerate it with %s/regen.sh", k, fc.Name, fc.Seed, name, llamaSeed, llamaDir)
			}
			cfg := llamaConfigs[c.config]
			m := llamaModel(t, cfg, fc.Seed)
			b, err := EncodeGGUF(m, tokenizer.Bytes{}, c.dtype, name)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != fc.SHA256 {
				t.Fatalf("the GGUF file is not the one llama.cpp ran (sha256 %x, fixture %s): the exporter or the random model changed. "+
					"If that was meant, rebuild llama.cpp and rerun %s/regen.sh to remake the fixture", sum, fc.SHA256, llamaDir)
			}
			roundModel(t, m, c.dtype)
			got, err := m.Logits(f.IDs)
			if err != nil {
				t.Fatal(err)
			}
			want := readGzipF32(t, filepath.Join(llamaDir, fc.Logits))
			T, V := len(f.IDs), cfg.VocabSize
			if len(want) != T*V {
				t.Fatalf("%s holds %d logits, want %d×%d", fc.Logits, len(want), T, V)
			}
			var maxDiff, maxLogit float64
			for i := range want {
				maxLogit = max(maxLogit, math.Abs(float64(want[i])))
			}
			tol := llamaTolerance(c.dtype, maxLogit)
			for i := range want {
				d := math.Abs(float64(got[i]) - float64(want[i]))
				if !(d <= tol) {
					t.Fatalf("position %d token %d: whale %v, llama.cpp %v: |Δ| %.3g > %.3g", i/V, i%V, got[i], want[i], d, tol)
				}
				maxDiff = max(maxDiff, d)
			}
			t.Logf("max |logit| %.3g, max |whale − llama.cpp| %.3g (tolerance %.3g)", maxLogit, maxDiff, tol)
		})
	}
}

// TestWriteLlamaCppFixtureInputs writes what regen.sh gives llama.cpp: each
// case's GGUF file and the fixture.json that records it. It runs only when
// WHALE_LLAMA_FIXTURE names the folder to write (WHALE_LLAMA_COMMIT, the
// llama.cpp commit, goes into fixture.json).
func TestWriteLlamaCppFixtureInputs(t *testing.T) {
	dir := os.Getenv("WHALE_LLAMA_FIXTURE")
	if dir == "" {
		t.Skip("writes the llama.cpp fixture's inputs when WHALE_LLAMA_FIXTURE is set (testdata/llama/regen.sh)")
	}
	write := func(name string, b []byte) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	f := llamaFixture{LlamaCpp: os.Getenv("WHALE_LLAMA_COMMIT"), IDs: llamaIDs()}
	for _, c := range llamaCases {
		name := llamaCaseName(c.config, c.dtype)
		b, err := EncodeGGUF(llamaModel(t, llamaConfigs[c.config], llamaSeed), tokenizer.Bytes{}, c.dtype, name)
		if err != nil {
			t.Fatal(err)
		}
		f.Cases = append(f.Cases, llamaFixedCase{Name: name, Seed: llamaSeed, SHA256: write(name+".gguf", b), Logits: name + ".f32.gz"})
	}
	ids := fmt.Sprint(f.IDs)
	write("ids.txt", []byte(ids[1:len(ids)-1]+"\n"))

	b, err := EncodeGGUF(llamaTokenizerModel(t), qwenTokenizer(t), F32, "qwen3-tokenizer")
	if err != nil {
		t.Fatal(err)
	}
	f.Tokens = llamaTokensCase{SHA256: write("qwen3-tokenizer.gguf", b), File: "qwen3-tokens.jsonl.gz"}
	var lines strings.Builder
	for _, s := range llamaTokenizerInputs(t) {
		lines.WriteString(hex.EncodeToString([]byte(s)) + "\n")
	}
	write("strings.hex", []byte(lines.String()))

	j, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write("fixture.json", append(j, '\n'))
}

// llamaTokenizerModel is the smallest model that carries Qwen3's
// vocabulary: llama.cpp reads only the file's vocabulary for the
// tokenizer fixture, but the file is a whole model all the same.
func llamaTokenizerModel(t *testing.T) *model.Model {
	cfg := model.Config{ModelType: "qwen3", VocabSize: 151936, HiddenSize: 8, IntermediateSize: 8, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 4, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 40960, TieWordEmbeddings: true, HiddenAct: "silu"}
	return llamaModel(t, cfg, llamaSeed)
}

func qwenTokenizer(t *testing.T) *tokenizer.BPE {
	t.Helper()
	tok, err := tokenizer.Load("../tokenizer/testdata/qwen3_tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// llamaTokenizerInputs are the strings llama.cpp encodes for the tokenizer
// fixture: the tokenizer's golden file (code, CJK, emoji, numbers,
// whitespace runs, special and added tokens, random mixtures), a few more
// with tokens llama.cpp treats apart, and the NFC form of each string not
// already in it (see llamaTokenDifference).
func llamaTokenizerInputs(t *testing.T) []string {
	t.Helper()
	in := append(tokenizerStrings(t), "</s>", "a</s>b <|im_end|>", "<|repo_name|>whale\n<|file_sep|>main.go\n<|fim_pad|>")
	seen := map[string]bool{}
	for _, s := range in {
		seen[s] = true
	}
	for _, s := range in {
		if n := norm.NFC.String(s); !seen[n] {
			seen[n] = true
			in = append(in, n)
		}
	}
	return in
}

func tokenizerStrings(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../tokenizer/testdata/qwen3_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var g struct{ Text string }
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g.Text)
	}
	return out
}

// llamaTokenDifference says why llama.cpp's encoding of s (ll, made from
// the fixture line of NFC(s)) may differ from whale's (wh), having checked
// that it differs in that way only, or "" where it may not. Each reason is llama.cpp's, not the file's: llama.cpp's own
// converter writes the same vocabulary, and its loader overrides what a
// file says for these tokens.
//
//   - llama.cpp's BPE applies no normalizer (GGUF has no key for one), and
//     Qwen's tokenizer.json asks for NFC, which Hugging Face and whale apply
//     before splitting: llama.cpp encodes a decomposed é as e + U+0301. The
//     test compares whale's ids for s with llama.cpp's for NFC(s), and
//     checks apart that llama.cpp kept s's bytes as they were.
//   - <|fim_prefix|>, <|fim_middle|>, <|fim_suffix|>, <|fim_pad|>,
//     <|repo_name|> and <|file_sep|> are added tokens that Qwen marks not
//     special, so Hugging Face and whale's Encode match them in any text;
//     llama.cpp makes every added <|…|> token a control token (its
//     converter's does_token_look_special, and its loader's FIM list), and
//     control tokens are plain text without parse_special.
//   - "</s>" is an ordinary token of Qwen's vocabulary that byte-level
//     splitting never produces whole; llama.cpp's loader makes it a
//     control end-of-generation token, which parse_special then matches.
func llamaTokenDifference(tok *tokenizer.BPE, s string, special bool, wh, ll []int32) string {
	const endS = 128247 // "</s>"
	n := norm.NFC.String(s)
	if !special && slices.ContainsFunc(wh, func(id int32) bool { return id >= 151659 && id <= 151664 }) && tok.Decode(ll) == n {
		return "<|…|> added tokens are control tokens to llama.cpp"
	}
	if special && strings.Contains(n, "</s>") {
		// llama.cpp splits the text at its control tokens before BPE, as
		// EncodeSpecial does at Qwen's, so this is its encoding exactly.
		var want []int32
		for i, part := range strings.Split(n, "</s>") {
			if i > 0 {
				want = append(want, endS)
			}
			want = append(want, tok.EncodeSpecial(part)...)
		}
		if slices.Equal(ll, want) {
			return "llama.cpp's loader makes </s> a control token"
		}
	}
	return ""
}

// TestQwenTokenizerMatchesLlamaCppOnItsGGUF: llama.cpp, reading the
// vocabulary whale exports, encodes each string as whale's tokenizer does:
// with control tokens read as text (Encode, llama_tokenize without
// parse_special) and matched (EncodeSpecial, with it), apart from the
// differences llamaTokenDifference names, each of which is checked to
// happen where it says.
func TestQwenTokenizerMatchesLlamaCppOnItsGGUF(t *testing.T) {
	f := readLlamaFixture(t)
	tok := qwenTokenizer(t)
	b, err := EncodeGGUF(llamaTokenizerModel(t), tok, F32, "qwen3-tokenizer")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != f.Tokens.SHA256 {
		t.Fatalf("the GGUF file is not the one llama.cpp read (sha256 %x, fixture %s): the exporter or the random model changed. "+
			"If that was meant, rebuild llama.cpp and rerun %s/regen.sh to remake the fixture", sum, f.Tokens.SHA256, llamaDir)
	}
	type line struct{ plain, special []int32 }
	var texts []string
	llama := map[string]line{}
	zb, err := os.ReadFile(filepath.Join(llamaDir, f.Tokens.File))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zb))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	for n := 1; ; n++ {
		var l struct {
			Hex            string
			Plain, Special []int32
		}
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s line %d: %v", f.Tokens.File, n, err)
		}
		raw, err := hex.DecodeString(l.Hex)
		if err != nil {
			t.Fatalf("%s line %d: %v", f.Tokens.File, n, err)
		}
		texts = append(texts, string(raw))
		llama[string(raw)] = line{l.Plain, l.Special}
	}
	if want := llamaTokenizerInputs(t); !slices.Equal(texts, want) {
		t.Fatalf("%s holds %d strings, not the test's %d: regenerate it with %s/regen.sh", f.Tokens.File, len(texts), len(want), llamaDir)
	}
	why := map[string]int{}
	for _, s := range texts {
		ll, ok := llama[norm.NFC.String(s)]
		if !ok {
			t.Fatalf("%q: the fixture has no encoding of its NFC form", s)
		}
		if !norm.NFC.IsNormalString(s) {
			why["llama.cpp does not normalize to NFC"]++
			if got := tok.Decode(llama[s].plain); got != s {
				t.Errorf("%q: llama.cpp's ids %v read back as %q: it changed the text", s, llama[s].plain, got)
			}
		}
		for _, c := range []struct {
			special bool
			wh, ll  []int32
		}{{false, tok.Encode(s), ll.plain}, {true, tok.EncodeSpecial(s), ll.special}} {
			if slices.Equal(c.wh, c.ll) {
				continue
			}
			if r := llamaTokenDifference(tok, s, c.special, c.wh, c.ll); r != "" {
				why[r]++
				continue
			}
			t.Errorf("%q (parse_special %v): whale %v, llama.cpp %v", s, c.special, c.wh, c.ll)
		}
	}
	t.Logf("%d strings; known differences: %v", len(texts), why)
}
