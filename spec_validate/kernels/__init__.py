"""Array kernels: numpy only, each a summarize (per block) + associative combine pair, registered by name with
`registry.kernel` beside its code (look them up with `registry.get`)."""
