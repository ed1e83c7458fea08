package engine

import "whale/harnesses"

// checkCandidate is the Searcher's Check hook: a proposal that does not
// load (a SEARCH_SPACE choice that breaks the contract, top-level code
// that runs out of steps under the drawn values) is refused and recorded
// by the search, which goes on; it never ends the run. Nothing is stored
// for it but its archive entry.
func (e *Engine) checkCandidate(src string) error {
	if _, ok := e.harnessCache[harnesses.Hash(src)]; ok {
		return nil
	}
	_, err := harnesses.LoadDrawn(harnesses.Hash(src)[:12]+".star", src, harnesses.EnvOf(e.env.Domain))
	return err
}
