package ckpt

// Metadata keys whale writes into a model's safetensors header: every key,
// the base model's provenance included, lives here, so that reading a model
// file (core/bundle, core/basemodel) never links the trainer that writes
// the provenance (core/pretrain).
const (
	MetaConfig = "config" // the model's HF config.json, as JSON
	MetaFormat = "format" // "pt", which HF loaders expect
	// MetaTokenizer names the model's tokenizer: "bytes" (tokenizer.Bytes,
	// also when absent) or "sha256:HEX", the hash of the tokenizer.json
	// that must lie beside the file.
	MetaTokenizer = "whale.tokenizer"
)

// Metadata keys of a model written by `whale pretrain` (core/pretrain): its
// provenance, which core/basemodel reads back as Info.
const (
	MetaSeed       = "whale.seed"         // the initialisation seed
	MetaDataSeed   = "whale.data_seed"    // the corpus seed
	MetaSteps      = "whale.steps"        // optimizer steps taken
	MetaTarget     = "whale.target_steps" // steps the run was asked for
	MetaCorpusHash = "whale.corpus_hash"  // sha256 of the training corpus
	MetaTrain      = "whale.train"        // the training options, as JSON
	MetaLoss       = "whale.loss"         // the last training loss
)
