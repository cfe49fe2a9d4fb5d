"""An LM behind a wrapping engine (``agents/lm/wrapped.py``): the deadline and fault wrappers share it."""

from __future__ import annotations

import dspy

from routerlab.agents.faults import FaultInjector, FaultSpec, FaultyEngine, faulty_lm
from routerlab.agents.lm.deadline import BoundedEngine, bounded_lm
from routerlab.agents.lm.usage import UsageCallback
from routerlab.agents.lm.wrapped import CLIENT_KEYS, behind_engine


def _provider_lm() -> dspy.LM:
    return dspy.LM(
        "openai/some-model",
        api_base="http://127.0.0.1:9/v1",
        api_key="not-a-key",
        extra_headers={"x-team": "lab"},
        azure_ad_token_provider=None,  # unset: nothing to drop
        callbacks=[UsageCallback()],
        temperature=0.0,
        num_retries=3,
    )


def test_the_outer_lm_keeps_model_settings_and_callbacks_and_drops_what_only_the_inner_may_use():
    lm = _provider_lm()
    engine = BoundedEngine(lm.copy(callbacks=[]))
    outer = behind_engine(lm, engine)
    assert outer.model == lm.model and outer.kwargs["temperature"] == 0.0
    assert outer.callbacks == lm.callbacks and outer.cache is False and outer.num_retries == 0
    assert all(outer.kwargs.get(k) is None for k in CLIENT_KEYS)
    # the inner copy keeps its connection, and the original LM is not changed
    assert engine.inner.kwargs["api_base"] == "http://127.0.0.1:9/v1" and engine.inner.callbacks == []
    assert lm.kwargs["api_key"] == "not-a-key" and lm.num_retries == 3


def test_the_deadline_and_the_fault_wrappers_build_the_same_outer_lm():
    lm = _provider_lm()
    bounded = bounded_lm(lm, request_timeout_s=7.0)
    faulty = faulty_lm(lm, FaultInjector(FaultSpec(rate=0.5, seed=1)))
    assert isinstance(bounded.engine, BoundedEngine) and isinstance(faulty.engine, FaultyEngine)
    assert bounded.engine.inner.kwargs["timeout"] == 7.0
    for outer in (bounded, faulty):
        assert (outer.cache, outer.num_retries, outer.callbacks) == (False, 0, lm.callbacks)
        assert {k for k in CLIENT_KEYS if outer.kwargs.get(k) is not None} == set()
        assert outer.kwargs["temperature"] == 0.0
