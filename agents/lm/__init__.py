"""LM backends: the embedded model (llama-cpp-python), any LiteLLM provider, a scripted test LM."""

from routerlab.agents.lm.assets import MODELS, ModelAsset, assemble, model_path
from routerlab.agents.lm.candidates import BatchedReplies, CandidateSampler, candidate_sampler, sample_candidates
from routerlab.agents.lm.chat import ChatResult, chat
from routerlab.agents.lm.local import LlamaEngine, tool_call_schema
from routerlab.agents.lm.resolve import SPEC_FORMS, resolve_lm
from routerlab.agents.lm.scripted import ScriptedEngine, adapter_reply, scripted_lm
from routerlab.agents.lm.speculative import Drafter, drafter, speculative_greedy
from routerlab.agents.lm.together import decode_together
from routerlab.agents.lm.usage import UsageCallback, UsageLog, record_usage, usage_scope

__all__ = [
    "MODELS",
    "SPEC_FORMS",
    "BatchedReplies",
    "CandidateSampler",
    "ChatResult",
    "Drafter",
    "LlamaEngine",
    "ModelAsset",
    "ScriptedEngine",
    "UsageCallback",
    "UsageLog",
    "adapter_reply",
    "assemble",
    "candidate_sampler",
    "chat",
    "decode_together",
    "drafter",
    "model_path",
    "record_usage",
    "resolve_lm",
    "sample_candidates",
    "scripted_lm",
    "speculative_greedy",
    "tool_call_schema",
    "usage_scope",
]
