"""jsonschema's IRI checker (rfc3987-syntax) is built at first use, not in every routerlab process."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

#: run in a fresh interpreter: the test process has imported jsonschema long before this test
CHECK = """
import sys
import routerlab  # registers the stand-in before anything imports jsonschema
import jsonschema
from routerlab._lazy_iri import _Deferred

assert isinstance(sys.modules["rfc3987_syntax"], _Deferred), "the parsers were built at import"
schema = {"type": "string", "format": "iri"}
check = jsonschema.Draft202012Validator.FORMAT_CHECKER
v = jsonschema.Draft202012Validator(schema, format_checker=check)
# the real checker still decides: a valid IRI with a non-ASCII path, and a string with spaces
assert v.is_valid("http://example.com/caf\\u00e9") and not v.is_valid("not an iri")
assert not isinstance(sys.modules["rfc3987_syntax"], _Deferred), "the real package was not loaded"
import rfc3987_syntax

assert rfc3987_syntax.RFC3987_SYNTAX_PARSER_TYPE == "earley"
print("ok")
"""

#: the stand-in answers for the package as the import system asks: its spec, and its submodules
SPEC = """
import importlib.util, sys
import routerlab
from routerlab._lazy_iri import _Deferred

assert importlib.util.find_spec("rfc3987_syntax").name == "rfc3987_syntax"
assert isinstance(sys.modules["rfc3987_syntax"], _Deferred)
from rfc3987_syntax.utils import load_grammar

assert callable(load_grammar)
print("ok")
"""


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987-syntax is not installed")
def test_iri_parsers_are_built_at_first_use_and_still_check():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987-syntax is not installed")
def test_the_stand_in_has_the_packages_spec_and_submodules():
    proc = subprocess.run([sys.executable, "-c", SPEC], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_nothing_changes_when_the_package_is_already_imported(monkeypatch):
    from routerlab._lazy_iri import _Deferred, defer_rfc3987_syntax

    sentinel = object()
    monkeypatch.setitem(sys.modules, "rfc3987_syntax", sentinel)
    defer_rfc3987_syntax()
    assert sys.modules["rfc3987_syntax"] is sentinel and not isinstance(sentinel, _Deferred)
