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
import math
import pkgutil
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from routerlab.agents.errors import ConfigError, ContractError, UnknownComponentError

__all__ = ["ComponentSpec", "Range", "Registry", "check_arguments", "component_spec", "import_submodules"]

T = TypeVar("T")
#: a registered factory, kept as it is by the decorator (a class stays that class for the type checker)
F = TypeVar("F", bound=Callable[..., Any])

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


@dataclass(frozen=True)
class Range:
    """A declared range of a numeric constructor argument, used as ``Annotated[float, Range(0, 1)]``.

    Attributes:
        low / high: Inclusive bounds (None: unbounded on that side).
    """

    low: float | None = None
    high: float | None = None

    def contains(self, value: float) -> bool:
        """True when ``value`` lies within the bounds."""
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def describe(self) -> str:
        """The bounds as text (``between 0 and 1``, ``>= 1``)."""
        if self.low is not None and self.high is not None:
            return f"between {self.low:g} and {self.high:g}"
        return f">= {self.low:g}" if self.low is not None else f"<= {self.high:g}"


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _matches(value: Any, tp: Any) -> bool | None:
    """Whether ``value`` fits the annotation ``tp``; None when the annotation cannot be checked.

    Only the shapes a constructor argument takes from a command line or a config file are
    checked (scalars, unions, literals and the outer container); anything else is trusted.
    """
    if tp is Any:
        return True
    origin = get_origin(tp)
    if origin is Annotated:
        return _matches(value, get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        verdicts = [_matches(value, arg) for arg in get_args(tp)]
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False
    if origin is Literal:
        return value in get_args(tp)
    if tp is None or tp is type(None):
        return value is None
    if tp is float:
        # an integer is a valid float (JSON "1" parses as int); a bool is not a number here
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp in (str, bool):
        return isinstance(value, tp)
    container = origin or tp
    if container in (tuple, list, dict, set, frozenset):
        return isinstance(value, container) or (container is tuple and isinstance(value, list))
    return None


def _ranges(tp: Any) -> list[Range]:
    if get_origin(tp) is Annotated:
        return [m for m in get_args(tp)[1:] if isinstance(m, Range)]
    if get_origin(tp) is Union or get_origin(tp) is types.UnionType:
        return [r for arg in get_args(tp) for r in _ranges(arg)]
    return []


#: ranges of arguments that mean the same in every component that takes them, applied when the
#: component declares none (a negative fix budget or completion budget is never meant, and an
#: unbounded one reached the provider: ``max_tokens = 2**63`` was forwarded as it was)
COMMON_RANGES: dict[str, Range] = {
    "fix_budget": Range(low=0, high=20),
    "max_tokens": Range(low=1, high=32_768),
    "k": Range(low=1, high=1_000),
}


def check_arguments(kind: str, name: str, factory: Callable[..., Any], arguments: dict[str, Any]) -> None:
    """Check constructor arguments against the factory's type hints and declared ranges.

    A value of the wrong type (``threshold="abc"`` for a ``float``) would otherwise build a
    component that crashes on every example; here it is refused before anything runs.

    Args:
        kind: The registry's kind (``router``), for the message.
        name: The registered name.
        factory: The class or function that builds the component.
        arguments: The bound arguments (defaults included).

    Raises:
        ConfigError: Naming the component, the argument, the expected type or range and the value.
    """
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception:  # unresolvable forward references: nothing can be checked
        return
    for arg, value in arguments.items():
        tp = hints.get(arg)
        if tp is None:
            continue
        ok = _matches(value, tp)
        if ok is False:
            raise ConfigError(
                f"bad value for {kind} {name!r} argument {arg!r}",
                expected=f"{arg}: {_type_name(tp)}",
                found=f"{value!r} ({type(value).__name__})",
                fix=f"give {arg} a {_type_name(tp)} value (see the {kind}'s documented parameters)",
                details={"kind": kind, "name": name, "argument": arg},
            )
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not math.isfinite(value):
            # NaN compares false with every bound, so no range would catch it; inf is no setting
            raise ConfigError(
                f"bad value for {kind} {name!r} argument {arg!r}",
                expected=f"{arg}: a finite number",
                found=repr(value),
                fix=f"pass a finite number for {arg}",
                details={"kind": kind, "name": name, "argument": arg},
            )
        ranges = _ranges(tp) or ([COMMON_RANGES[arg]] if arg in COMMON_RANGES else [])
        for rng in ranges:
            if number and not rng.contains(value):
                raise ConfigError(
                    f"out-of-range value for {kind} {name!r} argument {arg!r}",
                    expected=f"{arg} {rng.describe()}",
                    found=repr(value),
                    fix=f"pass a value {rng.describe()}",
                    details={"kind": kind, "name": name, "argument": arg},
                )


def component_spec(component: Any) -> ComponentSpec:
    """Return the recorded spec of a component built through a registry.

    Args:
        component: An object returned by :meth:`Registry.build`.

    Returns:
        The ``{"kind", "name", "args"}`` mapping recorded at build time.

    Raises:
        ConfigError: If the object was not built through a registry.
    """
    spec: ComponentSpec | None = getattr(component, _SPEC_ATTR, None)
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

    ``T`` is what a factory builds: ``Registry[Router]`` holds router classes; a registry of
    functions (schema views, framings...) is typed by what the functions return.

    Args:
        kind: Human name of the extension kind, used in messages ("router", "dataset").
        returns: What every factory must build; :meth:`build` raises ``ContractError`` otherwise.
        name_attr: Attribute of a registered class that the decorator sets to its registry name
            (``"name"`` for routers and scorers), so the name is written once, in the decorator.
            None: the registry sets nothing.
    """

    def __init__(self, kind: str, returns: type | None = None, name_attr: str | None = None) -> None:
        self.kind = kind
        #: what every factory must build (a runtime-checkable Protocol or a class); checked in build
        self.returns = returns
        self.name_attr = name_attr
        self._factories: dict[str, Callable[..., T]] = {}

    def __call__(self, name: str) -> Callable[[F], F]:
        """Decorator registering a factory under ``name``.

        With ``name_attr`` set, a class gets ``name`` as that attribute (``RulesRouter.name ==
        "rules"``), on the class itself so a subclass registered under another name keeps its own.

        Raises:
            ConfigError: For a name already registered by another factory.
            ContractError: For a class that already carries another name (written twice, and
                differently), or one class registered under two names.
        """

        def register(factory: F) -> F:
            if name in self._factories and self._factories[name] is not factory:
                raise ConfigError(
                    f"duplicate {self.kind} name {name!r}",
                    expected=f"a {self.kind} name not registered yet",
                    found=f"{name!r} already registered by {self._factories[name]!r}",
                    fix="pick another name",
                )
            if self.name_attr is not None and inspect.isclass(factory):
                self._set_name(factory, name)
            self._factories[name] = factory
            return factory

        return register

    def _set_name(self, cls: type, name: str) -> None:
        """Give ``cls`` its registry name as ``self.name_attr``, refusing a second, different one."""
        attr = str(self.name_attr)
        # only the class's own attribute counts: an inherited name is the parent's, not this one's
        own = cls.__dict__.get(attr)
        if own is not None and own != name:
            taken = [n for n, f in self._factories.items() if f is cls]
            found = f"registered as {taken[0]!r}" if taken else f"{attr} = {own!r} in its body"
            raise ContractError(
                f"{self.kind} class {cls.__name__} named twice",
                expected=f"one name per {self.kind} class: {name!r}, from the decorator",
                found=found,
                fix=f"delete the {attr} = ... line (the decorator sets it), or subclass to register a variant",
            )
        setattr(cls, attr, name)

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
            ConfigError: For arguments the constructor does not take, or values that do not fit
                its type hints or declared ranges.
        """
        factory = self.get(name)
        try:
            bound = inspect.signature(factory).bind(**kwargs)
        except TypeError as exc:
            params = list(inspect.signature(factory).parameters)
            # a typo (hybrid.treshold) is the usual cause: name the parameter that was meant
            guesses = {
                k: close[0]
                for k in sorted(kwargs)
                if k not in params and (close := difflib.get_close_matches(k, params, n=1))
            }
            hint = "".join(f"did you mean {g!r} for {k!r}? " for k, g in guesses.items())
            raise ConfigError(
                f"bad arguments for {self.kind} {name!r}: {exc}",
                expected=f"keyword arguments among {params}",
                found=f"{sorted(kwargs)}",
                fix=f"{hint}check the {self.kind}'s documented parameters",
                details={"suggestions": guesses},
            ) from None
        bound.apply_defaults()
        check_arguments(self.kind, name, factory, dict(bound.arguments))
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
        with self.restoring(name):
            self._factories[name] = factory
            yield

    @contextmanager
    def restoring(self, *names: str) -> Iterator[None]:
        """Put ``names`` back as they were on exit: unregistered, or under their factory then.

        For tests and notebooks that register (or lift) components by name. Only these names are
        put back: a component registered meanwhile by a module's first import stays, as the module
        will not register it again (restoring a snapshot of the whole registry dropped those and
        left later code an empty registry).
        """
        before = {name: self._factories.get(name) for name in names}
        try:
            yield
        finally:
            for name, factory in before.items():
                if factory is None:
                    self._factories.pop(name, None)
                else:
                    self._factories[name] = factory
