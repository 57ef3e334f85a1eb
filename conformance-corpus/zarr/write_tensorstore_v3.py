"""Write the Zarr v3 stores of the corpus that tensorstore writes (a second, independent writer).

Run with tensorstore installed (it is not a dependency of spec-validate: `pip install tensorstore==0.1.86` in a
separate environment), as `python conformance-corpus/zarr/write_tensorstore_v3.py`. It (re)writes
conformance-corpus/zarr/zarr-v3/written-by-tensorstore-<version>/; the stores are committed, so the tests never
need tensorstore. tensorstore's zarr3 driver writes arrays only: no zarr.json for the groups above them.
"""

from __future__ import annotations

import shutil
from importlib.metadata import version
from pathlib import Path

import numpy as np
import tensorstore as ts

OUT = Path(__file__).resolve().parent / "zarr-v3" / f"written-by-tensorstore-{version('tensorstore')}"


def write(path: Path, metadata: dict, values: np.ndarray) -> None:
    store = ts.open(
        {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}, "metadata": metadata},
        create=True,
        delete_existing=True,
    ).result()
    store[...] = values


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    root = OUT / "tensorstore_arrays.zarr"
    write(
        root / "plain",
        {
            "data_type": "float32",
            "shape": [20, 10],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 5]}},
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 4}}],
            "fill_value": "NaN",
            "dimension_names": ["y", "x"],
        },
        np.arange(200, dtype="float32").reshape(20, 10),
    )
    write(
        root / "sharded",
        {
            "data_type": "uint16",
            "shape": [64, 64],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32]}},
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [8, 8],
                        "codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {
                                "name": "blosc",
                                "configuration": {
                                    "cname": "zstd",
                                    "clevel": 5,
                                    "shuffle": "shuffle",
                                    "typesize": 2,
                                    "blocksize": 0,
                                },
                            },
                        ],
                        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                        "index_location": "end",
                    },
                }
            ],
            "fill_value": 0,
        },
        (np.arange(64 * 64) % 1000).astype("uint16").reshape(64, 64),
    )
    write(
        root / "transposed",
        {
            "data_type": "int64",
            "shape": [6, 4],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 4]}},
            "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
            "codecs": [
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "crc32c"},
            ],
            "fill_value": -1,
        },
        np.arange(24, dtype="int64").reshape(6, 4),
    )
    print(root)


if __name__ == "__main__":
    main()
