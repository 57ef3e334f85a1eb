"""Array kernels: numpy only, each a summarize (per block) + associative combine pair."""

from validator.kernels import bounds, endpoints, monotonic

KERNELS = {"find_decreases": monotonic, "count_outside": bounds, "first_last": endpoints}
