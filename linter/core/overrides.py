"""Parse and format Hydra command-line overrides (``key=value``).

Hydra's own override parser (``hydra.core.override_parser``) is the reference for
everything in this module, but it is slow to import (~0.3 s) and to run (~0.4 ms
per override).  ``sapo-lint`` must start fast, so :func:`parse_override` first
tries a small, exact re-implementation of the common forms (the *fast path*) and
hands everything else to Hydra, which is imported lazily on first use.  This
module never imports hydra / omegaconf / antlr4 at import time.

Fast path (anything else goes to Hydra, including every error):

* key: ``[+|++|~]key[@package]`` where ``key`` is a config dot-path
  (``a.b.0.c``, segments may contain ``-`` and ``$``) or a config-group path
  (``hydra/launcher``), and ``package`` is a non-empty dot-path;
  ``~key`` may have no ``=value``;
* ``=`` followed by optional spaces / tabs (Hydra's ``EQUAL`` token swallows them);
* value: empty (``a=`` gives ``""``), an int / float / bool / null in every form
  Hydra's lexer accepts (``1_000``, ``+5``, ``.5``, ``5.``, ``1e-6``, ``-inf``,
  ``NaN``, ``TRUE``, ``Null``...), an unquoted string made of
  ``[A-Za-z0-9_-/.+%*@?|:$]`` (no whitespace, no backslash), several such
  separated by blanks (``uv -v run``: one string, trailing blanks dropped; not
  with a ``:`` next to a blank), a single- or
  double-quoted string (Hydra's escaping of backslashes before the quote
  character is reproduced) that does not contain ``${``, or a flat list
  ``[...]`` of such scalars with optional spaces / tabs around ``[``, ``,`` and
  ``]`` (except after an element ending in ``:``, whose COLON token keeps the
  blanks: ``[a: ]`` is ``["a: "]``), or a dict ``{key: value, ...}`` with optional
  spaces / tabs around ``{``, ``:``, ``,`` and ``}``, whose keys are unquoted
  primitives without blanks, possibly with escapes (``layers.\\{*\\}: {}``), and
  whose values are such scalars, flat lists and dicts.

The equivalence of the fast path and Hydra's parser is checked by a property
test (``tests/test_overrides.py``).
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

__all__ = [
    "MISSING",
    "OPS",
    "OverrideSyntaxError",
    "ParsedOverride",
    "format_override",
    "format_value",
    "parse_override",
    "parse_with_hydra",
]


class _MissingType:
    """Type of :data:`MISSING` (a singleton that survives copy and pickle)."""

    _instance: _MissingType | None = None

    def __new__(cls) -> _MissingType:  # noqa: PYI034 (a singleton)
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


#: Value of a bare ``~key`` override (delete, no value given).
MISSING: Any = _MissingType()

#: Hydra override type -> ``ParsedOverride.op``; prefixes per op.
OPS = ("set", "add", "force_add", "delete")
_PREFIX = {"set": "", "add": "+", "force_add": "++", "delete": "~"}
_OP_BY_PREFIX = {None: "set", "+": "add", "++": "force_add", "~": "delete"}
_OP_BY_HYDRA_TYPE = {
    "CHANGE": "set",
    "ADD": "add",
    "FORCE_ADD": "force_add",
    "DEL": "delete",
}


# --------------------------------------------------------------------------- #
# Result types
# --------------------------------------------------------------------------- #


def _same(a: Any, b: Any) -> bool:
    """Strict structural equality: types must match exactly (1 != 1.0 != True),
    NaN equals NaN, 0.0 and -0.0 differ, dict order is ignored."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if len(a) != len(b):
            return False
        b_items = list(b.items())
        for ka, va in a.items():
            for kb, vb in b_items:
                if _same(ka, kb):
                    if not _same(va, vb):
                        return False
                    break
            else:
                return False
        return True
    return bool(a == b)


def _freeze(v: Any) -> Any:
    """Hashable image of a value, consistent with :func:`_same`."""
    if isinstance(v, float):
        return ("float", "nan") if math.isnan(v) else ("float", v, math.copysign(1.0, v))
    if isinstance(v, list):
        return ("list", tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return ("dict", frozenset((_freeze(k), _freeze(x)) for k, x in v.items()))
    return (type(v).__name__, v)


class ParsedOverride(NamedTuple):
    """One parsed override.

    ``value`` is the value as Hydra's parser returns it, converted to plain
    Python (``int | float | bool | None | str | list | dict``); quoted strings
    become ``str``; interpolations (``${...}``) stay ``str`` exactly as Hydra
    returns them (OmegaConf resolves them later); a bare ``~key`` gives
    :data:`MISSING`.  For a sweep (``is_sweep``: ``a,b``, ``choice(...)``,
    ``range(...)``, ``interval(...)``, ``glob(...)``, or a sweep nested in a
    list/dict) ``value`` is the raw text after the first ``=``.

    Equality is strict: types must match (``1``, ``1.0`` and ``True`` differ),
    NaN equals NaN, and ``0.0`` differs from ``-0.0``.
    """

    op: str  # "set" | "add" (+) | "force_add" (++) | "delete" (~)
    key: str  # key_or_group, e.g. "actor_rollout_ref.actor.tau_pos" or "model_engine"
    package: str | None  # the part after @ (group@package=opt), else None
    value: Any
    is_sweep: bool = False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParsedOverride):
            return NotImplemented
        return (
            self.op == other.op
            and self.key == other.key
            and self.package == other.package
            and self.is_sweep == other.is_sweep
            and _same(self.value, other.value)
        )

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self.op, self.key, self.package, self.is_sweep, _freeze(self.value)))


class OverrideSyntaxError(ValueError):
    """An override Hydra's parser rejects.

    ``message`` is Hydra's message, ``column`` the 0-based offset in ``text``
    where Hydra located the error (best effort: for errors raised after parsing,
    e.g. a failing ``int(x)`` cast, it is the start of the value).
    """

    def __init__(self, message: str, column: int, text: str | None = None) -> None:
        self.message = message
        self.column = column
        self.text = text
        where = f"column {column}" if text is None else f"column {column} of {text!r}"
        super().__init__(f"{message} ({where})")

    def __reduce__(self) -> Any:
        return (type(self), (self.message, self.column, self.text))


# --------------------------------------------------------------------------- #
# Fast path: an exact re-implementation of the common subset of Hydra's grammar
# (hydra/grammar/OverrideLexer.g4 + OverrideParser.g4, hydra-core 1.3).
# --------------------------------------------------------------------------- #

_ID = r"[A-Za-z_][A-Za-z0-9_\-]*"  # ID
_KEY_SPECIAL = r"[A-Za-z_$][A-Za-z0-9_\-$]*"  # KEY_SPECIAL (a superset of ID)
_INT_UNSIGNED = r"(?:0|[1-9](?:_?[0-9])*)"
_SEGMENT = rf"(?:{_KEY_SPECIAL}|{_INT_UNSIGNED})"
_PACKAGE = rf"(?:{_SEGMENT}(?:\.{_SEGMENT})+|{_KEY_SPECIAL})"  # DOT_PATH | KEY_SPECIAL | ID
_GROUP = rf"{_ID}(?:/{_ID})+"  # ID (SLASH ID)+
_KEY = rf"(?:{_GROUP}|{_PACKAGE})"

_OVERRIDE_RE = re.compile(rf"(\+\+?|~)?({_KEY})(?:@({_PACKAGE}))?(?:(=)[ \t]*(.*))?", re.DOTALL)

# Tokens that make up an unquoted primitive when there is no whitespace and no
# backslash: ID, INT, FLOAT, BOOL, NULL, UNQUOTED_CHAR ([/\-+.$%*@?|]), COLON.
_UNQUOTED_RE = re.compile(r"[A-Za-z0-9_\-/.+%*@?|:$]+")
# Several such primitives separated by blanks (`uv -v run --frozen`, a command line verl passes on): Hydra joins
# the tokens' text, blanks included, into one string and drops trailing blanks.
_SPACED_RE = re.compile(r"[A-Za-z0-9_\-/.+%*@?|:$]+(?:[ \t]+[A-Za-z0-9_\-/.+%*@?|:$]+)+[ \t]*")
_COLON_BLANK_RE = re.compile(r"[ \t]:|:[ \t]")  # COLON takes its blanks along (WS? ':' WS?): left to Hydra
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT_FLOAT = rf"(?:{_INT_UNSIGNED}\.|(?:{_INT_UNSIGNED})?\.{_DIGITS})"
_EXPONENT_FLOAT = rf"(?:{_INT_UNSIGNED}|{_POINT_FLOAT})[eE][+-]?{_DIGITS}"
_INT_RE = re.compile(rf"[+-]?{_INT_UNSIGNED}")
_FLOAT_RE = re.compile(rf"[+-]?(?:{_EXPONENT_FLOAT}|{_POINT_FLOAT}|[Ii][Nn][Ff]|[Nn][Aa][Nn])")

# A dict key (dictKey) without blanks: the characters of ID, INT, FLOAT, BOOL, NULL and UNQUOTED_CHAR tokens (no
# backslash alone), and ESC pairs, each standing for the character it escapes (`layers.\{*\}`: `layers.{*}`).
_DICT_KEY_RE = re.compile(r"(?:[A-Za-z0-9_\-/.+%*@?|$]|\\[\\()\[\]{}:=,])+")
_ESC_PAIR_RE = re.compile(r"\\(.)")

# hydra._internal.grammar.utils._ESC_QUOTED_STR: backslashes before a quote.
_ESC_QUOTED = {"'": re.compile(r"\\+'"), '"': re.compile(r'\\+"')}


class _NotFast(Exception):
    """The text is outside the fast path; ask Hydra."""


def _unquoted_scalar(text: str) -> Any:
    """Value of an unquoted primitive matching ``_UNQUOTED_RE``.

    With no whitespace and no escapes, Hydra concatenates the tokens back to the
    original text, unless the whole text is a single INT / FLOAT / BOOL / NULL
    token (these rules come before ID in the lexer, so they win ties such as
    ``inf`` or ``true``).
    """
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT_RE.fullmatch(text):
        return float(text)
    if len(text) in (4, 5):
        low = text.lower()
        if low == "true":
            return True
        if low == "false":
            return False
        if low == "null":
            return None
    return text


def _quoted_end(text: str, start: int) -> int:
    """Index of the quote closing the QUOTED_VALUE token opened at ``start``:
    the first matching quote preceded by an even number of backslashes."""
    q = text[start]
    pos = start + 1
    while True:
        k = text.find(q, pos)
        if k < 0:
            raise _NotFast
        n = 0
        while k - 1 - n > start and text[k - 1 - n] == "\\":
            n += 1
        if n % 2 == 0:
            return k
        pos = k + 1


def _unquote(token: str) -> str:
    """Hydra's ``_unescape_quoted_string``: only backslashes preceding the quote
    character (or the closing quote) are un-escaped; the others are literal."""
    q = token[0]
    inner = token[1:-1]
    if "\\" not in inner:
        return inner
    trailing = len(inner) - len(inner.rstrip("\\"))  # even, before the closing quote
    body = _ESC_QUOTED[q].sub(lambda m: m.group(0)[1::2], inner)  # odd runs + quote
    if trailing:
        body = body[: len(body) - trailing] + "\\" * (trailing // 2)
    return body


def _quoted_value(text: str, start: int) -> tuple[str, int]:
    end = _quoted_end(text, start)
    token = text[start : end + 1]
    if "${" in token:
        raise _NotFast
    return _unquote(token), end + 1


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    return i


def _scalar_at(text: str, i: int) -> tuple[Any, int]:
    """A quoted or unquoted primitive starting at ``i``, and the index after it."""
    if text[i : i + 1] in ("'", '"'):
        return _quoted_value(text, i)
    m = _UNQUOTED_RE.match(text, i)
    if m is None:
        raise _NotFast
    end = m.end()
    if end < len(text) and text[end - 1] == ":" and text[end] in " \t":
        raise _NotFast  # VALUE_COLON (WS? ':' WS?) keeps the spaces: "a: "
    return _unquoted_scalar(m.group()), end


def _list_at(text: str, start: int) -> tuple[list[Any], int]:
    """A flat list opening at ``start`` (its elements primitives), and the index after its ``]``."""
    # BRACKET_OPEN: '[' WS?   COMMA: WS? ',' WS?   BRACKET_CLOSE: WS? ']'
    i = _skip_ws(text, start + 1)
    out: list[Any] = []
    if text.startswith("]", i):
        return out, i + 1
    while True:
        value, i = _scalar_at(text, i)
        out.append(value)
        i = _skip_ws(text, i)
        if text.startswith(",", i):
            i = _skip_ws(text, i + 1)
        elif text.startswith("]", i):
            return out, i + 1
        else:
            raise _NotFast


def _dict_key(text: str) -> Any:
    """A dict key matching ``_DICT_KEY_RE``: as an unquoted primitive (no COLON can be in it), or, with an escape,
    its tokens joined with each escape un-escaped (Hydra's ``_createPrimitive``)."""
    if "\\" in text:
        return _ESC_PAIR_RE.sub(r"\1", text)
    return _unquoted_scalar(text)


def _dict_at(text: str, start: int) -> tuple[dict[Any, Any], int]:
    """A dict opening at ``start``, its keys ``_DICT_KEY_RE``'s and its values primitives, flat lists and such
    dicts, and the index after its ``}``."""
    # BRACE_OPEN: '{' WS?   VALUE_COLON: WS? ':' WS?   COMMA: WS? ',' WS?   BRACE_CLOSE: WS? '}'
    i = _skip_ws(text, start + 1)
    out: dict[Any, Any] = {}
    if text.startswith("}", i):
        return out, i + 1
    while True:
        key = _DICT_KEY_RE.match(text, i)
        if key is None:
            raise _NotFast
        i = _skip_ws(text, key.end())
        if not text.startswith(":", i):
            raise _NotFast
        value, i = _element_at(text, _skip_ws(text, i + 1))
        out[_dict_key(key.group())] = value
        i = _skip_ws(text, i)
        if text.startswith(",", i):
            i = _skip_ws(text, i + 1)
        elif text.startswith("}", i):
            return out, i + 1
        else:
            raise _NotFast


def _element_at(text: str, i: int) -> tuple[Any, int]:
    """A dict's value starting at ``i`` (a primitive, a flat list or a dict), and the index after it."""
    if text.startswith("[", i):
        return _list_at(text, i)
    if text.startswith("{", i):
        return _dict_at(text, i)
    return _scalar_at(text, i)


def _fast_value(text: str) -> Any:
    if not text:
        return ""
    c = text[0]
    if c == "'" or c == '"':
        value, end = _quoted_value(text, 0)
    elif c == "[":
        value, end = _list_at(text, 0)
    elif c == "{":
        value, end = _dict_at(text, 0)
    elif _UNQUOTED_RE.fullmatch(text):
        return _unquoted_scalar(text)
    elif _SPACED_RE.fullmatch(text) and not _COLON_BLANK_RE.search(text):
        return text.rstrip(" \t")
    else:
        raise _NotFast
    if end != len(text):
        raise _NotFast
    return value


def _fast_parse(text: str) -> ParsedOverride | None:
    """The fast path: the parsed override, or None when ``text`` is outside it."""
    m = _OVERRIDE_RE.fullmatch(text)
    if m is None:
        return None
    prefix, key, package, equal, raw = m.groups()
    if package is not None and "_name_" in package:
        return None  # Hydra emits a deprecation warning for these: let it.
    if equal is None:
        if prefix != "~":
            return None  # missing '=': a syntax error, reported by Hydra
        return ParsedOverride("delete", key, package, MISSING)
    try:
        value = _fast_value(raw)
    except (_NotFast, ValueError):  # ValueError: int() of > 4300 digits, as Hydra
        return None
    return ParsedOverride(_OP_BY_PREFIX[prefix], key, package, value)


# --------------------------------------------------------------------------- #
# Hydra (reference) path
# --------------------------------------------------------------------------- #

_hydra_parser: Any = None


def _get_hydra_parser() -> Any:
    global _hydra_parser
    if _hydra_parser is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        _hydra_parser = OverridesParser.create()
    return _hydra_parser


class _NestedSweep(Exception):
    pass


def _plain(v: Any) -> Any:
    """Hydra's element value -> plain Python (QuotedString -> str, recursively)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {_plain(k): _plain(x) for k, x in v.items()}
    from hydra.core.override_parser.types import Glob, QuotedString, Sweep

    if isinstance(v, QuotedString):
        return v.text
    if isinstance(v, (Sweep, Glob)):
        raise _NestedSweep
    return v


def _error_column(text: str) -> int | None:
    """Re-run Hydra's lexer/parser with a listener that records where the first
    syntax error is reported (Hydra's own listener drops the position)."""
    from antlr4 import CommonTokenStream, InputStream
    from antlr4.error.ErrorListener import ErrorListener
    from hydra.grammar.gen.OverrideLexer import OverrideLexer
    from hydra.grammar.gen.OverrideParser import OverrideParser

    class _Stop(Exception):
        pass

    class _Recorder(ErrorListener):  # type: ignore[misc]
        position: tuple[int, int] | None = None

        def syntaxError(self, recognizer, offending, line, column, msg, e):
            self.position = (line, column)
            raise _Stop

    recorder = _Recorder()
    try:
        lexer = OverrideLexer(InputStream(text))
        lexer.removeErrorListeners()
        lexer.addErrorListener(recorder)
        parser = OverrideParser(CommonTokenStream(lexer))
        parser.removeErrorListeners()
        parser.addErrorListener(recorder)
        parser.override()
    except _Stop:
        pass
    except Exception:  # noqa: BLE001 (best effort only)
        return None
    if recorder.position is None:
        return None
    line, column = recorder.position
    lines = text.split("\n")
    return sum(len(s) + 1 for s in lines[: line - 1]) + column


def _value_start(text: str) -> int:
    i = text.find("=")
    return 0 if i < 0 else _skip_ws(text, i + 1)


def parse_with_hydra(text: str) -> ParsedOverride:
    """Parse one override with Hydra's parser (the reference).

    Raises :class:`OverrideSyntaxError` for anything Hydra's parser rejects
    (including errors raised while evaluating functions such as ``int(x)``).
    """
    parser = _get_hydra_parser()
    try:
        o = parser.parse_override(text)
    except Exception as e:  # noqa: BLE001 (HydraException, or e.g. ValueError from int())
        message = str(e) or type(e).__name__
        column = _error_column(text)
        if column is None:
            column = _value_start(text)
        raise OverrideSyntaxError(message, column, text) from None
    op = _OP_BY_HYDRA_TYPE[o.type.name]
    if o.value_type is None:  # bare ~key
        return ParsedOverride(op, o.key_or_group, o.package, MISSING)
    if o.is_sweep_override():
        return ParsedOverride(op, o.key_or_group, o.package, o.get_value_string(), True)
    try:
        value = _plain(o.value())
    except _NestedSweep:
        return ParsedOverride(op, o.key_or_group, o.package, o.get_value_string(), True)
    return ParsedOverride(op, o.key_or_group, o.package, value)


def parse_override(text: str) -> ParsedOverride:
    """Parse one override: the fast path when it applies, else Hydra's parser.

    Same result as :func:`parse_with_hydra` in all cases (property-tested).
    """
    parsed = _fast_parse(text)
    if parsed is not None:
        return parsed
    return parse_with_hydra(text)


# --------------------------------------------------------------------------- #
# Formatting
# --------------------------------------------------------------------------- #

# Strings that are safe unquoted (a run of ID / INT / FLOAT / UNQUOTED_CHAR /
# COLON tokens), with and without unquoted interpolations ``${...}``.
_PLAIN_INTERP_RE = re.compile(r"(?:[A-Za-z0-9_\-/.+%*@?|:$]|\$\{[^}]+\})+")
# Characters allowed in an unquoted dict key once Hydra's special characters
# (hydra._internal.grammar.utils._ESC) are backslash-escaped.
_KEY_ESC_RE = re.compile(r"[\\()\[\]{}:=, \t]")
_KEY_CHARS_RE = re.compile(r"[A-Za-z0-9_\-/.+%*@?|$\\()\[\]{}:=, \t]+")
# An interpolation opener with the backslashes right before it (OmegaConf). A match starts only where a run of
# backslashes does: tried from inside a run of 100,000, it took time quadratic in the run.
_OC_INTERP_RE = re.compile(r"(?<!\\)(\\*)\$\{")


def _oc_escape(s: str) -> str:
    r"""Escape ``${`` for OmegaConf so that it resolves to the literal text:
    ``k`` backslashes + ``${``  ->  ``2k+1`` backslashes + ``${``
    (OmegaConf's ESC_INTER token; other backslashes are kept as is)."""
    return _OC_INTERP_RE.sub(lambda m: "\\" * (2 * len(m.group(1)) + 1) + "${", s)


def _quote(s: str) -> str:
    """Quote ``s`` so that Hydra's QUOTED_VALUE un-escaping gives back ``s``
    (same algorithm as ``hydra.core.override_parser.types.QuotedString``)."""
    q = '"' if ("'" in s and '"' not in s) else "'"
    if "\\" not in s:
        return q + s.replace(q, "\\" + q) + q
    body = re.sub(  # from where a run of backslashes starts only, as `_OC_INTERP_RE`
        r"(?<!\\)(\\*)(" + q + r"|\Z)",
        lambda m: m.group(1) * 2 + ("\\" + q if m.group(2) else ""),
        s,
    )
    return q + body + q


def _format_str(s: str, allow_interpolation: bool) -> str:
    if "${" in s and not allow_interpolation:
        return _quote(_oc_escape(s))
    plain = _PLAIN_INTERP_RE if allow_interpolation else _UNQUOTED_RE
    if plain.fullmatch(s) and type(_unquoted_scalar(s)) is str:
        return s
    return _quote(s)


def _format_float(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if v in (math.inf, -math.inf):
        return "inf" if v > 0 else "-inf"
    return float.__repr__(v)


def _format_key(k: Any) -> str:
    if k is None or isinstance(k, (bool, int, float)):
        return _format_scalar(k)
    if not isinstance(k, str):
        raise TypeError(f"unsupported dict key type {type(k).__name__}: {k!r}")
    if not k or not _KEY_CHARS_RE.fullmatch(k):
        raise ValueError(
            f"dict key {k!r} cannot be written in a Hydra override: dict keys cannot "
            "be quoted, so they must be non-empty and use only ASCII letters, digits "
            "and _-/.+%*@?|$ (or ()[]{}:=, space, tab and backslash, which are escaped)"
        )
    if type(_unquoted_scalar(k)) is not str:
        raise ValueError(
            f"dict key {k!r} cannot be written in a Hydra override: it would be read "
            f"back as {_unquoted_scalar(k)!r} (dict keys cannot be quoted)"
        )
    return _KEY_ESC_RE.sub(lambda m: "\\" + m.group(), k)


def _format_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        return _format_float(v)
    raise TypeError(f"unsupported value type {type(v).__name__}: {v!r}")


def _format(v: Any, allow_interpolation: bool) -> str:
    if isinstance(v, str):
        return _format_str(v, allow_interpolation)
    if isinstance(v, list):
        return "[" + ",".join(_format(x, allow_interpolation) for x in v) + "]"
    if isinstance(v, dict):
        items = (f"{_format_key(k)}:{_format(x, allow_interpolation)}" for k, x in v.items())
        return "{" + ",".join(items) + "}"
    if v is MISSING:
        raise ValueError("MISSING has no value syntax; use format_override('delete', key, MISSING)")
    return _format_scalar(v)


def format_value(value: Any, *, allow_interpolation: bool = False) -> str:
    r"""Write ``value`` as the value part of an override.

    Supports ``str``, ``int``, ``float`` (incl. ``inf``/``-inf``/``nan``), ``bool``,
    ``None`` and nested ``list`` / ``dict`` of these.  Round trip::

        parse_with_hydra("k=" + format_value(v)).value == v

    holds for every such ``v`` whose strings contain no ``${``.  Strings stay
    unquoted when that reads back unchanged (``megatron``, ``/a/b.parquet``,
    ``hdfs://x``), anything else is single-quoted (double-quoted when the text
    contains ``'`` but no ``"``); quotes and backslashes are escaped as Hydra
    un-escapes them.

    Interpolations: Hydra's parser does not interpret ``${...}`` at all -- it
    returns the text, and OmegaConf resolves it when the override is applied.
    With ``allow_interpolation=False`` (default) every ``${`` is escaped for
    OmegaConf (``\${``, doubling any backslashes right before it), so the
    *composed config* holds exactly ``v``; Hydra's parser then returns the
    escaped text (e.g. ``'\${x}'`` -> ``\${x}``), not ``v``.  With
    ``allow_interpolation=True`` strings are written verbatim (``${...}``
    unquoted when possible), so the parser returns exactly ``v`` and OmegaConf
    will resolve the interpolations.

    Not expressible (ValueError): dict keys that are empty, that would read back
    as another type (``"1"``, ``"true"``, ``"null"``, ``"inf"``), or that contain
    characters other than ASCII letters/digits, ``_-/.+%*@?|$`` and the
    escapable ``()[]{}:=,``/space/tab/backslash (Hydra has no quoted dict keys).
    Every ``str`` value is expressible.  Other types raise TypeError.
    Caveat: OmegaConf reads the string ``"???"`` as its MISSING marker.
    """
    return _format(value, allow_interpolation)


def format_override(
    op: str,
    key: str,
    value: Any = MISSING,
    package: str | None = None,
    *,
    allow_interpolation: bool = False,
) -> str:
    """Write an override, e.g. ``format_override("add", "a.b", 1.2) == "+a.b=1.2"``.

    ``op`` is one of ``set`` / ``add`` / ``force_add`` / ``delete``; ``value``
    :data:`MISSING` (only for ``delete``) gives ``~key``.  See :func:`format_value`.
    """
    if op not in _PREFIX:
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    m = _OVERRIDE_RE.fullmatch(key)
    if m is None or m.group(2) != key:
        raise ValueError(f"invalid override key {key!r}")
    if package:
        m = _OVERRIDE_RE.fullmatch("k@" + package)
        if m is None or m.group(3) != package:
            raise ValueError(f"invalid package {package!r}")
    head = _PREFIX[op] + key + ("" if package is None else "@" + package)
    if value is MISSING:
        if op != "delete":
            raise ValueError(f"op {op!r} needs a value")
        return head
    return head + "=" + format_value(value, allow_interpolation=allow_interpolation)
