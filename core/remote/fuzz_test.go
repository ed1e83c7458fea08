package remote

import (
	"testing"
	"time"
)

// The reply decoder reads whatever a server sends: it never panics, and
// what it accepts has exactly the choices asked for.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "stop", "logprobs": {"content": [{"logprob": -1}]}}]}`), uint8(1))
	f.Add([]byte(`{"choices": [{"index": 1, "message": {"content": null}, "finish_reason": "length"}, {"index": 0, "message": {}, "finish_reason": "stop"}]}`), uint8(2))
	f.Add([]byte(`{"error": {"message": "boom"}}`), uint8(1))
	f.Add([]byte(`[1, 2`), uint8(3))
	f.Add([]byte(`{"model": "a", "prompt_token_ids": [1], "choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "stop", "token_ids": [5, 2], "logprobs": {"content": [{"token": "token_id:5", "logprob": -1}, {"token": "token_id:2", "logprob": 0}]}}]}`), uint8(128))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		want := int(n%4) + 1
		comps, err := decode(b, want, n >= 128)
		if err == nil && len(comps) != want {
			t.Fatalf("accepted %d completions for n=%d", len(comps), want)
		}
		for _, c := range comps {
			for _, id := range c.Tokens {
				if id < 0 {
					t.Fatalf("accepted token id %d", id)
				}
			}
		}
		_ = serverMessage(b)
		_, _ = retryAfter(string(b), time.Unix(0, 0))
	})
}

func FuzzDecodeCompletion(f *testing.F) {
	f.Add([]byte(`{"model": "a", "choices": [{"index": 0, "text": "x", "finish_reason": "stop", "token_ids": [5, 2], "prompt_token_ids": [1], "logprobs": {"tokens": ["token_id:5", "token_id:2"], "token_logprobs": [-1, null]}}]}`))
	f.Add([]byte(`{"choices": [{"index": 0, "text": "x", "finish_reason": "length", "logprobs": {"tokens": ["x"], "token_logprobs": [-1]}}]}`))
	f.Add([]byte(`{"choices": [{"index": 0, "text": "x", "finish_reason": "stop", "token_ids": [-3]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		reps, err := decodeCompletion(b)
		if err != nil {
			return
		}
		if len(reps) != 1 {
			t.Fatalf("accepted %d replies", len(reps))
		}
		for _, id := range reps[0].Tokens {
			if id < 0 {
				t.Fatalf("accepted token id %d", id)
			}
		}
	})
}
