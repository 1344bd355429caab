"""The resource estimator (linter/estimate/) and the MEM/CK rules built on it.

The worked examples' expected numbers are derived by hand in the comments from the HF config values
(schemas/models/*.json) and the formulas in the estimator's docstrings; they are not computed by the code under
test.
"""

import json
from pathlib import Path

import pytest

from sapo_toolkit.linter.catalog import _cards, find_model
from sapo_toolkit.linter.estimate.activations import Recompute, train_activations
from sapo_toolkit.linter.estimate.from_context import estimate_for, plan_inputs
from sapo_toolkit.linter.estimate.inputs import GIB, Limits
from sapo_toolkit.linter.estimate.optimizer import Optimizer
from sapo_toolkit.linter.estimate.params import Layout, count_params, params_per_rank, stage_layers, stage_params
from sapo_toolkit.linter.estimate.plan import estimate
from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.settings import Settings

from .helpers import REPO, contexts

RECIPE_30B = REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"
RECIPE_8B = REPO / "recipes" / "qwen3-8b-sapo.yaml"
OVERRIDE_OPTIM = "+actor_rollout_ref.actor.optim.override_optimizer_config."
GB = 10**9


def arch(card):
    return find_model(None, card, REPO)


# ---------------------------------------------------------------------------------------------- parameter counts

# Published totals (computed with Megatron's formula plus QK-norm / QKV bias), in billions, and the tolerance
# of the table's rounding.
TABLE = {
    "qwen3-0.6b": 0.596,
    "qwen3-1.7b": 1.72,
    "qwen3-4b": 4.02,
    "qwen3-8b": 8.19,
    "qwen3-14b": 14.77,
    "qwen3-32b": 32.76,
    "qwen3-30b-a3b": 30.53,
    "qwen3-235b-a22b": 235.1,
    "qwen2.5-7b": 7.62,
    "qwen2.5-32b": 32.76,
    "deepseek-v3": 671.0,
}


@pytest.mark.parametrize("card", sorted(TABLE))
def test_totals_match_the_reference_table(card):
    total = count_params(arch(card)).total / 1e9
    assert total == pytest.approx(TABLE[card], abs=0.006 * TABLE[card] + 0.005), total


def test_dense_worked_example_qwen3_8b():
    # Qwen3-8B: L=36, h=4096, 32 heads, 8 KV groups, head_dim 128, FFN 12288, vocab 151936, untied, QK-norm.
    # embedding: input 151936*4096 = 622,329,856, output the same -> 1,244,659,712
    # per layer: q 4096*4096 = 16,777,216; k, v 4096*1024 = 4,194,304 each; o 16,777,216 -> 41,943,040 attention;
    #   MLP 3*4096*12288 = 150,994,944; norms 2*4096 + QK-norm 2*128 = 8,448 -> 192,946,432; x36 = 6,946,071,552
    # final norm 4,096 -> dense 6,946,075,648; total 8,190,735,360 (8.19 B)
    c = count_params(arch("qwen3-8b"))
    assert (c.embedding, c.dense, c.expert, c.total) == (1_244_659_712, 6_946_075_648, 0, 8_190_735_360)
    # TP2 (PP1): embedding and output split: 2*311,164,928; per layer (41,943,040 + 150,994,944)/2 = 96,468,992
    #   plus the replicated 8,448 -> 96,477,440; x36 = 3,473,187,840; final norm 4,096 -> 4,095,521,792
    rank = params_per_rank(arch("qwen3-8b"), Layout(world=8, tp=2))
    assert (rank.dense, rank.expert) == (4_095_521_792, 0)


def test_moe_worked_example_qwen3_30b_a3b():
    # Qwen3-30B-A3B: L=48 (all MoE), h=2048, 32 heads, 4 KV groups, head_dim 128, 128 experts of 768, top-8.
    # embedding 2*151936*2048 = 622,329,856
    # per layer: q 2048*4096 = 8,388,608, k and v 2048*512 = 1,048,576 each, o 8,388,608 -> 18,874,368;
    #   norms 2*2048 + QK-norm 256 = 4,352; router 128*2048 = 262,144 -> 19,140,864 non-expert; x48 = 918,761,472
    #   experts 128 * 3*2048*768 = 603,979,776 per layer; x48 = 28,991,029,248 (experts 28.99 B)
    # dense = 918,761,472 + final norm 2,048 = 918,763,520; total 30,532,122,624 (30.53 B)
    # active = embedding + dense + 48 * 8 * 4,718,592 = 3,353,032,704 (3.35 B)
    c = count_params(arch("qwen3-30b-a3b"))
    assert (c.embedding, c.dense, c.expert, c.total) == (622_329_856, 918_763_520, 28_991_029_248, 30_532_122_624)
    assert c.active == 3_353_032_704
    # 16 devices, TP4 EP4 ETP4: dense = 622,329,856/4 + 48 * (18,874,368/4 + 4,352 + 262,144) + 2,048
    #   = 155,582,464 + 48 * 4,985,088 + 2,048 = 394,868,736; experts 28,991,029,248 / 16 = 1,811,939,328
    rank = params_per_rank(arch("qwen3-30b-a3b"), Layout(world=16, tp=4, ep=4, etp=4))
    assert (rank.dense, rank.expert) == (394_868_736, 1_811_939_328)
    layout = Layout(world=16, tp=4, ep=4, etp=4)
    assert (layout.dp, layout.edp) == (4, 1)


def test_pipeline_stages_and_tied_embeddings():
    assert stage_layers(8, 2) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # interleaved: chunks of 2 layers, chunk c on stage c % 2
    assert stage_layers(8, 2, vpp=2) == [[0, 1, 4, 5], [2, 3, 6, 7]]
    # Qwen3-0.6B ties embeddings: at PP1 one copy (151936*1024 = 155,582,464); with PP2 the last stage keeps a
    # copy of the word embeddings for the output layer as well.
    a = arch("qwen3-0.6b")
    one = params_per_rank(a, Layout(world=1))
    assert one.total == count_params(a).total == 596_049_920
    last = stage_params(a, Layout(world=2, pp=2), 1)
    first = stage_params(a, Layout(world=2, pp=2), 0)
    assert first.total + last.total == 596_049_920 + 155_582_464


def test_deepseek_v3_dense_layers_and_mla():
    a = arch("deepseek-v3")
    assert (
        a.is_mla and a.moe_layers[:4] == (False, False, False, True) and a.moe_shared_expert_intermediate_size == 2048
    )
    c = count_params(a)
    # routed experts: 58 MoE layers (61 - 3 dense) * 256 experts * 3*7168*2048 (44,040,192) = 653,908,770,816
    assert c.expert == 653_908_770_816


@pytest.mark.parametrize("card", ["qwen3-8b", "deepseek-v3"])
def test_local_config_json_estimates_like_its_card(tmp_path, card):
    # A directory with the card's config.json (`model.path`) is read by the same reader as the card: QK-norm (Qwen3)
    # and multi-latent attention with shared experts (DeepSeek-V3) reach the estimate either way.
    local = tmp_path / card
    local.mkdir()
    (local / "config.json").write_text(json.dumps(_cards()[card]["config"]))
    text = RECIPE_8B.read_text()
    assert "model: {path: Qwen/Qwen3-8B}" in text
    estimates = {}
    for kind, model in (("card", f"{{card: {card}}}"), ("local", f"{{path: {local}}}")):
        path = tmp_path / f"{kind}.yaml"
        path.write_text(text.replace("model: {path: Qwen/Qwen3-8B}", f"model: {model}"))
        estimates[kind] = estimate_for(contexts(path)["DEVICE=gpu,INFER_BACKEND=vllm"])
    by_card, by_local = estimates["card"], estimates["local"]
    assert by_local.inputs.model.source == str(local / "config.json")
    assert by_local.inputs.model == by_card.inputs.model._replace(source=by_local.inputs.model.source)
    assert by_local._replace(inputs=by_local.inputs._replace(model=by_card.inputs.model)) == by_card
    assert by_local.params == count_params(arch(card))


# Optional: the same architectures built by transformers on the meta device (no weights, no download).


@pytest.mark.parametrize("card", sorted(TABLE))
def test_counts_match_transformers_on_meta_device(card):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = dict(_cards()[card]["config"])
    model_type = config.pop("model_type")
    try:
        hf_config = transformers.AutoConfig.for_model(model_type, **config)
    except (ValueError, KeyError) as exc:  # an older transformers without this architecture
        pytest.skip(f"transformers {transformers.__version__} cannot build {model_type}: {exc}")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    expected = sum(p.numel() for p in model.parameters())  # tied weights counted once
    assert count_params(arch(card)).total == expected


# ---------------------------------------------------------------------------------------------- memory


def test_dense_memory_worked_example_qwen3_8b_gpu_variant():
    ctx = contexts(RECIPE_8B)["DEVICE=gpu,INFER_BACKEND=vllm"]
    e = estimate(plan_inputs(ctx))
    P = 4_095_521_792  # per-rank parameters, above
    # bf16 weights 2 B, fp32 main grads 4 B (verl: grad_reduce_in_fp32), distributed Adam 12 B / dp 4 = 3 B
    train = e.phases["train"]
    assert train["weights"] == 2 * P == 8_191_043_584
    assert train["grads"] == 4 * P == 16_382_087_168
    assert train["optimizer"] == 3 * P == 12_286_565_376
    # full recompute, uniform, 1 layer; T = 10240 tokens (dynamic bsz budget), TP2 with sequence parallel:
    #   kept: 36 layer inputs of 2*T*h/2 = 41,943,040 B -> 1,509,949,440
    assert train["activations"] == 1_509_949_440
    # backward working set = the recomputed layer + the gradients of its backward:
    #   recomputed layer (q = 4096, kv = 1024, F = 12288, per TP rank halves):
    #     attention 2T*(2h/2 + q/2 + 2kv/2 + q/2) = 20480*9216 = 188,743,680; QK-norm 2T*(q/2 + kv/2) = 52,428,800;
    #     log-sum-exp 4*T*32/2 = 655,360; MLP norm 2T*2h/2 = 83,886,080; MLP 2T*3F/2 = 377,487,360 -> 703,201,280
    #   gradients: layer output and input 2T*2h/2 = 83,886,080; MLP intermediates 2T*3F/2 = 377,487,360
    #     -> 461,373,440
    assert train["backward_working"] == 703_201_280 + 461_373_440 == 1_164_574_720
    assert train["moe_dispatch"] == 0  # dense
    # logits: 6 B (fp32 logits from Float16Module + the bf16 copy at the cast; no entropy) * T * vocab / TP
    #   = 6 * 10240 * 151936 / 2
    assert train["logits"] == 4_667_473_920
    # HBM is what the runtime reports for an H100 (79.11 GiB, schemas/devices.json), not the nominal 80 GiB.
    # rollout: the recipe's param_offload moves weights and grads to the host while vLLM runs; the distributed Adam
    # state stays: 3P + 0.6 * 79.11 GiB for vLLM + 1 GiB runtime
    #   = 12,286,565,376 + 0.6 * 84,943,715,696.64 + 1,073,741,824 = 64,326,536,617.98 B (59.9 GiB)
    assert e.hbm_bytes == pytest.approx(84_943_715_696.64)
    assert e.total("rollout") == pytest.approx(64_326_536_617.98)
    assert e.peak_phase == "rollout"
    # train: 8,191,043,584 + 16,382,087,168 + 12,286,565,376 + 1,509,949,440 + 1,164,574,720 + 4,667,473,920
    #   + 1,073,741,824 = 45,275,436,032
    assert e.total("train") == 45_275_436_032


def test_moe_memory_worked_example_qwen3_30b_npu():
    e = estimate(plan_inputs(contexts(RECIPE_30B)["DEVICE=npu,RECOMPUTE=none"]))
    P = 394_868_736 + 1_811_939_328  # 2,206,808,064 per rank (above)
    rollout, train = e.phases["rollout"], e.phases["train"]
    # optimizer CPU offload, fraction 1.0, precision-aware: nothing on the device; on the host 16 B per element of
    # the shards: dense 394,868,736 / dp 4 + experts 1,811,939,328 / edp 1 = 1,910,656,512 -> 30,570,504,192 B
    assert train["optimizer"] == 0 and train["weights"] + train["grads"] == 6 * P == 13_240_848_384
    assert e.host["train"]["optimizer_cpu_offload"] == 16 * 1_910_656_512 == 30_570_504_192
    # HCCL: 6 communicators (world, TP, DP, model-parallel, EP, ETP; edp = 1) x 2 x 200 MB = 2.4 GB
    assert set(e.communicators) == {"world", "tp", "dp_cp", "mp", "ep", "etp"}
    assert train["comm_buffers"] == 2_400_000_000
    # HBM: 60.96 GiB reported by torch_npu for a 64 GiB 910B3 = 65,455,301,591.04 B
    # rollout: weights 2P + grads 4P + 0.5 * 60.96 GiB + 2.4 GB + 1 GiB
    #   = 13,240,848,384 + 32,727,650,795.52 + 2,400,000,000 + 1,073,741,824 = 49,442,241,003.52 B (46.0 GiB)
    assert e.total("rollout") == pytest.approx(49_442_241_003.52)
    assert rollout["rollout"] == pytest.approx(32_727_650_795.52)
    # train, no recompute, T = 8192 tokens, TP4 + SP, ETP4, top-8, moe_ffn 768, per layer:
    #   attention 2T*(2h/4 + q/4 + 2*kv + q/4) with q = 4096, kv = 128 per rank (4 groups / TP4):
    #     16384 * (1024 + 1024 + 256 + 1024) = 54,525,952; QK-norm 16384 * (1024 + 128) = 18,874,368;
    #     log-sum-exp 4*8192*32/4 = 262,144; MLP norm 16384 * 1024 = 16,777,216
    #   router 4 B * 2048 local tokens * 128 = 1,048,576
    #   experts 2 * 2048 * 8 * (2*ETP*h + 3*768) = 32768 * 18688 = 612,368,384
    #   = 703,856,640 per layer; x48 = 33,785,118,720 B (31.5 GiB)
    assert train["activations"] == 48 * 703_856_640 == 33_785_118_720
    # backward working set (no recompute: gradients only): layer output/input 2T*2h/4 = 16,777,216;
    #   MoE block's intermediates = its kept tensors: router 1,048,576 + experts 612,368,384 = 613,416,960
    assert train["backward_working"] == 16_777_216 + 613_416_960 == 630_194_176
    # dispatcher buffers: 2 B * 2048 local tokens * top-8 * h 2048 = 67,108,864 per h-wide copy, times
    #   2 (send, combined) + 1.5 imbalance * (2 (received, reduce-scattered) + ETP 4 (expert outputs)) = 11
    assert train["moe_dispatch"] == 11 * 67_108_864 == 738_197_504
    assert train["logits"] == 6 * 8192 * 151936 // 4 == 1_866_989_568
    # 6P + activations + backward working + dispatch + logits + 2.4 GB + 1 GiB
    #   = 13,240,848,384 + 33,785,118,720 + 630,194,176 + 738,197,504 + 1,866,989,568 + 2,400,000,000
    #   + 1,073,741,824 = 53,735,090,176 B = 50.0 GiB, 82% of the 60.96 GiB the device reports
    assert e.total("train") == 53_735_090_176
    assert e.peak_phase == "train" and e.peak_bytes < 0.9 * 60.96 * GIB


def test_entropy_in_the_update_raises_the_logits_to_16_bytes(tmp_path):
    # actor.entropy_coeff != 0 makes verl compute entropy in the update: fp32 logits, their clone for the log-prob
    # and the entropy's fp32 softmax are kept (12 B), plus the summed fp32 gradient (4 B) -> 16 B per element
    path = tmp_path / "entropy.yaml"
    path.write_text(
        RECIPE_30B.read_text().replace(
            "  actor_rollout_ref.actor.use_kl_loss: false\n",
            "  actor_rollout_ref.actor.use_kl_loss: false\n  actor_rollout_ref.actor.entropy_coeff: 0.001\n",
        )
    )
    e = estimate(plan_inputs(contexts(path)["DEVICE=npu,RECOMPUTE=full"]))
    assert e.inputs.actor.entropy
    assert e.phases["train"]["logits"] == 16 * 8192 * 151936 // 4 == 4_978_638_848
    # the old-log-prob pass always computes entropy, without a graph: logits + clone + softmax = 12 B
    assert e.phases["logprob"]["logits"] == 12 * 8192 * 151936 // 4 == 3_733_979_136


def test_full_recompute_shrinks_the_30b_activations():
    e = estimate(plan_inputs(contexts(RECIPE_30B)["DEVICE=npu,RECOMPUTE=full"]))
    # 48 inputs of 2*8192*2048/4 = 8,388,608 B are kept; the recomputed layer's 703,856,640 B and its gradients'
    # 630,194,176 B (above) make the backward working set
    assert e.phases["train"]["activations"] == 48 * 8_388_608
    assert e.phases["train"]["backward_working"] == 703_856_640 + 630_194_176
    assert e.peak_phase == "rollout"


def test_adam_moments_exist_from_the_first_optimizer_step(tmp_path):
    # 30B on one node of 8 x 910B3 with TP4 EP2 ETP4 (dp 2, edp 1) and verl's optimizer_offload only:
    # per rank dense 394,868,736 (TP4, above), experts 28,991,029,248 / (EP2 * ETP4) = 3,623,878,656
    # -> P = 4,018,747,392; optimizer shard S = 394,868,736 / 2 + 3,623,878,656 = 3,821,313,024
    e = estimate(plan_inputs(contexts(_incident_3(tmp_path))["DEVICE=npu,RECOMPUTE=full"]))
    moments = {m.label: m for m in e.timeline}
    first = moments["rollout phase of step 1 (before the first optimizer step: no Adam moments yet)"]
    step = moments["train phase, at the first optimizer step (Adam's moments are created)"]
    fwd = moments["train phase of step 1, forward/backward (no Adam moments yet)"]
    # step 1, forward/backward: only the fp32 master, 4 B * S = 15,285,252,096
    assert fwd.terms["optimizer"] == 4 * 3_821_313_024 == 15_285_252_096
    # the first step: weights 2P 8,037,494,784 + grads 4P 16,074,989,568 + Adam 12 S 45,855,756,288 + HCCL 2.4 GB
    #   + 1 GiB, activations and logits freed = 73,441,982,464 B (68.4 GiB) > 60.96 GiB
    assert step.terms["activations"] == step.terms["logits"] == 0
    assert step.total == 73_441_982_464
    # step 1's rollout: verl's optimizer_offload parks the master; 6P + 0.5 * 60.96 GiB + 2.4 GB + 1 GiB
    #   = 24,112,484,352 + 32,727,650,795.52 + 3,473,741,824 = 60,313,876,971.52 B (56.2 GiB): fits
    assert first.total == pytest.approx(60_313_876_971.52)
    assert e.first_over(e.hbm_bytes) is step


def test_optimizer_bytes_per_element():
    assert Optimizer().device_bytes_per_element() == 12  # fp32 master + two fp32 moments
    pa = Optimizer(precision_aware=True, master_bytes=2, exp_avg_bytes=2, exp_avg_sq_bytes=2)
    assert pa.device_bytes_per_element() == 6 and pa.checkpoint_bytes_per_element() == 8
    offload = Optimizer(precision_aware=True, cpu_offload=True, offload_fraction=0.25)
    assert offload.device_bytes_per_element() == 0.75 * 12 and offload.host_bytes_per_element() == 0.25 * 16
    # without precision-aware the fp32 main shard stays on the device
    assert Optimizer(cpu_offload=True, offload_fraction=1.0).device_bytes_per_element() == 4
    # offload switched on with the default fraction 0.0 moves nothing (hybrid_optimizer.py)
    assert Optimizer(cpu_offload=True).host_bytes_per_element() == 0


def test_block_recompute_keeps_the_rest():
    a = arch("qwen3-8b")
    layout = Layout(world=8, tp=2)
    none = train_activations(a, layout, True, 4096, Recompute()).layers
    block = train_activations(a, layout, True, 4096, Recompute("full", "block", 36)).layers
    uniform = train_activations(a, layout, True, 4096, Recompute("full", "uniform", 1)).layers
    assert block == uniform < none


# ---------------------------------------------------------------------------------------------- MEM001 must-shows


def _incident_3(tmp_path, cpu_offload: bool = False, verl_offload: bool = True) -> Path:
    """The 30B recipe as incident 3 ran it: one node of 8 x 910B3 (TP4 EP2 ETP4), verl's
    `megatron.optimizer_offload` instead of Megatron's optimizer CPU offload (unless `cpu_offload`)."""
    lines = RECIPE_30B.read_text().splitlines()
    if not cpu_offload:
        lines = [line for line in lines if "override_optimizer_config" not in line]
    text = (
        "\n".join(lines)
        .replace("trainer.nnodes: 2", "trainer.nnodes: 1")
        .replace("expert_model_parallel_size: 4", "expert_model_parallel_size: 2")
    )
    if verl_offload:
        text = text.replace(
            "  actor_rollout_ref.actor.megatron.use_distributed_optimizer: true\n",
            "  actor_rollout_ref.actor.megatron.use_distributed_optimizer: true\n"
            "  actor_rollout_ref.actor.megatron.optimizer_offload: true\n",
        )
    path = tmp_path / "qwen3-30b-a3b-8dev.yaml"
    path.write_text(text + "\n")
    return path


def test_shipped_30b_fits_with_its_optimizer_offload():
    found = lint_paths([RECIPE_30B], Settings()).diagnostics
    assert not [d for d in found if d.code.startswith(("MEM", "CK"))], found
    for variant, ctx in contexts(RECIPE_30B).items():
        e = estimate(plan_inputs(ctx))
        # each device variant on its own accelerator: 910B3 (60.96 GiB) for npu, H100 (79.11 GiB) for gpu
        assert e.inputs.hbm_gib == (60.96 if "DEVICE=npu" in variant else 79.11), variant
        assert e.peak_bytes < 0.9 * e.hbm_bytes, (variant, e.peak_bytes / GIB)


def _npu_mem001(path: Path) -> list:
    found = [d for d in lint_paths([path], Settings()).diagnostics if d.code == "MEM001"]
    return [d for d in found if d.variant is None or "DEVICE=npu" in d.variant]


def test_incident_3_is_mem001_at_the_first_optimizer_step(tmp_path):
    found = _npu_mem001(_incident_3(tmp_path))
    # the step-1 rollout fits (56.2 GiB, test above) but is over 90% (a warning, reported in the same run); the
    # first optimizer step does not fit (68.4 GiB): an error that names that point, its biggest term (Adam's
    # 12 B * S = 45,855,756,288 B = 42.7 GiB) and the knob that fits
    errors = [d for d in found if d.severity.value == "error"]
    assert errors and [d.severity.value for d in found if d not in errors] == ["warning"], found
    message = next(d for d in errors if d.variant == "DEVICE=npu,RECOMPUTE=full").message
    assert message.startswith(
        "train phase, at the first optimizer step (Adam's moments are created): estimated "
        "68.4 GiB per device exceeds the 60.96 GiB the runtime reports for ascend-910b3 "
        "(64 GiB nominal)"
    ), message
    assert "biggest term: optimizer 42.7 GiB" in message
    assert "optimizer_cpu_offload: true" in message


def test_incident_3_with_megatron_cpu_offload_fits(tmp_path):
    path = _incident_3(tmp_path, cpu_offload=True)
    # Adam's state goes to the host: the first optimizer step holds 6P + 2.4 GB + 1 GiB. What is left is a warning
    # for step 1's rollout: 6P + 0.5 * 60.96 GiB + 2.4 GB + 1 GiB = 56.2 GiB is 92% of the device
    found = [d for d in _npu_mem001(path) if "RECOMPUTE=" not in d.variant or "RECOMPUTE=full" in d.variant]
    assert [d.severity.value for d in found] == ["warning"], found
    assert "gpu_memory_utilization: 0.47" in found[0].message
    # 0.45: 24,112,484,352 + 0.45 * 65,455,301,591.04 + 3,473,741,824 = 57,041,111,891.97 B (53.1 GiB, 87%): clean
    path.write_text(path.read_text().replace("gpu_memory_utilization: 0.5", "gpu_memory_utilization: 0.45"))
    assert not [d for d in _npu_mem001(path) if "RECOMPUTE=" not in d.variant or "RECOMPUTE=full" in d.variant]


def test_without_any_offload_the_step_1_rollout_runs_out_first(tmp_path):
    # no verl offload either: the rollout of step 1 holds 2P + 4P + the master 4S besides vLLM's share:
    #   24,112,484,352 + 15,285,252,096 + 32,727,650,795.52 + 3,473,741,824 = 75,599,129,067.52 B (70.4 GiB)
    path = _incident_3(tmp_path, verl_offload=False)
    e = estimate(plan_inputs(contexts(path)["DEVICE=npu,RECOMPUTE=full"]))
    assert e.timeline[0].total == pytest.approx(75_599_129_067.52)
    # the update runs out too, for another cause: a finding of its own in the same run
    found = _npu_mem001(path)
    assert {d.message.split(" ", 1)[0] for d in found} == {"rollout", "log-prob", "train"}, found
    message = next(d.message for d in found if d.message.startswith("rollout phase"))
    assert message.startswith(
        "rollout phase of step 1 (before the first optimizer step: no Adam moments yet): estimated 70.4 GiB"
    ), message
    assert "biggest term: rollout 30.5 GiB" in message


# ---------------------------------------------------------------------------------------------- MEM002 / CK rules


def test_limits_from_mapping_ignores_bad_values():
    limits = Limits.from_mapping({"write_gib_per_s": 0, "host_ram_gib": "big", "disk_budget_gib": 500})
    assert limits.stated == frozenset({"disk_budget_gib"}) and limits.assumed("write_gib_per_s")


def test_recipe_env_reaches_hccl_buffers(tmp_path):
    text = RECIPE_30B.read_text().replace(
        'env: {HCCL_CONNECT_TIMEOUT: "1800", HCCL_EXEC_TIMEOUT: "1800"}',
        'env: {HCCL_CONNECT_TIMEOUT: "1800", HCCL_EXEC_TIMEOUT: "300", HCCL_BUFFSIZE: "100"}',
    )
    path = tmp_path / "r.yaml"
    path.write_text(text)
    ctx = contexts(path)["DEVICE=npu,RECOMPUTE=full"]
    e = estimate(plan_inputs(ctx))
    assert e.phases["train"]["comm_buffers"] == 6 * 2 * 100 * 10**6
    assert e.checkpoint.timeout_s == 300 and e.checkpoint.timeout_source == "HCCL_EXEC_TIMEOUT"


def test_json_serialisable_estimate():
    from sapo_toolkit.linter.explain import Item, to_json

    e = estimate(plan_inputs(contexts(RECIPE_30B)["DEVICE=gpu,RECOMPUTE=full"]))
    json.dumps(to_json(Item("DEVICE=gpu,RECOMPUTE=full", e, [])))


def test_a_separate_rollout_puts_no_engine_on_the_trainers_devices(tmp_path):
    from sapo_toolkit.linter.api import load, read_options
    from sapo_toolkit.linter.engine import resolve
    from sapo_toolkit.linter.estimate.from_context import estimate_for
    from sapo_toolkit.linter.schema import load_snapshot
    from sapo_toolkit.linter.settings import Settings

    def estimate(entry):
        path = tmp_path / "run_qwen3_8b_megatron.sh"
        path.write_text(
            f"python3 -m {entry} model_engine=megatron algorithm.adv_estimator=grpo "
            "actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.nnodes=1 trainer.n_gpus_per_node=8 "
            "rollout.nnodes=1 rollout.n_gpus_per_node=8 actor_rollout_ref.hybrid_engine=False "
            "actor_rollout_ref.rollout.gpu_memory_utilization=0.9\n",
            encoding="utf-8",
        )
        command = load(path, read_options(Settings(verl_version="0.10.0.dev"))).commands[0]
        return estimate_for(resolve(command, load_snapshot("0.10.0.dev", command.config_name)))

    colocated, separate = estimate("verl.trainer.main_ppo"), estimate("verl.experimental.one_step_off_policy.main_ppo")
    assert colocated.phases["rollout"]["rollout"] == 0.9 * colocated.inputs.hbm_gib * 2**30
    assert all(terms["rollout"] == 0 for terms in separate.phases.values())
    assert any("devices of its own" in note for note in separate.notes)
