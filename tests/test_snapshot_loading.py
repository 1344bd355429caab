"""A committed verl snapshot is decoded a tree set at a time (issue 32 item 4): what a run reads is the file's JSON."""

import json

from sapo_toolkit.linter import schema
from sapo_toolkit.schemas.build.layout import VERL_FORMAT, snapshot_text


def test_each_committed_snapshot_reads_as_its_json_and_decodes_only_the_tree_sets_asked_for():
    for version in schema.available_verl_versions():
        data = (schema.SCHEMA_DIR / "verl" / f"{version}.json").read_bytes()
        whole = json.loads(data)
        document = schema._snapshot_document(data)
        assert list(document) == list(whole)
        assert {k: v for k, v in document.items() if k != "tree_sets"} == {
            k: v for k, v in whole.items() if k != "tree_sets"
        }
        tree_sets = document["tree_sets"]
        config = whole["configs"]["ppo_trainer"]["trees"]
        assert tree_sets[config] == whole["tree_sets"][config]
        assert tree_sets._whole is None and list(tree_sets._decoded) == [config], version
        assert dict(tree_sets) == whole["tree_sets"]


def _tree_set(path):
    return {"base": {path: {"kind": "value", "type": "int"}}, "trees": {"": {"set": {}, "unset": []}}}


def test_a_tree_set_named_like_a_container_inside_another_is_still_found():
    # `a` holds a container `base` before the tree set `base` begins: what that finds is no tree set
    document = {"format": VERL_FORMAT, "verl_version": "9.9", "configs": {}, "tree_sets": {}}
    document["tree_sets"] = {"a": _tree_set("x"), "base": _tree_set("y")}
    lazy = schema._snapshot_document(snapshot_text(document).encode())
    assert lazy["tree_sets"]["base"] == _tree_set("y") and lazy["tree_sets"]["a"] == _tree_set("x")


def test_a_snapshot_on_one_line_is_decoded_whole():
    document = {"format": VERL_FORMAT, "verl_version": "9.9", "configs": {}, "tree_sets": {"a": _tree_set("x")}}
    assert schema._snapshot_document(json.dumps(document).encode()) == document
