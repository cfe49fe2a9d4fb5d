"""Defer ``rfc3987_syntax``'s parser construction to its first use (it costs every process seconds).

Every routerlab process that calls an LM imports DSPy, which imports ``jsonschema``; jsonschema's
format module imports the optional ``rfc3987-syntax`` (pulled in by Jupyter's
``jsonschema[format-nongpl]``) to check the ``iri`` and ``iri-reference`` formats, and that
package builds its Earley parsers of the RFC 3987 grammar at import: about 3 s of CPU on this
2-core machine (measured: ``import rfc3987_syntax`` 3.05 s user), in every CLI run, notebook
kernel and Ray worker, for a check routerlab never runs (python-jsonschema/jsonschema#1428).

:func:`defer_rfc3987_syntax` registers a stand-in module under that name, before jsonschema is
imported, whose ``is_valid_syntax`` (the one name jsonschema takes) imports the real package on
its first call and delegates to it. Nothing changes but when the parsers are built: a schema with
an ``iri`` format is still checked by the real package, and any other attribute of the stand-in
loads the real package too.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

__all__ = ["defer_rfc3987_syntax"]

_NAME = "rfc3987_syntax"


def _real() -> types.ModuleType:
    """The real package, imported on first need (the stand-in steps aside for the import)."""
    current = sys.modules.get(_NAME)
    if isinstance(current, _Deferred):
        del sys.modules[_NAME]
        try:
            return importlib.import_module(_NAME)
        except BaseException:
            sys.modules[_NAME] = current  # a failed import leaves the stand-in, as before
            raise
    return importlib.import_module(_NAME)


class _Deferred(types.ModuleType):
    """The stand-in: ``is_valid_syntax`` and every other attribute come from the real package."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            # the import system probes ``__path__`` and the like on every ``from ... import``:
            # answering them from the real package would build the parsers at once
            raise AttributeError(name)
        return getattr(_real(), name)


def _is_valid_syntax(term: str, value: str) -> bool:
    """``rfc3987_syntax.is_valid_syntax``, the package imported at the first call."""
    return _real().is_valid_syntax(term, value)


def defer_rfc3987_syntax() -> None:
    """Register the stand-in unless the package is absent or already imported (then nothing changes)."""
    if _NAME in sys.modules:
        return
    spec = importlib.util.find_spec(_NAME)
    if spec is None:
        return
    stand_in = _Deferred(_NAME, __doc__)
    # the real package's spec and path: find_spec() answers for it as before, and a submodule
    # imported by name (rfc3987_syntax.utils) is found where it is
    stand_in.__spec__ = spec
    stand_in.__path__ = list(spec.submodule_search_locations or [])
    stand_in.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[_NAME] = stand_in
