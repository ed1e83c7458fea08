// logits: evaluate token ids with llama.cpp and write every position's
// logits, for whale's GGUF parity fixture (regen.sh builds and runs it).
//
//   logits MODEL.gguf OUT.f32 ID...
//
// The ids go in as one batch at positions 0..T-1 of one sequence, with
// logits asked for at every position; OUT.f32 is T×V little-endian
// float32, row by row. Only llama.h's public API is used.
//
// Settings chosen so that the numbers are llama.cpp's float32 forward and
// nothing else: one thread (a fixed summation order), the KV cache in F32
// (its default F16 would round K and V), flash attention off (its CPU
// kernel accumulates V in F16), no repacked weight buffers.

#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static void quiet(enum ggml_log_level level, const char *text, void *) {
    if (level >= GGML_LOG_LEVEL_WARN) {
        fputs(text, stderr);
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf OUT.f32 ID...\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> ids;
    for (int i = 3; i < argc; i++) {
        ids.push_back((llama_token) atoi(argv[i]));
    }
    const int n = (int) ids.size();

    llama_log_set(quiet, nullptr);
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_mmap = false;
    mp.use_extra_bufts = false;
    mp.check_tensors = true;
    mp.progress_callback = [](float, void *) { return true; };
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (model == nullptr) {
        fprintf(stderr, "logits: cannot load %s\n", argv[1]);
        return 1;
    }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_ubatch = 256;
    cp.n_seq_max = 1;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.no_perf = true;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr || n > (int) cp.n_batch) {
        fprintf(stderr, "logits: cannot make a context for %d tokens\n", n);
        return 1;
    }

    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (int rc = llama_decode(ctx, batch); rc != 0) {
        fprintf(stderr, "logits: llama_decode returned %d\n", rc);
        return 1;
    }

    const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE *out = fopen(argv[2], "wb");
    if (out == nullptr) {
        fprintf(stderr, "logits: cannot create %s\n", argv[2]);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        const float *row = llama_get_logits_ith(ctx, i);
        if (row == nullptr || fwrite(row, sizeof(float), vocab, out) != (size_t) vocab) {
            fprintf(stderr, "logits: no logits at position %d\n", i);
            return 1;
        }
    }
    if (fclose(out) != 0) {
        fprintf(stderr, "logits: cannot write %s\n", argv[2]);
        return 1;
    }
    fprintf(stderr, "logits: %s: %d positions × %d tokens\n", argv[1], n, vocab);

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
