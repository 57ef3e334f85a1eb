"""Array kernels: numpy only, each a summarize (per block) + associative combine pair."""

from validator.kernels import bounds, chunk_decoding, endpoints, json_text, monotonic, references, shard_index

KERNELS = {
    "find_decreases": monotonic,
    "count_outside": bounds,
    "first_last": endpoints,
    "chunk_problems": chunk_decoding,
    "invalid_json": json_text,
    "reference_elements": references,
    "shard_index_problems": shard_index,
}
