"""A finding over variants reads once: its label names exactly the variants it holds for (core/variants.py)."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from sapo_toolkit.linter.core.diagnostics import Diagnostic, Location, Severity
from sapo_toolkit.linter.core.variants import collapse_variants, describe

# The variants of verl's grpo_trainer/run_qwen3_30b_a3b_megatron.sh as the script reader labels them: a label names
# only the inputs that variant read (DEVICE is read only when VERL_USE_UV=1).
QWEN3_30B = [
    f"INFER_BACKEND={backend},ROLLOUT_QUANTIZATION={quant},VERL_USE_UV={uv}" + (",DEVICE=gpu" if uv else "")
    for backend, quant in [("trtllm", "fp8"), ("trtllm", "unset"), ("vllm", "unset"), ("sglang", "unset")]
    for uv in (0, 1)
]


def finding(variant=None, message="m"):
    return Diagnostic(Location("run.sh", 3, 5), "BS007", "name", Severity.ERROR, message, variant)


def test_a_finding_outside_one_backend_is_printed_once_with_the_backends():
    have = [v for v in QWEN3_30B if "trtllm" not in v]
    (d,) = collapse_variants([[finding(v)] if v in have else [] for v in QWEN3_30B], QWEN3_30B)
    assert d.variant == "INFER_BACKEND=vllm|sglang"


def test_a_finding_in_every_variant_has_no_label_and_one_in_some_names_them():
    per_variant = [[finding(v, "everywhere"), *([finding(v, "trtllm")] if "trtllm" in v else [])] for v in QWEN3_30B]
    found = {d.message: d.variant for d in collapse_variants(per_variant, QWEN3_30B)}
    assert found == {"everywhere": None, "trtllm": "INFER_BACKEND=trtllm"}


def test_a_set_that_is_no_single_combination_is_a_union():
    variants = ["UV=0", "UV=1,DEVICE=gpu", "UV=1,DEVICE=npu"]
    # the finding holds with UV=0 whatever DEVICE is, and with DEVICE=gpu: not for UV=1,DEVICE=npu only
    assert describe({"UV=0", "UV=1,DEVICE=gpu"}, variants) == "UV=0 or DEVICE=gpu"
    assert describe({"UV=1,DEVICE=npu"}, variants) == "UV=1,DEVICE=npu"


def test_an_axis_the_variant_did_not_read_is_not_claimed():
    # DEVICE=gpu alone would also claim UV=0 (which reads no DEVICE, so holds for gpu too): the finding is not there
    assert describe({"UV=1,DEVICE=gpu"}, ["UV=0", "UV=1,DEVICE=gpu", "UV=1,DEVICE=npu"]) == "UV=1,DEVICE=gpu"


def _terms(label):
    return [
        {axis: set(values.split("|")) for axis, values in (t.split("=") for t in term.split(","))}
        for term in label.split(" or ")
    ]


@given(st.lists(st.integers(2, 3), min_size=1, max_size=4), st.data())
def test_a_label_names_exactly_the_variants_of_a_product_that_have_the_finding(sizes, data):
    axes = [f"A{i}" for i in range(len(sizes))]
    variants = [
        ",".join(f"{a}=v{j}" for a, j in zip(axes, combo, strict=True))
        for combo in itertools.product(*map(range, sizes))
    ]
    have = data.draw(st.sets(st.sampled_from(variants), min_size=1, max_size=len(variants) - 1))
    terms = _terms(describe(have, variants))
    named = {
        v
        for v in variants
        for term in terms
        if all(dict(t.split("=") for t in v.split(","))[a] in values for a, values in term.items())
    }
    assert named == have


def test_a_combination_is_one_term():
    variants = [f"A={a},B={b},C={c}" for a in "xy" for b in "pqr" for c in "01"]
    have = {v for v in variants if "A=x" in v and "B=r" not in v}
    assert describe(have, variants) == "A=x,B=p|q"
