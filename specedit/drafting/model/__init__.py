"""The drafters that ask a small draft model (the hybrid, with AdaPLD's copies beside it), and
its parts: the draft model's own cache, its active vocabulary, online alignment."""
