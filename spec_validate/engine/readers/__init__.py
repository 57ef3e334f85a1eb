"""Reader verdicts: whether measured versions of real readers (anndata, zarr-python, h5py, ...) open a store.

The reader packs (`rules/readers/<reader>.yaml`) are data: each rule names a fact of a store, the reader versions it
stops and the measured cases that show it. `measured.yaml` beside them, generated from the compatibility matrix by
`compat/summarise.py`, says which versions were measured on which formats and which facts the measured cases had.
`packs.py` loads both, `conditions.py` is the grammar of a rule's `when`, `facts.py` what a store shows (from its
nodes, never its arrays), `formats.py` the store's coarse format, and `predict.py` the verdicts.
"""
