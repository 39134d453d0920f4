// Package lmdb reads LMDB databases (the key-value store Caffe and Caffe2 keep their
// data sets in) read-only, through github.com/PowerDNS/lmdb-go, which bundles
// liblmdb's C sources: godali's readers keep their cgo here.
package lmdb

import (
	"errors"
	"fmt"
	"os"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// DB is a database opened read-only, safe for concurrent Gets.
type DB struct {
	env  *mdb.Env
	dbi  mdb.DBI
	path string
}

// Open opens the LMDB environment at path (a directory holding data.mdb, or the data
// file itself) read-only and without the lock file (MDB_RDONLY|MDB_NOLOCK|MDB_NOTLS):
// a data set being read is not written, and the directory may be read-only.
func Open(path string) (*DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	flags := uint(mdb.Readonly | mdb.NoLock | mdb.NoReadahead)
	if !st.IsDir() {
		flags |= mdb.NoSubdir
	}
	env, err := mdb.NewEnv()
	if err != nil {
		return nil, err
	}
	if err := env.Open(path, flags, 0o644); err != nil {
		env.Close()
		return nil, fmt.Errorf("lmdb %s: %w", path, err)
	}
	db := &DB{env: env, path: path}
	err = env.View(func(txn *mdb.Txn) (err error) {
		db.dbi, err = txn.OpenRoot(0)
		return err
	})
	if err != nil {
		env.Close()
		return nil, fmt.Errorf("lmdb %s: %w", path, err)
	}
	return db, nil
}

// Keys returns every key, in the database's (sorted) order.
func (db *DB) Keys() ([][]byte, error) {
	var keys [][]byte
	err := db.env.View(func(txn *mdb.Txn) error {
		cur, err := txn.OpenCursor(db.dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for {
			k, _, err := cur.Get(nil, nil, mdb.Next)
			if mdb.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			keys = append(keys, k) // copied: the transaction is not in RawRead mode
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lmdb %s: listing keys: %w", db.path, err)
	}
	return keys, nil
}

// ErrNotFound is returned by Get for a key the database does not hold.
var ErrNotFound = errors.New("key not found")

// Get copies the value of key into buf (grown when too small) and returns it. A value
// larger than max bytes (max > 0) is refused before it is copied.
func (db *DB) Get(key, buf []byte, max int64) ([]byte, error) {
	err := db.env.View(func(txn *mdb.Txn) error {
		txn.RawRead = true // v points into the map: copy it before the txn ends
		v, err := txn.Get(db.dbi, key)
		if mdb.IsNotFound(err) {
			return fmt.Errorf("key %q: %w", key, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if max > 0 && int64(len(v)) > max {
			return fmt.Errorf("key %q: value of %d bytes, more than max_file_bytes=%d", key, len(v), max)
		}
		if cap(buf) < len(v) {
			buf = make([]byte, len(v))
		}
		buf = buf[:len(v)]
		copy(buf, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// Close releases the environment.
func (db *DB) Close() {
	if db.env != nil {
		db.env.Close()
		db.env = nil
	}
}
