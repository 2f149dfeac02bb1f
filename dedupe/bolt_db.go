package dedupe

import bolt "go.etcd.io/bbolt"

// DB is the open bbolt file, for data kept beside the store in the same
// file (the console's history, in buckets of its own). Only one process
// can open the file, so whoever keeps such data must share this handle.
func (b *Bolt) DB() *bolt.DB { return b.db }
