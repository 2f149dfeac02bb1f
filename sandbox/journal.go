package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"sync"
	"time"
)

// The data file is a snapshot of the whole state (the JSON document of
// encodeState) followed by a journal: one line per write, appended and
// synced before the write is answered. A write costs the size of what it
// changed, not of the whole state (rewriting the whole file per write made
// a 100,000-item import slow down as it went). Writes that are answered at
// the same time share one append and one sync (group commit).
//
// A journal line is "J <crc32 of the JSON, hex> <JSON of a journalEntry>".
// Each entry sets what it names to its new value (whole records, the id
// sequences, the token digests), so replaying it twice ends the same way.
// When the journal outgrows the snapshot (and compactMin), a new snapshot
// of the whole state replaces the file atomically (writeFileAtomic), and
// the journal starts empty. A kill -9 can leave at most a torn last line,
// of a write that was never answered: it is dropped at load. A damaged
// line anywhere else is refused, like a damaged snapshot.

// compactMin is the journal size below which the file is never compacted.
const compactMin = 64 << 20

type journalEntry struct {
	NextID map[string]int64 `json:"next_id"`
	Put    []journalRecord  `json:"put,omitempty"`
	Del    []journalRef     `json:"del,omitempty"`
	// Tokens, when present, replaces the token digests.
	Tokens []diskToken `json:"tokens,omitempty"`
}

type journalRecord struct {
	Coll string `json:"coll"`
	diskRecord
}

type journalRef struct {
	Coll string `json:"coll"`
	ID   int64  `json:"id"`
}

// ref names a record for the dirty set.
type ref struct {
	coll string
	id   int64
}

// touch marks a record changed (created, updated or deleted) since the
// last commit; the next commit journals its current state.
func (st *state) touch(coll string, id int64) {
	if st.dirty == nil {
		st.dirty = map[ref]bool{}
	}
	st.dirty[ref{coll, id}] = true
	st.indexTouched(coll, id)
}

// journal appends entries to the data file.
type journal struct {
	path       string
	compactMin int64 // compactMin, or less in tests

	mu       sync.Mutex // guards pending, spare, appended, size, broken
	pending  []byte
	spare    []byte // the buffer of the last flush, for the next pending
	appended uint64 // entries handed to append so far
	size     int64  // bytes of journal in the file, pending included
	snapshot int64  // bytes of the snapshot
	broken   error  // a failed write: later ones would leave a gap

	flushMu sync.Mutex // one flush at a time
	durable uint64     // entries on disk; guarded by flushMu
}

// entryLocked journals what changed in st since the last commit: the
// dirty records and, if they changed, the tokens. Server.mu must be held,
// so entries are in the order the changes were applied. Nothing is on
// disk until sync.
func (s *Server) entryLocked() error {
	st := s.st
	if s.jr == nil {
		st.dirty, st.tokensDirty = nil, false
		return nil
	}
	b, err := appendEntry(s.entryBuf[:0], st)
	if err != nil {
		return err
	}
	s.entryBuf = b
	st.dirty, st.tokensDirty = nil, false
	return s.jr.append(b)
}

// appendLine appends the journal line of entry b to dst.
func appendLine(dst, b []byte) []byte {
	dst = append(dst, "J "...)
	dst = strconv.AppendUint(dst, uint64(crc32.ChecksumIEEE(b)), 16)
	dst = append(dst, ' ')
	dst = append(dst, b...)
	return append(dst, '\n')
}

func (j *journal) append(entry []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return j.broken
	}
	n := len(j.pending)
	j.pending = appendLine(j.pending, entry)
	j.appended++
	j.size += int64(len(j.pending) - n)
	return nil
}

// sync returns once every entry appended before the call is on disk.
// Callers that arrive while a flush is on disk find their entries flushed
// by the next one, which writes all that is pending in one go.
func (j *journal) sync() error {
	j.mu.Lock()
	want := j.appended
	j.mu.Unlock()
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	if j.durable >= want {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.broken
	}
	j.mu.Lock()
	buf, upto := j.pending, j.appended
	// The next entries go to the last flush's buffer: growing a fresh one
	// per flush was about a sixth of what the sandbox allocated per write.
	j.pending, j.spare = j.spare[:0], nil
	j.mu.Unlock()
	if err := appendSync(j.path, buf); err != nil {
		j.mu.Lock()
		j.broken = fmt.Errorf("append to %s: %w", j.path, err)
		j.mu.Unlock()
		return j.broken
	}
	j.mu.Lock()
	j.spare = buf[:0]
	j.mu.Unlock()
	j.durable = upto
	return nil
}

// appendSync appends b to path and syncs it. The file is opened per flush
// so that a data file that went away is an error, not a write to a file
// nobody can see.
func appendSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncWrites makes the writes answered so far durable, and compacts the
// file when the journal has grown past the snapshot.
func (s *Server) syncWrites() error {
	if s.jr == nil {
		return nil
	}
	if err := s.jr.sync(); err != nil {
		return err
	}
	s.jr.mu.Lock()
	grown := s.jr.size > s.jr.compactMin && s.jr.size > s.jr.snapshot
	s.jr.mu.Unlock()
	if !grown {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked()
}

// snapshotLocked replaces the data file with a snapshot of the state and
// an empty journal. s.mu must be held.
func (s *Server) snapshotLocked() error {
	if s.opts.DataFile == "" {
		return nil
	}
	s.st.dirty, s.st.tokensDirty = nil, false
	b, err := encodeState(s.st)
	if err != nil {
		return err
	}
	j := s.jr
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	if err := writeFileAtomic(s.opts.DataFile, b); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	// Everything pending is in the snapshot (s.mu is held: nothing was
	// applied without being in s.st).
	j.mu.Lock()
	j.pending, j.size, j.snapshot, j.broken = nil, 0, int64(len(b)), nil
	j.durable = j.appended
	j.mu.Unlock()
	return nil
}

// replayJournal applies the journal lines in b (what follows the snapshot
// in the data file) to st and returns how many bytes of b are sound: a
// torn last line, of a write that was never answered, is left out.
func replayJournal(b []byte, st *state, schemas map[string]*schema) (int, error) {
	good := 0
	for len(b) > good {
		rest := b[good:]
		// The snapshot's own trailing newline, and blank lines, are
		// skipped.
		if rest[0] == '\n' {
			good++
			continue
		}
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return good, nil // torn: the write was cut before its newline
		}
		last := len(bytes.TrimSpace(rest[nl+1:])) == 0
		entry, err := parseJournalLine(rest[:nl])
		if err == nil {
			err = applyEntry(entry, st, schemas)
		}
		if err != nil {
			if last {
				return good, nil // torn: cut inside the last line
			}
			return 0, fmt.Errorf("journal line at byte %d: %w", good, err)
		}
		good += nl + 1
	}
	return good, nil
}

func parseJournalLine(line []byte) (journalEntry, error) {
	var e journalEntry
	rest, ok := bytes.CutPrefix(line, []byte("J "))
	sum, body, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || !ok2 {
		return e, errors.New("not a journal line")
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil || uint32(want) != crc32.ChecksumIEEE(body) {
		return e, errors.New("checksum mismatch")
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return e, fmt.Errorf("decode: %w", err)
	}
	return e, nil
}

func applyEntry(e journalEntry, st *state, schemas map[string]*schema) error {
	st.dropIndexes()
	for seq := range st.next {
		n, ok := e.NextID[seq]
		if !ok || n < 1 {
			return fmt.Errorf("next_id of %s: missing or below 1", seq)
		}
		st.next[seq] = n
	}
	for _, jr := range e.Put {
		coll, ok := st.colls[jr.Coll]
		if !ok {
			return fmt.Errorf("unknown collection %q", jr.Coll)
		}
		r, err := decodeRecord(schemas, jr.Coll, jr.diskRecord, st.next)
		if err != nil {
			return err
		}
		coll[r.ID] = r
	}
	for _, d := range e.Del {
		coll, ok := st.colls[d.Coll]
		if !ok {
			return fmt.Errorf("unknown collection %q", d.Coll)
		}
		delete(coll, d.ID)
	}
	if e.Tokens != nil {
		st.tokens = map[string]time.Time{}
		for _, t := range e.Tokens {
			st.tokens[t.SHA256] = t.Expires
		}
	}
	return nil
}
