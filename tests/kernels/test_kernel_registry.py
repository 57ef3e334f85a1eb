"""The kernel registry: every kernel module found without a list, each kernel registered once by name, and the
decorator returns the combine it registers."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import spec_validate.kernels
from spec_validate.kernels import registry
from spec_validate.kernels.registry import Kernel, all_kernels, get, kernel

# Modules of the package that hold no kernel: what kernels see and run on, and the registry itself.
HELPERS = {"block", "blocks", "facts", "registry"}


def test_every_kernel_module_registers_a_kernel_found_without_a_list():
    modules = {m.name for m in pkgutil.iter_modules(spec_validate.kernels.__path__)} - HELPERS
    registered = {k.combine.__module__.rpartition(".")[2] for k in all_kernels().values()}
    assert registered == modules


def test_registered_kernel_pairs_summarize_and_combine_of_one_module():
    for name, k in all_kernels().items():
        assert k.name == name
        assert k.summarize.__name__ == "summarize" and k.combine.__name__ == "combine"
        assert k.summarize.__module__ == k.combine.__module__


def test_kernel_passes_returns_combine_unchanged():
    def summarize(block):
        return 1

    def combine(left, right):
        return left + right

    try:
        assert kernel("probe_kernel_for_test", summarize=summarize)(combine) is combine
        assert get("probe_kernel_for_test") == Kernel("probe_kernel_for_test", summarize, combine)
    finally:
        registry.KERNELS.pop("probe_kernel_for_test", None)


def test_kernel_fails_registering_a_name_twice():
    first = get("first_last")
    with pytest.raises(RuntimeError, match="registered twice"):
        kernel("first_last", summarize=first.summarize)(lambda left, right: left)


def test_get_fails_naming_an_unknown_kernel():
    with pytest.raises(KeyError, match="no_such_kernel"):
        get("no_such_kernel")


def test_only_the_chunk_readers_read_chunk_records_and_only_one_shard_indexes():
    kernels = all_kernels()
    assert {n for n, k in kernels.items() if k.reads_chunks} == {
        "chunk_problems",
        "invalid_json",
        "pickle_calls",
        "shard_index_problems",
    }
    assert {n for n, k in kernels.items() if k.reads_shard_indexes} == {"shard_index_problems"}


def test_threads_looking_kernels_up_at_once_all_find_them():
    # The scan threads may ask for kernels before any was loaded: the one that loads the modules makes the
    # others wait rather than find a half-filled registry.
    code = """
import threading
from spec_validate.kernels import registry
names = ["find_decreases", "count_outside", "first_last", "cell_digest"] * 4
start = threading.Barrier(len(names))
failed = []
def look(name):
    start.wait()
    try:
        registry.get(name)
    except KeyError as exc:
        failed.append(str(exc))
threads = [threading.Thread(target=look, args=(n,)) for n in names]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(failed)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
