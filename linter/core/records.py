"""Frozen keyword-only records, as `@dataclass(frozen=True, kw_only=True)` makes them, without generating code.

A dataclass is defined by compiling its `__init__`, `__eq__`, `__hash__`, `__repr__`, `__setattr__` and
`__delattr__` from source: about 3 ms each on a busy 2-core machine, so the 29 problem records of `core.problems`
alone were a tenth of a one-script lint. A `Record` subclass lists its fields as annotations (defaults as class
attributes) and shares one implementation of each method, found by name at run time.
"""

from __future__ import annotations

from typing import Any

_NO_DEFAULT = object()


class Record:
    """A base for immutable, hashable records compared by class and field values (`__fields__`: the annotated
    names of the class and its bases, base fields first; a field's default is its class attribute)."""

    __fields__: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name in cls.__dict__.get("__annotations__", {}) if not name.startswith("_")]
        cls.__fields__ = (*(f for f in cls.__fields__ if f not in own), *own)

    def __init__(self, **values: Any) -> None:
        for name in self.__fields__:
            value = values.pop(name, getattr(type(self), name, _NO_DEFAULT))
            if value is _NO_DEFAULT:
                raise TypeError(f"{type(self).__name__}() missing keyword argument: '{name}'")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments: {', '.join(values)}")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__fields__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__fields__)})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field '{name}': {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field '{name}': {type(self).__name__} is frozen")

    def replace(self, **changes: Any):
        """A copy with `changes` (as `dataclasses.replace`)."""
        return type(self)(**{**{n: getattr(self, n) for n in self.__fields__}, **changes})
