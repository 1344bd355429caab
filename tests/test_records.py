"""`core.records.Record`: the frozen keyword-only records the readers report problems with."""

import pickle

import pytest

from sapo_toolkit.linter.core.diagnostics import Location
from sapo_toolkit.linter.core.problems import DuplicateKey, ReadProblem
from sapo_toolkit.linter.core.records import Record


class Base(Record):
    location: str
    variant: str | None = None


class Child(Base):
    key: str
    count: int = 0


def test_fields_are_the_bases_then_the_class_s_own_with_defaults_from_class_attributes():
    assert Child.__fields__ == ("location", "variant", "key", "count")
    c = Child(location="a", key="k")
    assert (c.location, c.variant, c.key, c.count) == ("a", None, "k", 0)


def test_keyword_arguments_are_checked():
    with pytest.raises(TypeError, match="missing keyword argument: 'key'"):
        Child(location="a")
    with pytest.raises(TypeError, match="unexpected keyword arguments: colour"):
        Child(location="a", key="k", colour="red")


def test_records_are_frozen_hashable_and_equal_by_class_and_values():
    a, b = Child(location="a", key="k"), Child(location="a", key="k")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Base(location="a") and a != Child(location="a", key="other")
    with pytest.raises(AttributeError, match="frozen"):
        a.key = "x"
    with pytest.raises(AttributeError, match="frozen"):
        del a.key
    assert repr(a) == "Child(location='a', variant=None, key='k', count=0)"


def test_replace_and_pickle_keep_every_field():
    a = Child(location="a", key="k", count=3)
    assert a.replace(variant="V=1") == Child(location="a", variant="V=1", key="k", count=3)
    assert pickle.loads(pickle.dumps(a)) == a
    problem = DuplicateKey(location=Location("r.yaml", 3, 1), key="x", first_line=2)
    assert isinstance(problem, ReadProblem) and problem.with_variant("A=b").variant == "A=b"
    assert pickle.loads(pickle.dumps(problem)) == problem
