"""Requests a Zarr store on S3 costs, listed flat or folder by folder: moto's S3 server on loopback.

    python bench/s3_listing.py [STORE ...] [--reps 3]

Each store (default: the metadata benchmark's 1,000-column AnnData Zarr v2 and v3 stores, consolidated, from
`bench/metadata_generate.py`) is uploaded to a bucket of moto's server once, then validated in this process
through the S3 transport (obstore's S3Store), two ways in turn: with its flat listing (the default for a
consolidated store of at most `remote.MOST_FLAT_LISTING_KEYS` keys: every key below the root in ListObjectsV2
pages of 1,000) and folder by folder (as before, and as for a larger store: one listing per folder, 64 at once).
Every request the server answers is counted by operation (`tests/s3_server.py`); the two runs' clause results
must be equal. Prints the
requests of each kind and the median wall time. moto answers in about a millisecond of its own CPU per request,
on the same two cores as the client, so the times are a loopback's, not an object store's (whose 20-50 ms a
request the folder-by-folder listings pay in rounds of 64): the request counts are the figure that carries over.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # the counting moto server of the tests

DEFAULT_STORES = [HERE / "data" / "metadata" / f"obs-1000-{f}.zarr" for f in ("zarr2", "zarr3")]


def upload(client, bucket: str, store: Path) -> int:
    files = [p for p in sorted(store.rglob("*")) if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda p: client.put_object(
                    Bucket=bucket, Key=f"{store.name}/{p.relative_to(store).as_posix()}", Body=p.read_bytes()
                ),
                files,
            )
        )
    return len(files)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stores", nargs="*", type=Path, default=DEFAULT_STORES)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    missing = [s for s in args.stores if not s.is_dir()]
    if missing:
        sys.exit(f"missing: {', '.join(map(str, missing))} (python bench/metadata_generate.py --cases obs-1000)")

    import boto3
    from s3_server import CountingMotoServer

    from spec_validate import validate
    from spec_validate.storage import remote

    server = CountingMotoServer()
    endpoint = server.start()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true", AWS_ENDPOINT_URL=endpoint,
    )  # fmt: skip
    client = boto3.client("s3")
    client.create_bucket(Bucket="bench")

    flat_bound = remote.MOST_FLAT_LISTING_KEYS
    print("| store | keys | listing | ListObjectsV2 | GetObject | other | all requests | wall (s) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    try:
        for store in args.stores:
            keys = upload(client, "bench", store)
            outcomes = {}
            for how, bound in (("flat", flat_bound), ("folder by folder", -1)):
                remote.MOST_FLAT_LISTING_KEYS = bound
                times: list[float] = []
                asked: collections.Counter[str] = collections.Counter()
                for _ in range(args.reps):
                    server.clear()
                    started = time.perf_counter()
                    report = validate(f"s3://bench/{store.name}")
                    times.append(time.perf_counter() - started)
                    asked = collections.Counter(r.operation for r in server.requests)
                outcomes[how] = [(r.rule.id, r.status, r.finding_count, r.unchecked_count) for r in report.results]
                lists = asked.pop("list", 0)
                gets = asked.pop("get", 0)
                other = sum(asked.values())
                total = lists + gets + other
                print(
                    f"| {store.name} | {keys} | {how} | {lists} | {gets} | {other} | {total} | {statistics.median(times):.2f} |"
                )
            if outcomes["flat"] != outcomes["folder by folder"]:
                sys.exit(f"{store.name}: the two listings gave different clause results")
    finally:
        remote.MOST_FLAT_LISTING_KEYS = flat_bound
        server.stop()


if __name__ == "__main__":
    main()
