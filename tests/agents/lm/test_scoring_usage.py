"""One-pass scoring calls are never cached, so the usage they record carries their cold cost too."""

from __future__ import annotations

from types import SimpleNamespace

from routerlab.agents.lm.scoring import ChoiceScores, continue_reply, score_choices
from routerlab.agents.lm.usage import usage_scope


class _Engine:
    """A ChoiceScorer with fixed answers (the embedded engine's interface, no model)."""

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        return ChoiceScores(
            probs={c: 1.0 / len(choices) for c in choices},
            coverage=0.9,
            prompt_tokens=120,
            prefix_tokens=100,
            evaluated_tokens=20,
            prefix_source="live",
            seconds=0.01,
        )

    def continue_reply(self, prefix, messages, reply_prefix, *, stop, max_tokens=64):
        return SimpleNamespace(text="SELECT 1", prompt_tokens=130, completion_tokens=4)


def test_scoring_and_continuation_record_cold_cost_equal_to_what_they_cost():
    lm = SimpleNamespace(engine=_Engine())
    with usage_scope() as log:
        assert score_choices(lm, [], [{"role": "user", "content": "hi"}], ["sql", "chat"]).best in ("sql", "chat")
        assert continue_reply(lm, [], [{"role": "user", "content": "hi"}], "", stop="\n") == "SELECT 1"
    total = log.total()
    assert total.lm_calls == 2 and total.cache_hits == 0
    assert (total.prompt_tokens, total.completion_tokens) == (250, 4)
    assert (total.cold_prompt_tokens, total.cold_completion_tokens) == (250, 4)
    assert total.cold_latency_s == total.latency_s and total.cold_unknown == 0
