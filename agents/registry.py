"""Registries: one per extension kind (routers, datasets, scorers, tools...).

A registry maps a name to a factory (usually a class). ``Registry.build`` calls the factory and
records the name plus the fully bound constructor arguments on the instance, so every component
can be rebuilt from what a run logged (``Registry.rebuild(spec)``).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from routerlab.agents.errors import ConfigError, ContractError, UnknownComponentError

__all__ = ["ComponentSpec", "Registry", "component_spec", "import_submodules"]

T = TypeVar("T")

#: attribute under which a built component keeps its spec
_SPEC_ATTR = "_routerlab_spec"

ComponentSpec = dict[str, Any]
"""``{"kind": ..., "name": ..., "args": {...}}``: enough to rebuild a component."""


def _recordable(value: Any) -> Any:
    """``value`` as plain JSON data that the component's constructor accepts back.

    Dataclass values (a rule table, say) are recorded as dicts; a constructor that takes them
    must accept the dict form too, so :meth:`Registry.rebuild` gives the same component.

    Raises:
        TypeError: For a value that has no JSON form (an open connection, a function...).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list | tuple):
        return [_recordable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _recordable(v) for k, v in value.items()}
    json.dumps(value)  # raises TypeError for anything else without a JSON form
    return value


def component_spec(component: Any) -> ComponentSpec:
    """Return the recorded spec of a component built through a registry.

    Args:
        component: An object returned by :meth:`Registry.build`.

    Returns:
        The ``{"kind", "name", "args"}`` mapping recorded at build time.

    Raises:
        ConfigError: If the object was not built through a registry.
    """
    spec = getattr(component, _SPEC_ATTR, None)
    if spec is None:
        raise ConfigError(
            "component has no recorded arguments",
            expected="an object built with Registry.build(...)",
            found=type(component).__name__,
            fix="build components through their registry so runs can be rebuilt",
        )
    return spec


def import_submodules(package: str, path: Iterable[str]) -> None:
    """Import every module of a package, so that a new file registers its components by itself.

    A package of extensions (routers, scorers, loaders) calls this at the end of its
    ``__init__``: adding a router is then one new module with an ``@router`` class, and no list
    elsewhere has to learn its name.

    Args:
        package: The package's dotted name (its ``__name__``).
        path: The package's ``__path__``.
    """
    for info in pkgutil.iter_modules(path):
        importlib.import_module(f"{package}.{info.name}")


class Registry(Generic[T]):
    """A named collection of factories of one kind.

    Args:
        kind: Human name of the extension kind, used in messages ("router", "dataset").
        returns: What every factory must build; :meth:`build` raises ``ContractError`` otherwise.
    """

    def __init__(self, kind: str, returns: type | None = None) -> None:
        self.kind = kind
        #: what every factory must build (a runtime-checkable Protocol or a class); checked in build
        self.returns = returns
        self._factories: dict[str, Callable[..., T]] = {}

    def __call__(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator registering a factory under ``name``."""

        def register(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories and self._factories[name] is not factory:
                raise ConfigError(
                    f"duplicate {self.kind} name {name!r}",
                    expected=f"a {self.kind} name not registered yet",
                    found=f"{name!r} already registered by {self._factories[name]!r}",
                    fix="pick another name",
                )
            self._factories[name] = factory
            return factory

        return register

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def get(self, name: str) -> Callable[..., T]:
        """Return the factory registered under ``name``.

        Raises:
            UnknownComponentError: Listing the known names and the closest match.
        """
        try:
            return self._factories[name]
        except KeyError:
            close = difflib.get_close_matches(name, self.names(), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UnknownComponentError(
                f"unknown {self.kind} {name!r}",
                expected=f"one of: {', '.join(self.names()) or '(none registered)'}",
                found=repr(name),
                fix=f"{hint}use one of the known {self.kind} names",
                details={"kind": self.kind, "name": name, "suggestion": close[:1]},
            ) from None

    def build(self, name: str, **kwargs: Any) -> T:
        """Build the component ``name`` and record its bound constructor arguments.

        Args:
            name: Registered name.
            **kwargs: Constructor arguments.

        Raises:
            UnknownComponentError: For an unknown name.
            ConfigError: For arguments the constructor does not take.
        """
        factory = self.get(name)
        try:
            bound = inspect.signature(factory).bind(**kwargs)
        except TypeError as exc:
            params = list(inspect.signature(factory).parameters)
            raise ConfigError(
                f"bad arguments for {self.kind} {name!r}: {exc}",
                expected=f"keyword arguments among {params}",
                found=f"{sorted(kwargs)}",
                fix=f"check the {self.kind}'s documented parameters",
            ) from None
        bound.apply_defaults()
        obj = factory(*bound.args, **bound.kwargs)
        if self.returns is not None and not isinstance(obj, self.returns):
            raise ContractError(
                f"{self.kind} {name!r} built the wrong kind of object",
                expected=f"an instance of {self.returns.__name__}",
                found=type(obj).__name__,
                fix=f"make the factory registered as {name!r} return a {self.returns.__name__}",
            )
        try:
            args = {k: _recordable(v) for k, v in bound.arguments.items() if k != "self"}
        except (TypeError, ValueError) as exc:
            raise ContractError(
                f"{self.kind} {name!r}: a constructor argument cannot be recorded ({exc})",
                expected="plain values (numbers, strings, lists, dicts, dataclasses) so the run can be rebuilt",
                found=", ".join(f"{k}={type(v).__name__}" for k, v in bound.arguments.items()),
                fix=f"pass the {self.kind}'s settings as plain values, or register a variant that builds the object",
            ) from None
        try:
            object.__setattr__(obj, _SPEC_ATTR, {"kind": self.kind, "name": name, "args": args})
        except (AttributeError, TypeError):
            pass  # objects without a __dict__ (functions built-ins) cannot carry a spec
        return obj

    def rebuild(self, spec: ComponentSpec) -> T:
        """Rebuild a component from a spec recorded by :meth:`build`."""
        if spec.get("kind") != self.kind:
            raise ConfigError(
                "spec of the wrong kind",
                expected=f"kind {self.kind!r}",
                found=repr(spec.get("kind")),
                fix=f"rebuild it with the {spec.get('kind')} registry",
            )
        return self.build(spec["name"], **spec.get("args", {}))

    @contextmanager
    def scoped(self, name: str, factory: Callable[..., T]) -> Iterator[None]:
        """Temporarily register ``factory`` (for tests and notebooks); restores on exit."""
        previous = self._factories.get(name)
        self._factories[name] = factory
        try:
            yield
        finally:
            if previous is None:
                self._factories.pop(name, None)
            else:
                self._factories[name] = previous
