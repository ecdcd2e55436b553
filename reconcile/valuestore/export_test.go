package valuestore

// HoldKey makes k hold key as if it had read it more than a recheck
// ago: its next Get reads the Secret again.
func HoldKey(k *Keys, key Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.key = &key
}
