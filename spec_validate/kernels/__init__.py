"""Array kernels: numpy only, each a summarize (per block) + associative combine pair."""

from spec_validate.kernels import (
    bounds,
    chunk_decoding,
    digest,
    duplicates,
    endpoints,
    json_text,
    monotonic,
    reference_objects,
    references,
    shard_index,
)

KERNELS = {
    "find_decreases": monotonic,
    "count_outside": bounds,
    "first_last": endpoints,
    "chunk_problems": chunk_decoding,
    "invalid_json": json_text,
    "reference_elements": references,
    "reference_objects": reference_objects,
    "cell_digest": digest,
    "find_duplicates": duplicates,
    "shard_index_problems": shard_index,
}
