package tokenizer

import "fmt"

// EncodeChat renders messages with the ChatML template that Qwen models use:
//
//	<|im_start|>{role}\n{content}<|im_end|>\n
//
// and, when addGenerationPrompt is set, a trailing "<|im_start|>assistant\n"
// so that the model's next tokens are the assistant's reply, ended by
// <|im_end|>. Role markers are special ids; content is encoded with Encode,
// so it cannot forge them.
func EncodeChat(t Tokenizer, msgs []Message, addGenerationPrompt bool) ([]int32, error) {
	start, ok1 := t.Special(ImStart)
	end, ok2 := t.Special(ImEnd)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("tokenizer: chat template needs %s and %s special tokens", ImStart, ImEnd)
	}
	nl := t.Encode("\n")
	var out []int32
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return nil, fmt.Errorf("tokenizer: message %d: unknown role %q (want system, user, assistant or tool)", i, m.Role)
		}
		// Role, newline and content are one piece of text, as Hugging Face's
		// template renders them: BPE may merge across the newline ("\n\n" is
		// one Qwen token when the content starts with a newline).
		out = append(out, start)
		out = append(out, t.Encode(m.Role+"\n"+m.Content)...)
		out = append(out, end)
		out = append(out, nl...)
	}
	if addGenerationPrompt {
		out = append(out, start)
		out = append(out, t.Encode("assistant\n")...)
	}
	return out, nil
}
