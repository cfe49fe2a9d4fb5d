"""The ``hybrid`` router (rule, LLM or hybrid routing): rules first, the LM when they are unsure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.trace import Usage
from routerlab.agents.turn_history import history_of, history_text
from routerlab.routers.base import router
from routerlab.routers.dspy_router import CHECKS, load_program, request_evidence
from routerlab.routers.llm import intent_by_tool_call
from routerlab.routers.rules import RulesRouter
from routerlab.routers.support.history_window import DEFAULT_WINDOW, Window, check_window, window_of
from routerlab.routers.support.intent import Classification, IntentRouter
from routerlab.routers.support.lm_intent import IntentPrompt, classify_one_pass
from routerlab.routers.support.schema_outline import check_view, gate_on_gap, schema_view
from routerlab.routers.support.turns import without_pleasantries

__all__ = ["HybridRouter"]

#: rules that match almost any request: their intent is no evidence for the LM's reading
_NO_EVIDENCE = frozenset({"default", "data_question"})


@router("hybrid")
class HybridRouter(IntentRouter):
    """Rules decide when confident; below ``threshold`` the LM classifies, and decides when it is sure.

    The LM reads the intent in one forward pass over the label probabilities, with the prompt
    (instructions and demos) of a compiled ``dspy`` router program. Its probability is compared
    with ``lm_threshold``: at or above it the LM decides (``hybrid:logprob``), below it the
    decision goes back to the rules (``hybrid:<rule>(lm-unsure)``), each with its own confidence.
    An LM that cannot score labels answers through one tool call instead (``hybrid:generation``,
    confidence 1.0: generation gives no probability).

    Args:
        threshold: Rule confidence below which the LM is asked.
        lm_threshold: LM probability below which the rules' answer is kept.
        program: The ``dspy`` router program whose prompt the LM path uses (see ``dspy``).
        fix_budget: fix_sql calls a failed execution may trigger.
        max_tokens: Completion budget of the generation fallback.
        one_pass: Use the one-pass path when the LM can score labels; False always generates.
        schema: What the LM path sees of the database: ``columns`` (every table with its column
            names, so it can tell what the database does not hold), ``tables`` (names only, the
            former prompt) or ``none``. It is part of the cached prompt prefix.
        schema_check: Add the schema check's finding to the request the LM path reads, when it
            finds a gap (:func:`~routerlab.routers.support.schema_outline.schema_finding`). With the
            default thresholds this rarely matters: a gap in a data request is the rules'
            ``schema_gap`` (confidence 0.84), which already decides above ``threshold``.
        ambiguity_check: Add the ambiguity check's question to the request the LM path reads
            (:func:`~routerlab.routers.support.schema_outline.ambiguity_finding`). The same caveat: each
            kind it finds is also a clarify rule at 0.82-0.85, which decides before the LM is asked,
            so this matters only with those rules ablated (``rules`` router's ``without``).
            A program compiled with ``checks`` turns the matching finding on whatever these say:
            its demos show the findings, so its requests do too.
        abstain_check: Read the schema check's finding as a gate on the LM path's decisions: a
            data request the LM would answer (or ask about, with nothing the ambiguity check finds
            open) becomes an abstention when the database lacks what it names
            (:func:`~routerlab.routers.support.schema_outline.abstains_on_gap`). The rules' own decisions
            are never gated: their ``schema_gap`` rule already reads the same check.
        rules_without: Rules left out of the rules' table (the ``rules`` router's ``without``), to
            switch single checks off (``--router-arg 'hybrid.rules_without=["which_column"]'``).
        lm_backed: The LM path moves a request away from the rules' decision to another intent
            only when the rules also see evidence for that intent: one of their rules of that
            intent matched the request (a schema gap, an ambiguity the schema leaves open, a
            greeting, a write), or the schema gate abstained. Otherwise the rules' decision stands
            (``hybrid:<rule>(lm-unbacked:<intent>)``): a data question is not sent to chat, asked
            back or declined on the LM's word alone (issue 59). False: the LM decides.
        history: Which earlier turns the LM path shows, a window of
            :mod:`routerlab.routers.support.history_window`: ``none``, ``last`` (the last
            request and the assistant's reply) or ``last_k`` (the last three turns, the default,
            kept by the history-window study). The
            rules read the whole conversation as before.
    """

    #: arguments that name a file, by kind (the server takes only allow-listed names for them)
    file_arguments: ClassVar[dict[str, str]] = {"program": "program"}

    def __init__(
        self,
        threshold: float = 0.8,
        lm_threshold: float = 0.0,
        program: str = "builtin",
        fix_budget: int = 1,
        max_tokens: int = 256,
        one_pass: bool = True,
        schema: str = "columns",
        schema_check: bool = False,
        ambiguity_check: bool = False,
        abstain_check: bool = True,
        rules_without: Sequence[str] | str = (),
        history: str = DEFAULT_WINDOW,
        lm_backed: bool = True,
    ) -> None:
        super().__init__(fix_budget=fix_budget)
        self.lm_backed = lm_backed
        self.history = check_window("hybrid", history)
        self.abstain_check = abstain_check
        self.schema_check = schema_check
        self.ambiguity_check = ambiguity_check
        self.schema = check_view("hybrid", schema)
        self.one_pass = one_pass
        self.threshold = threshold
        self.lm_threshold = lm_threshold
        self.program_name = program
        self.max_tokens = max_tokens
        route = load_program(program)[0].route
        self.prompt = IntentPrompt.from_predict(route)
        # a program compiled with evidence shows it in its demos: the LM path adds the same findings
        self._route = route
        self._rules = RulesRouter(fix_budget=fix_budget, without=rules_without)
        self.rules_without = self._rules.without
        # a clarification names only what the checks left in the table find open
        self.clarify_kinds = self._rules.clarify_kinds

    def bind(self, env: RouterEnv) -> None:
        """Needs the plan's tools; the LM is optional (without one, rules always decide)."""
        super().bind(env)
        self._rules.bind(env)

    def classify(self, state: PipelineState) -> Classification:
        """Rules, then the LM when the rules' confidence is below the threshold."""
        intent, conf, method, _ = self._rules.classify(state)
        if conf >= self.threshold or self.env is None or self.env.lm is None:
            return Classification(intent, conf, f"hybrid:{method}", Usage())
        window = window_of(self.history, state, self.env.lm)
        decided = self._by_lm(state, intent, conf, method, window)
        if self.lm_backed and not self._backed(state, decided, intent):
            decided = Classification(intent, conf, f"hybrid:{method}(lm-unbacked:{decided.intent})", decided.usage)
        # the window's own model call (rewrite) is part of what this decision cost
        return decided._replace(usage=window.usage.add(decided.usage))

    def _backed(self, state: PipelineState, decided: Classification, rules_intent: str) -> bool:
        """Whether the LM path's ``decided`` may stand against the rules' ``rules_intent``.

        It may when it agrees with the rules or answers the data question (``sql``), when the
        schema gate made it an abstention (the schema check is evidence the rules read too), or
        when a rule of its intent matched the request: the rules saw the same thing, below their
        winner.
        """
        if decided.intent in ("sql", rules_intent) or decided.method.endswith("+schema-gap"):
            return True
        _, hits = self._rules.match(str(state.get("question", "") or ""), self._database(state), history_of(state))
        seen = {r.intent for r in self._rules.rules if r.name in hits and r.name not in _NO_EVIDENCE}
        return decided.intent in seen

    def _by_lm(self, state: PipelineState, intent: Intent, conf: float, method: str, window: Window) -> Classification:
        """The LM's decision over ``window``; the rules' ``intent`` when the LM is unsure or invalid."""
        assert self.env is not None
        if not self.one_pass:
            return self._generation(state, intent, conf, method, window)
        scored = classify_one_pass(
            self.env.lm,
            self.prompt,
            tables=schema_view(self.env, state, self.schema),
            # greetings and thanks around a data question are not what it asks (routers/support/turns.py)
            request=without_pleasantries(window.request or state.get("question", "") or ""),
            conversation=history_text(window.turns, max_turns=len(window.turns)),
            note=self._note(state),
        )
        if scored is not None:
            if scored.confidence >= self.lm_threshold:
                return self._gated(
                    state, Classification(scored.intent, scored.confidence, "hybrid:logprob", scored.usage)
                )
            return Classification(intent, conf, f"hybrid:{method}(lm-unsure)", scored.usage)
        return self._generation(state, intent, conf, method, window)

    def _gated(self, state: PipelineState, decided: Classification) -> Classification:
        """An LM decision through the schema gate when ``abstain_check`` is on."""
        return gate_on_gap(self.env, state, decided) if self.abstain_check else decided

    def _note(self, state: PipelineState) -> str:
        flags = {"schema": self.schema_check, "ambiguity": self.ambiguity_check}
        checks = set(self._route.checks) | {c for c, on in flags.items() if on}
        return request_evidence(self.env, state, tuple(c for c in CHECKS if c in checks), self._route.neighbours)

    def _generation(
        self, state: PipelineState, intent: Intent, conf: float, method: str, window: Window
    ) -> Classification:
        assert self.env is not None
        note = self._note(state)
        found, usage = intent_by_tool_call(self.env, state, self.max_tokens, note, window)
        if found is not None:
            return self._gated(state, Classification(found, 1.0, "hybrid:generation", usage))  # type: ignore[arg-type]
        return Classification(intent, conf, f"hybrid:{method}(llm-invalid)", usage)
