"""The side process of an HNSW build.

`python -m memvault.index._edge_hnsw_child FOLDER DIM [M EF_CONSTRUCT]`.

A module of its own, so that `-m` does not run `_edge_hnsw` a second time (the package imports
it); see `_edge_hnsw.build`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memvault.index._edge_hnsw import build

if __name__ == "__main__":
    graph = [int(arg) for arg in sys.argv[3:5]]  # m, ef_construct: the defaults unless given
    build(Path(sys.argv[1]), int(sys.argv[2]), *graph)
