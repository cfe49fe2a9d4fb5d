"""The files a server request may name: an allow-list, never a path from the request.

Some router arguments name a file (``dspy.program``, ``hybrid.program``, ``semantic.exemplars``;
each router declares them in ``file_arguments``). On the command line they take a path: the user
names files on their own machine. A server takes only names from a server-side allow-list:

* the committed files of that kind (``routers/programs/``), listed by :data:`FILE_KINDS`;
* the files the operator registers at start-up (``routerlab serve --register-file
  program:mine=/srv/programs/mine.json``).

Any other value, a path included, is refused with the same message whatever is at that path, so
a client learns nothing about the server's files, and the server reads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from routerlab.agents.errors import ConfigError
from routerlab.routers.dspy_router import program_names
from routerlab.routers.semantic import exemplar_names

__all__ = ["FILE_KINDS", "FileAllowList", "parse_registrations"]


def _programs() -> list[str]:
    return [*program_names(), "none"]


def _exemplars() -> list[str]:
    return exemplar_names()


#: committed names of each kind of file a router argument names
FILE_KINDS: dict[str, Callable[[], list[str]]] = {"program": _programs, "exemplars": _exemplars}


def _registration_error(item: str, expected: str, found: str) -> ConfigError:
    return ConfigError(
        f"bad --register-file {item!r}",
        expected=expected,
        found=found,
        fix="e.g. --register-file program:mine=/srv/programs/dspy_router_mine.json",
        details={"option": "--register-file"},
    )


def parse_registrations(items: Sequence[str]) -> dict[str, dict[str, Path]]:
    """Parse ``KIND:NAME=PATH`` items (the operator's, so paths are checked and named here).

    Raises:
        ConfigError: An unknown kind, a malformed item, a name given twice or taken by a
            committed file, or a path that is not a file.
    """
    out: dict[str, dict[str, Path]] = {}
    for item in items:
        head, eq, path = item.partition("=")
        kind, colon, name = head.partition(":")
        if not eq or not colon or not name or not path:
            raise _registration_error(item, "KIND:NAME=PATH", item)
        if kind not in FILE_KINDS:
            raise _registration_error(item, f"a kind among {sorted(FILE_KINDS)}", repr(kind))
        if name in FILE_KINDS[kind]() or name in out.get(kind, {}):
            raise _registration_error(item, f"a {kind} name not yet taken", f"{name!r} is already a {kind}")
        file = Path(path).expanduser()
        if not file.is_file():
            raise _registration_error(item, "an existing file", f"no file at {file}")
        out.setdefault(kind, {})[name] = file.resolve()
    return out


@dataclass(frozen=True)
class FileAllowList:
    """The names a request may give a file argument, and what each stands for.

    Attributes:
        registered: Operator-registered files: kind -> name -> path.
    """

    registered: Mapping[str, Mapping[str, Path]] = field(default_factory=dict)

    def names(self, kind: str) -> list[str]:
        """Every name a request may use for a file of ``kind``."""
        return [*FILE_KINDS[kind](), *sorted(self.registered.get(kind, {}))]

    def resolve(self, router: str, factory: Any, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` with each file argument checked against the allow-list.

        A committed name is passed on as it is; a registered name becomes its path (chosen by
        the operator, never by the request).

        Raises:
            ConfigError: A file argument whose value is not an allowed name; the message is the
                same for any such value, so it says nothing about the server's files.
        """
        out = dict(args)
        for arg, kind in getattr(factory, "file_arguments", {}).items():
            if arg not in out:
                continue
            value = out[arg]
            allowed = self.names(kind)
            if not isinstance(value, str) or value not in allowed:
                raise ConfigError(
                    f"router {router!r} argument {arg!r} must name a {kind} the server offers",
                    expected=f"one of: {', '.join(allowed)}",
                    found=f"{value!r} (not an offered name; a server takes no file path from a request)",
                    fix=f"pass one of the offered names; the operator adds one with --register-file {kind}:NAME=PATH",
                    details={"field": f"router_args.{arg}", "argument": arg},
                )
            registered = self.registered.get(kind, {})
            if value in registered:
                out[arg] = str(registered[value])
        return out
