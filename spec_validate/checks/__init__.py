"""Check primitives: small registered functions that rules compose (see `registry` to look them up)."""
