"""On-disk dataset loaders; importing this package registers them (and the intent mixer).

Registered names: ``spider``, ``bird``, ``text2sql_data``, ``jsonl``, ``csv`` and ``mixed``
(any of those, or ``builtin``, with intents mixed in by :mod:`benchmarks.mixer`).
"""

from benchmarks.loaders.bird import load_bird
from benchmarks.loaders.spider import load_spider
from benchmarks.loaders.table import load_csv, load_jsonl
from benchmarks.loaders.text2sql_data import load_text2sql_data
from benchmarks.mixer import DEFAULT_RATIOS, load_mixed, mix_intents

__all__ = [
    "DEFAULT_RATIOS",
    "load_bird",
    "load_csv",
    "load_jsonl",
    "load_mixed",
    "load_spider",
    "load_text2sql_data",
    "mix_intents",
]
