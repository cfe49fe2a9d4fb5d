"""``resolve_lm``: an ``--lm`` spec to a DSPy LM (embedded model or any LiteLLM provider)."""

from __future__ import annotations

import os
from pathlib import Path

import dspy

from routerlab.agents.errors import ConfigError, ModelAssetError
from routerlab.agents.lm.assets import MODELS, cache_dir, model_path
from routerlab.agents.lm.deadline import bounded_lm
from routerlab.agents.lm.local import LlamaEngine
from routerlab.agents.lm.prefix_disk import configured_prefix_disk
from routerlab.agents.lm.provider_scoring import LogprobScorer
from routerlab.agents.lm.scripted import scripted_lm
from routerlab.agents.lm.scripts import scripted_script
from routerlab.agents.lm.speculative import configured_speculative
from routerlab.agents.lm.usage import UsageCallback

__all__ = ["SPEC_FORMS", "configure_cache", "resolve_lm"]

SPEC_FORMS = (
    "local (Qwen2.5-Coder-1.5B, the default)",
    "local:1.5b",
    "local:0.5b",
    "local:/path/to/model.gguf",
    "provider/model, e.g. openai/gpt-4o-mini, ollama_chat/qwen2.5-coder:7b, hosted_vllm/NAME with --lm-api-base",
    "scripted:NAME (a deterministic test double for tests and CI, not a model; see routerlab.agents.lm.scripts)",
)

_cache_configured = False


def configure_cache() -> None:
    """Point DSPy's response cache (memory + disk) at routerlab's cache directory, once."""
    global _cache_configured
    if not _cache_configured:
        dspy.configure_cache(
            enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(cache_dir().parent / "dspy")
        )
        _cache_configured = True


def _gguf(path: Path) -> Path:
    if not path.is_file():
        raise ModelAssetError(
            f"GGUF file not found: {path}",
            expected="an existing .gguf model file",
            found="no such file" if not path.exists() else "not a file",
            fix="check the path after local:, or use local / local:0.5b for the embedded models",
        )
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ModelAssetError(
            f"not a GGUF file: {path}",
            expected="a file starting with the GGUF magic bytes",
            found=f"first bytes {magic!r}",
            fix="convert the model to GGUF (llama.cpp) or pass another file",
        )
    return path


def resolve_lm(
    spec: str = "local",
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    cache: bool = True,
    temperature: float = 0.0,
    max_tokens: int = 512,
    n_ctx: int = 4096,
    prefix_states: int = 6,
    speculative: str | None = None,
) -> dspy.LM:
    """Build the DSPy LM for an ``--lm`` spec.

    Args:
        spec: See :data:`SPEC_FORMS`.
        api_base: API base of an OpenAI-compatible server.
        api_key: Key (default: the provider's environment variable; ``local`` for loopback servers).
        cache: Use DSPy's response cache (a repeated request costs nothing).
        temperature: Sampling temperature (0: deterministic).
        max_tokens: Completion budget.
        n_ctx: Context window of a local model.
        prefix_states: KV states of earlier prompts a local model keeps for prefix reuse (0: off).
        speculative: How a local model decodes greedy text: a drafter's name (speculative
            decoding, see ``routerlab.agents.lm.speculative``) or ``off``; None: the
            ``ROUTERLAB_SPECULATIVE`` environment variable, else the default drafter.

    Raises:
        ConfigError: An unrecognised spec, or an unusable ROUTERLAB_PREFIX_CACHE(_MB) or
            ROUTERLAB_SPECULATIVE for a local model.
        ModelAssetError: A missing or corrupt local model.
    """
    if spec.startswith("scripted:"):
        # a test double: replies come from a registered script, never from a model or the cache
        name = spec.partition(":")[2]
        return scripted_lm(scripted_script.build(name), name=name)
    configure_cache()
    callbacks = [UsageCallback()]
    if spec == "local" or spec.startswith("local:"):
        target = spec.partition(":")[2] or "1.5b"
        if target in MODELS:
            path = model_path(target)
        elif target.endswith(".gguf") or os.sep in target:
            path = _gguf(Path(target).expanduser())
        else:
            raise ConfigError(
                f"unknown local model {target!r}",
                expected=f"one of {', '.join(f'local:{k}' for k in MODELS)} or local:/path/model.gguf",
                found=spec,
                fix="pick an embedded model or give a GGUF path",
            )
        # a bad ROUTERLAB_PREFIX_CACHE(_MB) is bad input: said now, not at the first prefix saved mid-run
        configured_prefix_disk()
        engine = LlamaEngine(
            str(path),
            n_ctx=n_ctx,
            max_tokens=max_tokens,
            prefix_states=prefix_states,
            speculative=configured_speculative(speculative),
        )
        lm = dspy.LM(
            f"local/{path.stem}",
            engine=engine,
            cache=cache,
            temperature=temperature,
            max_tokens=max_tokens,
            callbacks=callbacks,
        )
    elif "/" in spec and not spec.startswith("/") and spec.split("/", 1)[1]:
        kwargs = {"api_base": api_base} if api_base else {}
        if api_key or api_base:
            kwargs["api_key"] = api_key or os.environ.get("OPENAI_API_KEY", "local")
        lm = dspy.LM(
            spec,
            cache=cache,
            temperature=temperature,
            max_tokens=max_tokens,
            callbacks=callbacks,
            num_retries=3,
            **kwargs,
        )
        # every call stops waiting when its turn's (or run's) deadline passes: a server that
        # accepts and never answers cannot hold a run past --deadline-s
        lm = bounded_lm(lm)
        # intent routers read label probabilities from the provider when it returns logprobs
        lm.routerlab_scorer = LogprobScorer(spec, kwargs)
    else:
        raise ConfigError(
            f"unknown LM spec {spec!r}",
            expected="one of: " + "; ".join(SPEC_FORMS),
            found=repr(spec),
            fix="use --lm local, or a provider-prefixed model such as openai/gpt-4o-mini",
        )
    lm.routerlab_spec = spec
    return lm
