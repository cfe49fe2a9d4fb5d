"""On-disk dataset loaders; importing this package registers every module's ``@dataset`` loaders.

One module per loader (or per family: ``table.py`` registers ``jsonl`` and ``csv``); modules
whose names start with ``_`` hold shared helpers. ``dataset.names()`` lists the registered
loaders, the built-in benchmark's included; ``mixed`` mixes intents into any of them.
"""

from routerlab.agents.registry import import_submodules
from routerlab.benchmarks.loaders.bird import load_bird
from routerlab.benchmarks.loaders.mixed import DEFAULT_RATIOS, load_mixed, mix_intents
from routerlab.benchmarks.loaders.spider import load_spider
from routerlab.benchmarks.loaders.table import load_csv, load_jsonl
from routerlab.benchmarks.loaders.text2sql_data import load_text2sql_data

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

# modules added later register themselves: a new router/scorer/loader is one new file
import_submodules(__name__, __path__)
