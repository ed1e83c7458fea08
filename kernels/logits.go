package kernels

// LogitsBudgeter is implemented by a backend that wants the output head
// to materialise more (or fewer) logits at once than the model's default
// budget: a GPU with memory to spare runs a training step's head in one
// or two large products instead of many small ones. LogitsBudget returns
// the number of float32 logits (rows·vocabulary) one head chunk may hold;
// 0 leaves the default.
type LogitsBudgeter interface {
	LogitsBudget() int
}
