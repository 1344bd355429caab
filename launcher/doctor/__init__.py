"""`sapo-launch doctor [RECIPE]`: is this environment able to run the recipe?

It reports the installed versions of the training stack (`versions.PACKAGES`), checks them against the compatibility
table (`compatibility.json`, every fact with its source), counts the visible devices against the recipe's devices
per node, checks the CANN toolkit environment on Ascend, and resolves the vLLM NPU patch variant -- both the
open-ended resolution (`versions.vllm_patch_variant`) and what the installed verl's own gate applies.

Public:

* ``read_recipe_facts(path, settings=None) -> RecipeFacts``: what the doctor needs from a recipe or run script, read
  through `sapo_toolkit.linter.api` only; raises ``DoctorError`` (one line) when it cannot be read.
* ``doctor_report(recipe, env, probe, versions, *, requested=None, mbridge_params=None, read_text=None,
  machine=None) -> Report``: pure given its inputs (the probe, `read_text` and `machine` are the only look-ups).
* ``render_text(report) -> str``, ``Report.to_json() -> dict``. The command: `launcher/cli/doctor.py`.

Severities: ``blocking`` (the run cannot work, or silently runs wrong), ``advisory`` (worth a look; the run may
work), ``ok`` (a check that passed). Exit 1 when any finding is blocking, else 0; a usage error (an unreadable or
unknown RECIPE, a bad option) is one line on stderr and exit 2.

No device at all: without a recipe that is advisory (the machine can still lint, plan and dry-run); with a recipe it
is blocking, because the recipe needs `trainer.n_gpus_per_node` devices on every node and verl refuses to start with
fewer (verl 0.9.1 verl/single_controller/ray/base.py `_check_resource_available`: "Total available GPUs ... is
less than total desired GPUs ..."). Fewer visible devices than the recipe's per-node count is blocking; more is
advisory. Only this node is counted. Likewise a package the recipe needs (torch, ray, verl; vllm for a vLLM
rollout; megatron-core for the Megatron engine; torch_npu, plus vllm-ascend / mindspeed when used, on NPU) is
blocking when missing with a recipe, advisory without one. Checks that depend on the rollout engine (verl's vLLM
version floor, the NPU patch gate) are blocking when the recipe's rollout is vLLM, or when there is no recipe and
vLLM is installed (an installed vLLM is taken to be the rollout engine).

JSON (`--format json`), version 1::

    {"version": 1,
     "device": {"requested": "auto"|"npu"|"gpu", "kind": "npu"|"gpu"|null, "count": int, "how": str},
     "packages": {NAME: {"version": str|null, "present": bool}, ...},   # present: metadata, or importable without
     "cann": null | {"env": {VAR: value, ...}, "info_file": str|null, "version": str|null},
     "vllm_patch": {"vllm": str|null, "variant": "v013"|"v011"|null, "npu": bool, "verl": str|null,
                    "verl_applies": [str, ...]|null, "verl_gate": str},
     "recipe": null | {"path": str, "verl": str, "stack": {"megatron_core": str|null, "mbridge": str|null},
                       "variants": [{"variant": str|null, "device": "npu"|"gpu"|null, "n_gpus_per_node": int|null,
                                     "nnodes": int|null, "rollout": str|null, "model_engine": str|null,
                                     "mbridge_config": [str, ...]}]},
     "mbridge_save_weights": [str, ...]|null,
     "findings": [{"check": str, "severity": "blocking"|"advisory"|"ok", "message": str, "source": str|null}],
     "summary": {"blocking": int, "advisory": int, "ok": int},
     "exit_code": 0|1}

Layout: `facts.py` (the records, `read_recipe_facts`, `read_cann`), `checks.py` (`doctor_report` and its checks),
`render.py` (`render_text`, `render_rich`); this module re-exports the public names.
"""

from __future__ import annotations

from .checks import doctor_report
from .facts import (
    ADVISORY,
    BLOCKING,
    OK,
    DoctorError,
    Finding,
    RecipeFacts,
    Report,
    VariantFacts,
    read_cann,
    read_recipe_facts,
)
from .render import render_rich, render_text

__all__ = [
    "ADVISORY",
    "BLOCKING",
    "OK",
    "DoctorError",
    "Finding",
    "RecipeFacts",
    "Report",
    "VariantFacts",
    "doctor_report",
    "read_cann",
    "read_recipe_facts",
    "render_rich",
    "render_text",
]
