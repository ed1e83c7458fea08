// tokenize: encode strings with a GGUF file's vocabulary in llama.cpp, for
// whale's tokenizer parity fixture (regen.sh builds and runs it).
//
//   tokenize MODEL.gguf < STRINGS.hex > TOKENS.jsonl
//
// Each input line is one string, hex-encoded (any bytes, newlines
// included); each output line is {"hex": the same, "plain": ids,
// "special": ids}: llama_tokenize without BOS/EOS, first with control
// tokens read as text (parse_special false), then with them matched
// (parse_special true). Only llama.h's public API is used.

#include "llama.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level level, const char *text, void *) {
    if (level >= GGML_LOG_LEVEL_WARN) {
        fputs(text, stderr);
    }
}

static bool unhex(const std::string &h, std::string &out) {
    auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (h.size() % 2 != 0) return false;
    out.clear();
    for (size_t i = 0; i < h.size(); i += 2) {
        int hi = nib(h[i]), lo = nib(h[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out.push_back((char) (hi * 16 + lo));
    }
    return true;
}

static bool encode(const llama_vocab *vocab, const std::string &s, bool special, std::string &json) {
    std::vector<llama_token> ids(s.size() + 16);
    int n = llama_tokenize(vocab, s.data(), (int32_t) s.size(), ids.data(), (int32_t) ids.size(), false, special);
    if (n < 0) {
        return false;
    }
    json += "[";
    for (int i = 0; i < n; i++) {
        if (i > 0) json += ",";
        json += std::to_string(ids[i]);
    }
    json += "]";
    return true;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.gguf < STRINGS.hex > TOKENS.jsonl\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (model == nullptr) {
        fprintf(stderr, "tokenize: cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab *vocab = llama_model_get_vocab(model);

    std::string line, text;
    for (int no = 1; std::getline(std::cin, line); no++) {
        if (!unhex(line, text)) {
            fprintf(stderr, "tokenize: line %d is not lower-case hex\n", no);
            return 1;
        }
        std::string json = "{\"hex\":\"" + line + "\",\"plain\":";
        if (!encode(vocab, text, false, json)) {
            fprintf(stderr, "tokenize: line %d: llama_tokenize failed\n", no);
            return 1;
        }
        json += ",\"special\":";
        if (!encode(vocab, text, true, json)) {
            fprintf(stderr, "tokenize: line %d: llama_tokenize failed\n", no);
            return 1;
        }
        json += "}\n";
        fputs(json.c_str(), stdout);
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
