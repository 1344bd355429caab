"""Tests for linter.overrides: the fast path must agree with Hydra's parser,
and format_value must round-trip through Hydra's parser (and OmegaConf)."""

from __future__ import annotations

import copy
import math
import pickle
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from sapo_toolkit.linter.core.overrides import (
    MISSING,
    OverrideSyntaxError,
    ParsedOverride,
    _fast_parse,
    format_override,
    format_value,
    parse_override,
    parse_with_hydra,
)

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

# Hydra warns about `group@pkg._name_` (deprecated); some generated packages have it.
pytestmark = pytest.mark.filterwarnings("ignore:In override .*_name_ keyword is deprecated")

# --------------------------------------------------------------------------- #
# Strategies: override strings
# --------------------------------------------------------------------------- #

# Keys (DEFAULT_MODE of Hydra's lexer): dot-paths, $-keys, int segments, groups.
_id = st.from_regex(r"[A-Za-z_][A-Za-z0-9_\-]{0,7}", fullmatch=True)
_key_special = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_\-$]{0,5}", fullmatch=True)
_int_seg = st.from_regex(r"0|[1-9](_?[0-9]){0,3}", fullmatch=True)
_segment = st.one_of(
    _id,
    _key_special,
    _int_seg,
    st.sampled_from(
        [
            "actor_rollout_ref",
            "actor",
            "megatron",
            "tau_pos",
            "policy_loss",
            "trainer",
            "data",
        ]
    ),
)
_dot_path = st.lists(_segment, min_size=2, max_size=5).map(".".join)
_package = st.one_of(_id, _key_special, _dot_path)
_group = st.lists(_id, min_size=2, max_size=3).map("/".join)
valid_key = st.one_of(_package, _group)
near_miss_key = st.one_of(
    st.sampled_from(
        [
            "",
            "a..b",
            "a.",
            ".a",
            "1",
            "01",
            "a.01",
            "a b",
            " a",
            "a ",
            "a:b",
            "a/b.c",
            "a/$b",
            "$a/b",
            "é",
            "a.é",
            "-a",
            "a.-b",
            "a.1_",
            "a.1__0",
            "a.0_1",
            "a\\.b",
            "a#b",
            "a'b",
            "a,b",
            "a[0]",
            "hydra/",
            "/a",
        ]
    ),
    st.text(alphabet="ab1_.$-/@:+~ ", max_size=6),
)

_prefix = st.sampled_from(["", "", "", "+", "++", "~"])
near_miss_prefix = st.sampled_from(["+++", "~+", "+~", "~~", " ", "-", "+ "])
near_miss_package = st.sampled_from(["", "a/b", "a b", "_name_", "x._name_", "1", "a..b", "é"])
_equal = st.sampled_from(["=", "=", "=", "= ", "=\t", "=  \t "])
near_miss_equal = st.sampled_from(["", " =", "==", " = "])

# Values (VALUE_MODE).
_INT_RE = r"[+-]?(0|[1-9](_?[0-9]){0,4})"
_DIGITS = r"[0-9](_?[0-9]){0,3}"
_IU = r"(0|[1-9](_?[0-9]){0,3})"
_POINT = rf"({_IU}\.|({_IU})?\.{_DIGITS})"
_FLOAT_RE = rf"[+-]?(({_IU}|{_POINT})[eE][+-]?{_DIGITS}|{_POINT}|[Ii][Nn][Ff]|[Nn][Aa][Nn])"
SAFE_CHARS = "abzAZ019_-/.+%*@?|:$"

unquoted_scalar = st.one_of(
    st.from_regex(_INT_RE, fullmatch=True),
    st.integers().map(str),
    st.from_regex(_FLOAT_RE, fullmatch=True),
    st.floats().map(repr),
    st.from_regex(r"[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Nn][Uu][Ll][Ll]", fullmatch=True),
    st.text(alphabet=SAFE_CHARS, min_size=1, max_size=12),
    _id,
    st.sampled_from(
        [
            "megatron",
            "fsdp",
            "/a/b.parquet",
            "hdfs://x/y",
            "infinity",
            "-infx",
            "nullx",
            "truex",
            "1e",
            "1.2.3",
            "1_",
            "0_1",
            "00",
            "01",
            "+",
            "-",
            ".",
            "+.",
            "-.e5",
            "1__0",
            "1_000.",
            "1e1_0",
            ":",
            "a:b",
            "$x",
            "$",
            "???",
            "+-1",
            "1.5x",
            "Infinity",
        ]
    ),
)


def _raw_quoted(q: str) -> st.SearchStrategy[str]:
    """A quote, arbitrary content biased to quotes/backslashes, the same quote.
    Often valid, sometimes not (an unescaped quote inside, odd trailing \\)."""
    piece = st.sampled_from(["a", " ", "'", '"', "\\", "\\\\", ",", "=", "é", "\n", "{", "}", "$"])
    return st.lists(piece, max_size=8).map(lambda c: q + "".join(c) + q)


def _well_quoted() -> st.SearchStrategy[str]:
    """A correctly escaped quoted string, escaped by Hydra itself (QuotedString)."""
    from hydra.core.override_parser.types import Quote, QuotedString

    text = st.text(
        alphabet=st.sampled_from(list("ab '\"\\,=[]{}()~#$é\t") + ["\n", "😀"]),
        max_size=10,
    ).filter(lambda t: "${" not in t)
    quote = st.sampled_from([Quote.single, Quote.double])
    return st.builds(lambda t, q: QuotedString(text=t, quote=q).with_quotes(), text, quote)


quoted = st.one_of(_well_quoted(), _raw_quoted("'"), _raw_quoted('"'))
fast_scalar = st.one_of(unquoted_scalar, quoted)
_ws = st.sampled_from(["", "", "", " ", "\t", "  "])


@st.composite
def flat_list(draw: st.DrawFn, element: st.SearchStrategy[str] = fast_scalar) -> str:
    items = draw(st.lists(element, max_size=4))
    seps = [draw(_ws) + "," + draw(_ws) for _ in items[1:]]
    body = items[0] if items else ""
    for sep, item in zip(seps, items[1:], strict=True):
        body += sep + item
    return "[" + draw(_ws) + body + draw(_ws) + "]"


# Dict keys (dictKey) without blanks: unquoted primitives, with escapes (`layers.\\{*\\}`) among their characters.
# Not NaN: two NaN keys are two entries, which a comparison of dicts cannot pair.
dict_key = st.one_of(
    st.lists(
        st.one_of(
            st.text(alphabet="abzAZ019_-/.+%*@?|$eE", min_size=1, max_size=4),
            st.sampled_from(["\\{", "\\}", "\\\\", "\\(", "\\)", "\\[", "\\]", "\\:", "\\=", "\\,"]),
        ),
        min_size=1,
        max_size=3,
    ).map("".join),
    unquoted_scalar.filter(lambda k: ":" not in k),
).filter(lambda k: k.lstrip("+-").lower() != "nan")


@st.composite
def dict_of(draw: st.DrawFn, value: st.SearchStrategy[str]) -> str:
    """`{key: value, ...}` with blanks drawn around `{`, `:`, `,` and `}`."""
    pairs = [k + draw(_ws) + ":" + draw(_ws) + v for k, v in draw(st.lists(st.tuples(dict_key, value), max_size=3))]
    body = pairs[0] if pairs else ""
    for pair in pairs[1:]:
        body += draw(_ws) + "," + draw(_ws) + pair
    return "{" + draw(_ws) + body + draw(_ws) + "}"


def nested_dict(scalar: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A dict whose values are scalars, flat lists and such dicts."""
    return dict_of(st.recursive(st.one_of(scalar, flat_list(scalar)), dict_of, max_leaves=6))


fast_value = st.one_of(st.just(""), unquoted_scalar, quoted, flat_list(), nested_dict(fast_scalar))
# Strictly inside the fast-path grammar (no raw, possibly malformed, quoted strings).
strict_scalar = st.one_of(unquoted_scalar, _well_quoted())
strict_value = st.one_of(st.just(""), strict_scalar, flat_list(strict_scalar), nested_dict(strict_scalar))

near_miss_value = st.one_of(
    st.sampled_from(
        [
            "${oc.env:X}",
            "${a.b}",
            "x${y}z",
            "'${x}'",
            '"${x}"',
            "${",
            "${a.${b}}",
            "$\\{x}",
            "[1,[2]]",
            "[[]]",
            "{a:1}",
            "{}",
            "{a:b:c}",
            "{1:2,true:3}",
            "{'a':1}",
            "a,b",
            "1,2",
            "[a],[b]",
            "choice(a,b)",
            "range(1,3)",
            "interval(0,1)",
            "glob(*)",
            "tag(x,choice(1,2))",
            "[choice(1,2)]",
            "{x:range(1,3)}",
            "int(1.5)",
            "int(x)",
            "str(1)",
            "sort([3,1])",
            "shuffle([1,2])",
            "bool(x)",
            "float(1)",
            "(",
            ")",
            "[a,]",
            "[,]",
            "[ , ]",
            "[a",
            "a]",
            "'x' ",
            "'x'y",
            "'a'b'",
            "'\\'",
            "a b",
            "1 2",
            "1 ",
            " 1",
            "a\\ b",
            "a\\,b",
            "\\",
            "a=b",
            "~/x",
            "é",
            "#",
            "!",
            "a\nb",
            "'a",
            '"a',
            "",
        ]
    ),
    st.text(alphabet=list("ab1_.$-+:@/=,'\"\\[]{}() \te~#é"), max_size=12),
    fast_scalar.map(lambda v: v + " "),
    fast_scalar.map(lambda v: " " + v),
    st.tuples(fast_scalar, fast_scalar).map(",".join),
    st.tuples(fast_scalar, fast_scalar).map(" ".join),
    flat_list(st.one_of(fast_scalar, flat_list())),
    flat_list().map(lambda v: v + " "),
    flat_list(st.sampled_from(["${x}", "a b", "{a:1}", "", "a,", "(", "\\,"])),
    st.sampled_from(
        [
            "{a:1} ",
            "{a:}",
            "{:1}",
            "{,}",
            "{a:1,}",
            "{a b:1}",
            "{a\\ b:1}",
            "{a\\q:1}",
            "{a\\:1}",
            "{'a':1}",
            "{a:'${x}'}",
            "{a:${x}}",
            "{a:[a: ]}",
            "{a:b: c}",
            "{a:b :c}",
            "{a:{b:1}",
            "{a:1}}",
            "{a:1},{b:2}",
            "{a=1}",
            "{a:1 2}",
        ]
    ),
    dict_of(st.sampled_from(["${x}", "a b", "", "a,", "(", "\\,", "a:", "choice(1,2)", "[[1]]"])),
)


def _mostly(ok: st.SearchStrategy, bad: st.SearchStrategy, n_ok: int, near_misses: bool):
    """``ok`` about n_ok times out of n_ok + 1 (else ``bad``), or always ``ok``."""
    if not near_misses:
        return ok
    # (one_of() would de-duplicate repeated branches; sampled_from() keeps weights.)
    return st.sampled_from([True] * n_ok + [False]).flatmap(lambda good: ok if good else bad)


@st.composite
def override_strings(draw: st.DrawFn, near_misses: bool = True) -> str:
    """Overrides from the fast-path grammar, with (optionally) near misses mixed in
    (without them, strictly inside the grammar: every string is a valid override)."""
    prefix = draw(_mostly(_prefix, near_miss_prefix, 12, near_misses))
    key = draw(_mostly(valid_key, near_miss_key, 12, near_misses))
    pkg = draw(
        _mostly(
            st.one_of(st.none(), st.none(), st.none(), _package),
            near_miss_package,
            20,
            near_misses,
        )
    )
    head = prefix + key + ("" if pkg is None else "@" + pkg)
    if prefix == "~" and draw(st.booleans()):
        return head  # ~key without a value
    equal = draw(_mostly(_equal, near_miss_equal, 20, near_misses))
    value = draw(_mostly(fast_value, near_miss_value, 2, near_misses) if near_misses else strict_value)
    return head + equal + value


def _outcome(fn, s):
    try:
        return ("ok", fn(s))
    except OverrideSyntaxError:
        return ("error", None)


# --------------------------------------------------------------------------- #
# Fast path == Hydra
# --------------------------------------------------------------------------- #


@settings(max_examples=500, **SETTINGS)
@given(override_strings())
@example("a= 1")
@example("a=1 ")
@example("a='x' ")
@example("=1")
@example("a@=1")
@example("a=[ ]")
@example("a='\\\\'")
@example("a='a\\'b'")
@example('a="\\""')
@example("a.b c=1")
@example("~a=")
@example("A=[0,: ]")
@example("a=[a :b]")
@example("+a.b={model.visual.blocks.\\{*\\}:{},lm_head:{}}")
@example("a={1:a,1.0:b,true:c}")
def test_parse_override_matches_hydra(s: str) -> None:
    fast = _fast_parse(s)
    event("fast path" if fast is not None else "hydra")
    ref = _outcome(parse_with_hydra, s)
    if ref[0] == "error":
        assert fast is None, f"fast path accepted {s!r}, Hydra rejects it"
    elif fast is not None:
        assert fast == ref[1], (s, fast, ref[1])
    assert _outcome(parse_override, s) == ref


@settings(max_examples=500, **SETTINGS)
@given(
    st.lists(st.text(alphabet="ab1_.$-+:@/|%*?e", min_size=1, max_size=5), min_size=2, max_size=4),
    st.lists(st.sampled_from([" ", "\t", "  ", " \t"]), min_size=4, max_size=4),
)
@example(["uv", "-v", "run", "--frozen"], [" ", " ", " ", ""])
@example(["a", ":"], [" ", "\t", "", ""])
def test_blank_separated_primitives_take_the_fast_path_with_hydras_value(tokens, blanks) -> None:
    """A command line as a value (`py_executable=uv -v run --frozen`, verl's uv launchers) is one string in
    Hydra; the fast path gives the same, or leaves it to Hydra (a ':' next to a blank)."""
    s = "k=" + "".join(t + b for t, b in zip(tokens, blanks, strict=False))
    ref = _outcome(parse_with_hydra, s)
    fast = _fast_parse(s)
    if fast is None:
        assert re.search(r"[ \t]:|:[ \t]", s), s
    else:
        assert ref == ("ok", fast), (s, fast, ref)


@settings(max_examples=200, **SETTINGS)
@given(override_strings(near_misses=False))
def test_fast_path_covers_its_grammar(s: str) -> None:
    """Strings from the fast-path grammar that Hydra accepts are handled by the
    fast path itself (no silent fallback), with Hydra's result."""
    ref = parse_with_hydra(s)  # the grammar only generates valid overrides
    fast = _fast_parse(s)
    if fast is None:
        # Left to Hydra: '_name_' packages (Hydra warns), and a ':' followed by
        # blanks in a list (the COLON token keeps them: "[a: ]" -> ["a: "]).
        assert "_name_" in s or re.search(r":[ \t]", s), s
        return
    assert fast == ref


# --------------------------------------------------------------------------- #
# format_value round trip
# --------------------------------------------------------------------------- #

_tricky_str = st.sampled_from(
    [
        "",
        "1",
        "-1",
        "1.0",
        "1e-6",
        "inf",
        "-inf",
        "nan",
        "NaN",
        "true",
        "False",
        "null",
        "NULL",
        "megatron",
        "/a/b.parquet",
        "hdfs://x",
        "a b",
        " a",
        "a ",
        "'",
        '"',
        "\\",
        "\\\\",
        "'\\",
        "a\\",
        "${x}",
        "\\${x}",
        "\\\\${x}",
        "$${x}",
        "${x",
        "${a.${b}}",
        "$",
        "{",
        "}",
        ",",
        "=",
        "a,b",
        "[1]",
        "{a:1}",
        "choice(a)",
        "é",
        "😀",
        "\n",
        "\t",
        "???",
        "it's",
        'say "hi"',
        "'\"",
        "${oc.env:X,default}",
    ]
)
scalar_values = st.one_of(
    st.text(),
    st.text(alphabet=list("ab1 '\"\\${},:=.-+"), max_size=10),
    _tricky_str,
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
)
dict_keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: k.lower() not in ("true", "false", "null", "inf", "nan")
)
values = st.recursive(
    scalar_values,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(dict_keys, children, max_size=4),
    max_leaves=12,
)


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)


def _same(a, b) -> bool:
    return ParsedOverride("set", "k", None, a) == ParsedOverride("set", "k", None, b)


def _composed(parsed_value):
    """What OmegaConf makes of the parsed value once Hydra applies the override."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.create({"k": parsed_value}), resolve=True)["k"]


@settings(max_examples=300, **SETTINGS)
@given(values)
def test_format_value_round_trips(v) -> None:
    text = "k=" + format_value(v)
    parsed = parse_with_hydra(text)
    assert parse_override(text) == parsed
    assert not parsed.is_sweep
    if not any("${" in s for s in _strings(v)):
        assert _same(parsed.value, v), (v, text, parsed.value)
    # Strings with '${' are escaped for OmegaConf: the composed config holds v.
    assert _same(_composed(parsed.value), v), (v, text, parsed.value)


@settings(max_examples=200, **SETTINGS)
@given(values)
def test_format_value_with_interpolations_round_trips_exactly(v) -> None:
    text = "k=" + format_value(v, allow_interpolation=True)
    parsed = parse_with_hydra(text)
    assert _same(parsed.value, v), (v, text, parsed.value)
    assert parse_override(text) == parsed


@settings(max_examples=100, **SETTINGS)
@given(
    op=st.sampled_from(["set", "add", "force_add", "delete"]),
    key=valid_key,
    package=st.one_of(st.none(), _package.filter(lambda p: "_name_" not in p)),
    value=values.filter(lambda v: not any("${" in s for s in _strings(v))),
)
def test_format_override_round_trips(op, key, package, value) -> None:
    text = format_override(op, key, value, package)
    assert parse_override(text) == ParsedOverride(op, key, package, value)
    assert parse_with_hydra(text) == ParsedOverride(op, key, package, value)


def test_format_value_readability() -> None:
    assert format_value("megatron") == "megatron"
    assert format_value("/a/b.parquet") == "/a/b.parquet"
    assert format_value("hdfs://x/y") == "hdfs://x/y"
    assert format_value(["/a.parquet", "/b.parquet"]) == "[/a.parquet,/b.parquet]"
    assert format_value({"a": 1, "b": [True, None]}) == "{a:1,b:[true,null]}"
    assert format_value(1.2) == "1.2"
    assert format_value(1e-6) == "1e-06"
    assert format_value(float("-inf")) == "-inf"
    assert format_value("1") == "'1'"
    assert format_value("true") == "'true'"
    assert format_value("null") == "'null'"
    assert format_value("") == "''"
    assert format_value("a b") == "'a b'"
    assert format_value("it's") == '"it\'s"'
    assert format_value("a\\") == "'a\\\\'"
    assert format_value("${x}") == "'\\${x}'"
    assert format_value("${oc.env:X}", allow_interpolation=True) == "${oc.env:X}"
    assert format_override("delete", "trainer.foo", MISSING) == "~trainer.foo"
    assert format_override("add", "a.b", 1.2) == "+a.b=1.2"
    assert format_override("set", "model_engine", "megatron") == "model_engine=megatron"
    assert format_override("set", "db", "mysql", package="backup") == "db@backup=mysql"


def test_format_value_special_dict_keys() -> None:
    v = {"a b": 1, "x:y": 2, "(": 3, "a\\b": 4, "$": 5, "1a": 6, "-": 7}
    assert parse_with_hydra("k=" + format_value(v)).value == v
    for key in ["1", "true", "null", "inf", "", "a'b", "é", "a\nb"]:
        with pytest.raises(ValueError, match="dict key"):
            format_value({key: 1})
    assert parse_with_hydra("k=" + format_value({1: "a", False: "b"})).value == {
        1: "a",
        False: "b",
    }


def test_format_errors() -> None:
    with pytest.raises(TypeError):
        format_value((1, 2))
    with pytest.raises(TypeError):
        format_value(b"x")
    with pytest.raises(ValueError):
        format_value(MISSING)
    with pytest.raises(ValueError):
        format_override("set", "a", MISSING)
    with pytest.raises(ValueError):
        format_override("set", "a..b", 1)
    with pytest.raises(ValueError):
        format_override("frob", "a", 1)


# --------------------------------------------------------------------------- #
# Examples users rely on
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("parse", [parse_override, parse_with_hydra])
def test_examples(parse) -> None:
    o = parse("+actor_rollout_ref.actor.policy_loss.tau_pos=1.2")
    assert o == ParsedOverride("add", "actor_rollout_ref.actor.policy_loss.tau_pos", None, 1.2)
    assert type(o.value) is float

    assert parse("~trainer.foo") == ParsedOverride("delete", "trainer.foo", None, MISSING)
    assert parse("~trainer.foo").value is MISSING
    assert parse("~trainer.foo=1") == ParsedOverride("delete", "trainer.foo", None, 1)
    assert parse("++a.b=x") == ParsedOverride("force_add", "a.b", None, "x")
    assert parse("model_engine=megatron") == ParsedOverride("set", "model_engine", None, "megatron")
    assert parse("hydra/launcher@hydra.launcher=basic") == ParsedOverride(
        "set", "hydra/launcher", "hydra.launcher", "basic"
    )
    assert parse("data.train_files=['/a.parquet','/b.parquet']").value == [
        "/a.parquet",
        "/b.parquet",
    ]
    assert parse("data.train_files=\"['/x']\"").value == "['/x']"
    assert parse("a=${oc.env:X}").value == "${oc.env:X}"
    assert parse("a='${x}'").value == "${x}"
    assert parse("a= 1").value == 1
    assert parse("a=1 ").value == 1
    assert parse("a=").value == ""
    assert parse("a=TRUE").value is True
    assert parse("a=NULL").value is None
    assert parse("a=1_000").value == 1000
    assert parse("a=01").value == "01"
    assert parse("a=-inf").value == -math.inf
    assert math.isnan(parse("a=NaN").value)
    assert parse("a=NaN") == parse("a=nan")
    assert parse("a=[1,{b:'c'}]").value == [1, {"b": "c"}]

    sweep = parse("a=1,2")
    assert sweep.is_sweep and sweep.value == "1,2"
    assert parse("a=choice(1,2)").is_sweep
    assert parse("a=range(1,3)").is_sweep
    assert parse("a=[choice(1,2)]").is_sweep
    assert not parse("a=int(1.5)").is_sweep and parse("a=int(1.5)").value == 1

    with pytest.raises(OverrideSyntaxError) as info:
        parse("a.b c=1")
    assert info.value.column == 3
    assert "token recognition error" in info.value.message
    with pytest.raises(OverrideSyntaxError) as info:
        parse("a=[1,2] ")
    assert info.value.column == 7
    with pytest.raises(OverrideSyntaxError) as info:
        parse("a")
    assert info.value.column == 1
    for bad in ["a..b=1", "a=b=c", "a='x", "+a", "a=é", "a='x' "]:
        with pytest.raises(OverrideSyntaxError):
            parse(bad)


def test_value_objects() -> None:
    nan = ParsedOverride("set", "a", None, [float("nan"), {"x": float("nan")}])
    assert nan == ParsedOverride("set", "a", None, [float("nan"), {"x": float("nan")}])
    assert hash(nan) == hash(copy.deepcopy(nan))
    assert ParsedOverride("set", "a", None, 1) != ParsedOverride("set", "a", None, 1.0)
    assert ParsedOverride("set", "a", None, 1) != ParsedOverride("set", "a", None, True)
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING
    assert copy.deepcopy(MISSING) is MISSING
    err = pickle.loads(pickle.dumps(OverrideSyntaxError("boom", 3, "a.b c=1")))
    assert (err.message, err.column, err.text) == ("boom", 3, "a.b c=1")
    assert isinstance(err, ValueError)


def test_no_hydra_at_import_or_on_the_fast_path() -> None:
    code = (
        "import sys, sapo_toolkit.linter.core.overrides as o\n"
        "for s in ['actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4',"
        " 'data.train_files=\"[\\'/x\\']\"', '+a.b=1.2', '~a', \"x=['/a','/b']\"]:\n"
        "    o.parse_override(s)\n"
        "o.format_value({'a': ['x', 1.5, None]})\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('hydra', 'omegaconf', 'antlr4'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "text, expected",
    [
        # verl's grpo_trainer/run_qwen3_5_35b_megatron_lite.sh
        (
            "actor@actor_rollout_ref.actor=mlite_actor",
            ParsedOverride("set", "actor", "actor_rollout_ref.actor", "mlite_actor"),
        ),
        (
            "hydra.searchpath=[pkg://verl_mlite.config]",
            ParsedOverride("set", "hydra.searchpath", None, ["pkg://verl_mlite.config"]),
        ),
        ("hydra/job_logging=disabled", ParsedOverride("set", "hydra/job_logging", None, "disabled")),
        ("+critic@critic.extra=my_critic", ParsedOverride("add", "critic", "critic.extra", "my_critic")),
        ("~ref@actor_rollout_ref.ref", ParsedOverride("delete", "ref", "actor_rollout_ref.ref", MISSING)),
    ],
)
def test_config_group_overrides_take_the_fast_path(text, expected) -> None:
    assert _fast_parse(text) == expected == parse_with_hydra(text)


def test_empty_package_is_left_to_hydra() -> None:
    # Hydra's grammar allows `group@=option` (an empty package); the fast path leaves it to Hydra
    assert _fast_parse("actor@=mlite_actor") is None
    assert parse_override("actor@=mlite_actor") == parse_with_hydra("actor@=mlite_actor")
