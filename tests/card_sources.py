"""Reading the config a model card cites out of its source file, without running it: a config.json, one entry of a
Python dict literal (also one left commented out, as mlc-llm's `MODEL_PRESETS` keeps some), or a `Name` + JSON
section of a Markdown list. tests/test_model_card_sources.py checks every card against the vendored extracts in
tests/fixtures/card_sources/ offline, and (with the network) re-reads each extract from the file at its revision."""

from __future__ import annotations

import ast
import hashlib
import json
import re

# `mlc-ai/mlc-llm @ 01ced33..., python/mlc_llm/model/model_preset.py, MODEL_PRESETS['gemma2_9b'] (...)`,
# `ai-dynamo/aiconfigurator @ 19d098a..., src/.../zai-org--GLM-4.7-Flash_config.json (...)`,
# `citsjtu2020/LLM-Prof @ 8434c8d..., sglang/Model_Config.md, section Qwen2.5-14B (...)`
GITHUB_SOURCE = re.compile(
    r"^(?P<repository>[\w.-]+/[\w.-]+) @ (?P<revision>[0-9a-f]{40}), (?P<path>[^\s,]+)"
    r"(?:, (?:section )?(?P<entry>[\w.-]+(?:\['[\w.-]+'\])?))?"
)


def git_blob_sha1(data: bytes) -> str:
    """The object id git gives a file's bytes (`git hash-object`): what a revision's tree names it by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def extract(text: str, path: str, entry: str | None) -> dict:
    """The config `entry` names in the file `path` holds `text` of (None for a config.json: the whole file). Values a
    Python literal cannot hold (`str(os.path.join(...))`) are left out."""
    if path.endswith(".json"):
        return json.loads(text)
    if path.endswith(".md"):
        return _markdown_section(text, entry)
    if path.endswith(".py"):
        return _python_entry(text, entry)
    raise ValueError(f"no reader for {path}")


def _markdown_section(text: str, name: str) -> dict:
    """A `Name` line followed by a JSON object (LLM-Prof's sglang/Model_Config.md)."""
    found = re.search(rf"(?m)^{re.escape(name)}\s*\n(\{{.*?\n\}})", text, re.S)
    if found is None:
        raise KeyError(f"no section {name}")
    return json.loads(found[1])


def _python_entry(text: str, entry: str) -> dict:
    """`NAME` (a module-level dict literal) or `NAME['key']` (one of its entries, also a commented-out one)."""
    name, _, rest = entry.partition("[")
    key = rest.strip("]'\"") if rest else None
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(node.value, ast.Dict):
                if key is None:
                    return _literal_dict(node.value)
                for k, v in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == key and isinstance(v, ast.Dict):
                        return _literal_dict(v)
                return _commented_entry(text, key)
    raise KeyError(f"no {entry}")


def _literal_dict(node: ast.Dict) -> dict:
    out = {}
    for k, v in zip(node.keys, node.values, strict=True):
        try:
            out[ast.literal_eval(k)] = ast.literal_eval(v)
        except ValueError:
            continue  # not a literal (a path the test computes): not a number any card keeps
    return out


def _commented_entry(text: str, key: str) -> dict:
    """An entry written as comments (`# "llama3_8b": {` ... `# },`) inside the dict."""
    found = re.search(rf'(?m)^(?P<indent>[ \t]*)# "{re.escape(key)}": \{{\n(?P<body>(?:(?P=indent)#.*\n)*?)'
                      rf"(?P=indent)# \}},?$", text)  # fmt: skip
    if found is None:
        raise KeyError(f"no entry {key}, live or commented out")
    body = "\n".join(line.split("#", 1)[1] for line in found["body"].splitlines())
    return _literal_dict(ast.parse("{" + body + "}", mode="eval").body)
