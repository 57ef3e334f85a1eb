"""A seeded mutation fuzzer over the conformance corpus: every input gets a report, in bounded memory and time.

`mutators.py` turns a corpus file into a hostile input (bytes flipped and truncated, JSON documents mutated, chunks
corrupted, HDF5 structure edited with h5py, links and special files planted); `runner.py` validates each input in
its own process through `spec_validate.cli.main` and checks what must hold for every input; `test_fuzz.py` runs a few
hundred seeded inputs in the test suite; `python -m tests.fuzz --n 10000` runs more on demand and prints the tally.
"""
