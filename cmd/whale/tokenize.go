package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"whale/core/tokenizer"
)

func init() { register(newTokenizeCmd) }

func newTokenizeCmd() *cobra.Command {
	var (
		path           string
		decode, asJSON bool
	)
	c := &cobra.Command{
		Use:   "tokenize --tokenizer FILE|DIR [--decode] [--json]",
		Short: "Encode lines of stdin to token ids, or decode id arrays to text",
		Long: `tokenize reads stdin one line at a time. It encodes each line (without its
newline; with --json, each line is one JSON string) and prints one JSON array
of ids per line. Added tokens in the text, <|im_start|> included, become their
ids, as Hugging Face's tokenizer.encode does. With --decode it reads one JSON
array of ids per line and prints the text (with --json, as one JSON string
per line, so that text holding newlines stays on one line).

--tokenizer names a Hugging Face tokenizer.json (.gz accepted) or a model
directory holding one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return usageError{errors.New("--tokenizer FILE|DIR is required")}
			}
			tok, err := tokenizer.Load(path)
			if err != nil {
				return err
			}
			if decode {
				return decodeLines(cmd.InOrStdin(), cmd.OutOrStdout(), tok, asJSON)
			}
			return encodeLines(cmd.InOrStdin(), cmd.OutOrStdout(), tok, asJSON)
		},
	}
	c.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json file or a directory that holds one")
	c.Flags().BoolVar(&decode, "decode", false, "read JSON arrays of ids and print text")
	jsonFlag(c.Flags(), &asJSON, "lines of text are JSON strings (input when encoding, output when decoding)")
	return c
}

// forEachLine calls f with each line of r (without its line ending "\n")
// and its 1-based number. A last line without "\n" counts; an empty input
// has no lines.
func forEachLine(r io.Reader, f func(n int, line []byte) error) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		} else if err == io.EOF && len(line) == 0 {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("stdin: line %d: %w", n, err)
		}
		if ferr := f(n, line); ferr != nil {
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

func encodeLines(r io.Reader, w io.Writer, tok *tokenizer.BPE, asJSON bool) error {
	out := bufio.NewWriter(w)
	enc := json.NewEncoder(out)
	err := forEachLine(r, func(n int, line []byte) error {
		text := string(line)
		if asJSON {
			var s *string
			if err := json.Unmarshal(line, &s); err != nil || s == nil {
				if err == nil {
					err = errors.New("got null")
				}
				return fmt.Errorf("stdin: line %d: want one JSON string: %w", n, err)
			}
			text = *s
		}
		ids := tok.EncodeSpecial(text)
		if ids == nil {
			ids = []int32{}
		}
		return enc.Encode(ids)
	})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

func decodeLines(r io.Reader, w io.Writer, tok *tokenizer.BPE, asJSON bool) error {
	out := bufio.NewWriter(w)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false) // keep "<|im_end|>" readable
	err := forEachLine(r, func(n int, line []byte) error {
		var ids []int32
		if err := json.Unmarshal(line, &ids); err != nil || ids == nil {
			if err == nil {
				err = errors.New("got null")
			}
			return fmt.Errorf("stdin: line %d: want one JSON array of token ids: %w", n, err)
		}
		for i, id := range ids {
			if _, ok := tok.Token(id); !ok {
				return fmt.Errorf("stdin: line %d: id %d (element %d) is not in the vocabulary (0 to %d)", n, id, i, tok.VocabSize()-1)
			}
		}
		text := tok.Decode(ids)
		if asJSON {
			return enc.Encode(text) // invalid UTF-8 becomes U+FFFD here
		}
		out.WriteString(text)
		return out.WriteByte('\n')
	})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}
