package attach

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// maxSocketPath is below the shortest limit of a unix socket's address
// (104 bytes on the BSDs and macOS, 108 on Linux).
const maxSocketPath = 100

// SocketPath is where the owner of the workspace at db serves it:
// <db>.sock beside the database, or — when that absolute path is too long
// for a socket address — a file in the temporary directory named by the
// sha256 of the database's absolute path, so every process finds the same
// one.
func SocketPath(db string) (string, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return "", fmt.Errorf("attach: socket of %s: %w", db, err)
	}
	if p := abs + ".sock"; len(p) <= maxSocketPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "whale-"+hex.EncodeToString(sum[:8])+".sock"), nil
}
