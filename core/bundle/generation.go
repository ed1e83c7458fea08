package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Generation is what whale reads of a generation_config.json. EOS ends
// a completion (besides the chat template's end of turn). The sampling
// defaults are kept and written back on export but not applied: a run's
// or an evaluation's sampling settings come from its own configuration
// (the paper samples at temperature 1). Other fields are ignored.
type Generation struct {
	EOS          []int32  `json:"eos_token_id,omitempty"`
	BOS          *int32   `json:"bos_token_id,omitempty"`
	Pad          *int32   `json:"pad_token_id,omitempty"`
	DoSample     *bool    `json:"do_sample,omitempty"`
	Temperature  *float64 `json:"temperature,omitempty"`
	TopK         *int     `json:"top_k,omitempty"`
	TopP         *float64 `json:"top_p,omitempty"`
	MaxNewTokens *int     `json:"max_new_tokens,omitempty"`
}

// ParseGeneration reads a generation_config.json (name is used in
// errors); eos_token_id may be one id or a list, as Hugging Face writes
// either.
func ParseGeneration(data []byte, name string) (Generation, error) {
	var raw struct {
		Generation
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Generation{}, fmt.Errorf("bundle: %s: %w", name, err)
	}
	g := raw.Generation
	g.EOS = nil
	if e := bytes.TrimSpace(raw.EOS); len(e) > 0 && string(e) != "null" {
		if e[0] == '[' {
			if err := json.Unmarshal(e, &g.EOS); err != nil {
				return Generation{}, fmt.Errorf("bundle: %s: field eos_token_id: want an id or a list of ids: %w", name, err)
			}
		} else {
			var id int32
			if err := json.Unmarshal(e, &id); err != nil {
				return Generation{}, fmt.Errorf("bundle: %s: field eos_token_id: want an id or a list of ids: %w", name, err)
			}
			g.EOS = []int32{id}
		}
	}
	bad := func(field string, v any) error {
		return fmt.Errorf("bundle: %s: field %s: %v is out of range", name, field, v)
	}
	switch {
	case g.Temperature != nil && !(*g.Temperature >= 0):
		return Generation{}, bad("temperature", *g.Temperature)
	case g.TopK != nil && *g.TopK < 0:
		return Generation{}, bad("top_k", *g.TopK)
	case g.TopP != nil && !(*g.TopP > 0 && *g.TopP <= 1):
		return Generation{}, bad("top_p", *g.TopP)
	case g.MaxNewTokens != nil && *g.MaxNewTokens < 1:
		return Generation{}, bad("max_new_tokens", *g.MaxNewTokens)
	}
	return g, nil
}

// IsZero reports whether g holds nothing (no generation_config.json).
func (g Generation) IsZero() bool {
	return len(g.EOS) == 0 && g.BOS == nil && g.Pad == nil && g.DoSample == nil && g.Temperature == nil &&
		g.TopK == nil && g.TopP == nil && g.MaxNewTokens == nil
}

// JSON is g as a generation_config.json.
func (g Generation) JSON() []byte {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		panic("bundle: encode generation config: " + err.Error()) // plain fields: cannot fail
	}
	return append(b, '\n')
}
