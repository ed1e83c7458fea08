// Package chess is whale's chess-puzzle domain: puzzles generated from
// seeded self-play (the built-in ladder: mates in 1, hanging pieces to
// take, mates in 2; or mates alone), an importer of lichess puzzle CSV
// files, and the multi-turn episode that verifies a solver's moves.
//
// The verifier accepts every move after which a forced mate within the
// remaining moves still exists, and the defender answers with the reply that
// delays mate longest, so an alternative mate scores exactly like the listed
// one. Rules come from this package's own move generator (mailbox, copy-make),
// written for the speed mate search needs and cross-checked by perft against
// github.com/corentings/chess/v2 in the tests.
//
// Every search is bounded by a node count, never by wall-clock time, so that
// generation and verification give the same answer on any machine under any
// load. The package must never offer a solver a search, an engine or an
// answer: observations show the board, the last move and the legal moves in
// SAN (checks marked "+", a mate never marked "#": a mate reads as a check)
// and UCI, and the one tool ("attacks") reports which pieces stand attacked
// and defended, facts read off the board without search. Puzzles carry
// themes (lichess's, or "mate mateInN" for generated ones) and an import can
// keep only some (data.ImportOptions.Themes).
package chess
