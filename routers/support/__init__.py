"""What the routers share but that is not a router: the checks they read and the helpers they build on.

* :mod:`~routerlab.routers.support.intent`: ``IntentRouter``, the base of routers that classify
  a request once and follow the canonical plan (rules, hybrid, dspy, semantic, the baselines);
* :mod:`~routerlab.routers.support.lm_intent`: one-pass LM classification of a request's intent;
* :mod:`~routerlab.routers.support.label_calibration`: applies a compiled program's per-intent
  offsets (or affine map) to a one-pass distribution (``routerlab.fit.label_calibration_fit`` fits them);
* :mod:`~routerlab.routers.support.schema_outline`: the tables-and-columns view an LM router's
  prompt holds, and the schema check's finding a request may carry;
* :mod:`~routerlab.routers.support.ambiguity`: the schema-derived ambiguity check (what a request
  leaves open on this database, and the question to ask about it);
* :mod:`~routerlab.routers.support.neighbours`: the intents of the nearest labelled requests;
* :mod:`~routerlab.routers.support.turns`: checks for turns that are not data questions (greetings
  and thanks around a request, actions the assistant cannot take, general knowledge, small talk).
* :mod:`~routerlab.routers.support.result_edit`: whether a change request edits the result shown
  (a follow-up) or the data stored (a write), on the conversation's and the schema's evidence;
* :mod:`~routerlab.routers.support.attempt`: what a drafted SQL attempt showed (declined, refused
  as a write, failed, answered), the evidence the ``answer_first`` router decides on;
* :mod:`~routerlab.routers.support.history_window`: which earlier turns an LM router's prompt
  shows (``none``, ``last``, ``last_k``), a registry the routers' ``history`` argument names;
* :mod:`~routerlab.routers.support.swarm_decision`: a swarm's pipeline call as a routing decision
  (``HandoffDecision``), what the ``handoff`` and ``team`` routers share.

Nothing here registers a router; ``routers/`` itself holds only routers (and ``base.py``, the
router registry).
"""
