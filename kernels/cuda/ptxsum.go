package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SourceSum returns the hex sha256 of the kernel sources in dir: every file
// whose name ends in .cu or .cuh, in byte order of the names, each hashed
// as "<name>\n<size in bytes>\n<contents>". gen.sh computes the same sum
// in shell and records it on whale.ptx's first line, so a test can tell
// when the embedded PTX is older than its sources.
func SourceSum(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("cuda: read kernel sources: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".cu") || strings.HasSuffix(n, ".cuh")) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", fmt.Errorf("cuda: read kernel source: %w", err)
		}
		h.Write([]byte(n + "\n" + strconv.Itoa(len(b)) + "\n"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ptxSumPrefix starts whale.ptx's first line, followed by the SourceSum
// of the sources it was built from.
const ptxSumPrefix = "// whale-src-sha256: "

// RecordedSum returns the source sum recorded on the first line of a PTX
// file written by gen.sh.
func RecordedSum(ptx string) (string, error) {
	line, _, _ := strings.Cut(ptx, "\n")
	sum, ok := strings.CutPrefix(line, ptxSumPrefix)
	if !ok {
		return "", fmt.Errorf("cuda: PTX does not start with %q: regenerate it with kernels/cuda/gen.sh", ptxSumPrefix)
	}
	return strings.TrimSpace(sum), nil
}
