// Package clusterkeytest provides cluster keys for tests: fixed, so that
// every node a test starts agrees without passing the key around.
package clusterkeytest

import (
	"bytes"

	"github.com/harvestd/harvest/internal/clusterkey"
)

// Key returns the shared test cluster key.
func Key() clusterkey.Key { return must(bytes.Repeat([]byte("harvest test cluster key "), 2)) }

// Other returns a second test key, different from Key: a node holding it
// is not a member of a cluster keyed with Key.
func Other() clusterkey.Key { return must(bytes.Repeat([]byte("some other cluster's key "), 2)) }

func must(raw []byte) clusterkey.Key {
	k, err := clusterkey.FromBytes(raw)
	if err != nil {
		panic(err)
	}
	return k
}
