"""bge-small-en on ONNX Runtime, as treenav embeds it: the same model file
and tokenizer (``~/.cache/treenav/models/bge-small-en``, fetched by
``scripts/fetch-models.sh``), truncation to 256 tokens, texts sorted by
length and each batch padded to its longest, the first token's hidden
state (CLS pooling), L2-normalised."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

MAX_TOKENS = 256


def default_model_dir() -> Path:
    """Where treenav keeps bge-small-en: ``$TREENAV_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/treenav``, else ``~/.cache/treenav``, then
    ``models/bge-small-en``."""
    if os.environ.get("TREENAV_CACHE_DIR"):
        cache = Path(os.environ["TREENAV_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        cache = Path(os.environ["XDG_CACHE_HOME"]) / "treenav"
    else:
        cache = Path.home() / ".cache" / "treenav"
    return cache / "models" / "bge-small-en"


class BgeSmall:
    """One ONNX Runtime session of bge-small-en."""

    def __init__(
        self,
        model_dir: Optional[os.PathLike] = None,
        threads: int = 1,
        batch: int = 32,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(model_dir) if model_dir else default_model_dir()
        for name in ("model.onnx", "tokenizer.json"):
            if not (folder / name).is_file():
                raise FileNotFoundError(
                    f"{folder / name} is missing: run scripts/fetch-models.sh or give model_dir"
                )
        if batch < 1 or not 8 <= max_tokens <= 512:
            raise ValueError("batch must be at least 1 and max_tokens in 8..=512")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_tokens)
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.batch = batch

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows (float32), one per text, in order."""
        encodings = self.tokenizer.encode_batch([str(t) for t in texts])
        out = np.zeros((len(encodings), 0), dtype=np.float32)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch):
            rows = order[start : start + self.batch]
            chunk = [encodings[i] for i in rows]
            width = max(len(e.ids) for e in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, e in enumerate(chunk):
                ids[r, : len(e.ids)] = e.ids
                mask[r, : len(e.ids)] = e.attention_mask
                types[r, : len(e.ids)] = e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = types
            hidden = self.session.run(None, feed)[0]
            cls = hidden[:, 0, :].astype(np.float32)
            norms = np.linalg.norm(cls, axis=1, keepdims=True)
            cls = cls / np.where(norms > 0, norms, 1.0)
            if out.shape[1] == 0:
                out = np.zeros((len(encodings), cls.shape[1]), dtype=np.float32)
            out[rows] = cls
        return out
