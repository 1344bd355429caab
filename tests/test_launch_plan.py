"""The launch plan: every shipped recipe and variant becomes an argv that real Hydra composes against verl 0.9.1's
config, with the recipe's values; launch-time values are quoted so that Hydra reads back exactly what was meant;
the variant selection, the lint gate and the knobs the launcher adds behave as documented."""

from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sapo_toolkit.launcher.plan import Facts, PlanError, plan, selection_tokens
from sapo_toolkit.linter.settings import Settings

from .helpers import REPO, composed, recipe, stand_in

RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
FACTS = Facts("gpu", "/usr/bin/python3", "/work", 16, datetime(2026, 12, 1, 3, 4, 5, tzinfo=timezone.utc), "runs")


def variants_of(path: Path) -> list[dict]:
    """Every combination of the recipe's variant axes, as --variant selections."""
    axes = yaml.safe_load(path.read_text()).get("variants") or {}
    combos = [{}]
    for axis, values in axes.items():
        combos = [{**c, axis: v} for c in combos for v in values]
    return combos


def planned(path: Path, selection: dict, overrides=(), facts=FACTS):
    return plan(
        path, settings=Settings(), facts=facts, variants=[f"{a}={v}" for a, v in selection.items()], overrides=overrides
    )


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_shipped_variant_plans_an_argv_hydra_composes(path, verl_config_dir):
    for selection in variants_of(path):
        launch = planned(path, selection)
        assert not launch.lint.refuses, launch.lint.diagnostics
        assert launch.argv[:5] == (
            "/usr/bin/python3",
            "-m",
            "verl.trainer.main_ppo",
            "--config-name",
            yaml.safe_load(path.read_text())["config_name"],
        )
        cfg = composed(verl_config_dir, launch.argv[4], list(launch.argv[5:]))
        actor = cfg.actor_rollout_ref.actor
        assert actor.policy_loss.loss_mode == "sapo" and "tau_pos" not in actor.policy_loss
        assert actor.tau_pos > 0 and actor.tau_neg > 0
        assert "file" in cfg.trainer.logger  # verl's JSONL logger feeds the run directory
        assert dict(launch.env)["VERL_FILE_LOGGER_PATH"].endswith("/metrics.jsonl")
        if selection.get("device") == "npu":
            assert cfg.trainer.device == "npu"


def test_30b_recipe_npu_and_gpu_plans_differ_only_where_the_variants_say():
    path = REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml"
    npu = plan(path, settings=Settings(), facts=FACTS, device="npu", variants=["recompute=full"])
    gpu = plan(path, settings=Settings(), facts=FACTS, device="gpu", variants=["recompute=full"])
    assert npu.variant.startswith("DEVICE=npu") and gpu.variant.startswith("DEVICE=gpu")
    assert "trainer.device=npu" in npu.argv
    assert any(k.startswith("HCCL_") for k, _ in npu.env) and not any(k.startswith("HCCL_") for k, _ in gpu.env)


# Values a recipe may hold, including the awkward ones: spaces, quotes, commas, brackets, `${...}`, numbers that
# must stay strings, nested lists and dicts, null.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12),
    st.sampled_from(
        [
            "1.0",
            "007",
            "true",
            "null",
            "a b",
            "x,y",
            "[1]",
            "{a: 1}",
            "it's",
            'say "hi"',
            "${oc.env:HOME}",
            "${actor_rollout_ref.actor.tau_pos}",
            "=",
            "a=b",
            "\\",
            "~",
            "+x",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), inner, max_size=3),
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_plan_argv_reads_back_exactly_in_hydras_parser(tmp_path, value):
    """A value under an open dict (no type to coerce it) survives recipe YAML -> plan argv -> Hydra's own parser."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    key = "+actor_rollout_ref.actor.megatron.override_transformer_config.x"
    body = yaml.safe_dump({"overrides": {key: value}}, allow_unicode=True)
    path = tmp_path / "r.yaml"
    path.write_text(recipe(body))
    launch = plan(path, settings=Settings(select=["SL009"]), facts=FACTS)
    (arg,) = [a for a in launch.argv if a.startswith(key + "=")]
    parsed = OverridesParser.create().parse_override(arg)
    got = parsed.value()
    assert _plain(got) == yaml.safe_load(yaml.safe_dump(value)), (arg, got)


def _plain(v):
    """Hydra's parsed value as plain Python (its quoted strings, lists and dicts)."""
    from omegaconf import OmegaConf

    if isinstance(v, (list, dict)):
        return OmegaConf.to_container(OmegaConf.create({"v": v}), resolve=False)["v"]
    return v


def test_selection_names_axes_and_values():
    assert selection_tokens("npu", "vllm", ["recompute=full"]) == ["DEVICE=npu", "INFER_BACKEND=vllm", "RECOMPUTE=full"]
    with pytest.raises(PlanError, match="AXIS=VALUE"):
        selection_tokens(None, None, ["recompute"])


def test_an_open_axis_or_unknown_value_is_a_clear_error(tmp_path):
    path = tmp_path / "r.yaml"
    without_default = (REPO / "recipes" / "qwen3-30b-a3b-sapo.yaml").read_text().replace("recompute: selective", "")
    path.write_text(without_default)
    with pytest.raises(PlanError, match=r"choose a variant: --variant recompute=full\|none\|selective \(or name"):
        plan(path, settings=Settings(), facts=FACTS, device="npu")
    with pytest.raises(PlanError, match="no DEVICE=tpu variant; DEVICE is one of gpu, npu"):
        plan(path, settings=Settings(), facts=FACTS, device="tpu", variants=["recompute=full"])


def test_device_is_ignored_for_a_recipe_without_device_variants(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe("overrides:\n  actor_rollout_ref.actor.tau_pos: 1.0\n"))
    assert plan(path, settings=Settings(), facts=FACTS, device="npu").variant is None


def test_launch_time_overrides_are_linted_and_win(tmp_path):
    path = REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml"
    launch = planned(path, {"device": "gpu"}, overrides=["trainer.total_training_steps=2", "trainer.nnodez=2"])
    assert "trainer.total_training_steps=2" in launch.argv
    (unknown,) = [d for d in launch.lint.diagnostics if d.code == "SL001"]
    assert unknown.location.path == "--override" and launch.lint.refuses


def test_tau_bug_refuses_the_launch(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe("overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n"))
    launch = plan(path, settings=Settings(), facts=FACTS)
    assert launch.lint.refuses and {"SP001"} <= {d.code for d in launch.lint.diagnostics}


def test_prompt_filter_workers_set_when_filtering_with_the_default(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(recipe("overrides:\n  data.filter_overlong_prompts: true\n"))
    launch = plan(path, settings=Settings(), facts=FACTS._replace(cpu_count=64))
    assert "data.filter_overlong_prompts_workers=16" in launch.argv
    assert any("incident 6" in n for n in launch.notes)
    assert "PF001" not in {d.code for d in launch.lint.diagnostics}
    path.write_text(
        recipe("overrides:\n  data.filter_overlong_prompts: true\n  data.filter_overlong_prompts_workers: 4\n")
    )
    launch = plan(path, settings=Settings(), facts=FACTS._replace(cpu_count=64))
    assert "data.filter_overlong_prompts_workers=4" in launch.argv
    assert not [n for n in launch.notes if "filter_overlong_prompts_workers" in n]


def test_run_directory_is_named_after_the_recipe_and_utc_time():
    launch = planned(REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml", {"device": "gpu"})
    # absolute: verl's `file` logger writes to it from wherever Ray runs the trainer
    assert launch.run_dir == "/work/runs/smoke-qwen3-0.6b-sapo-20261201T030405Z"
    assert len(launch.recipe_hash) == 64


def test_the_chosen_command_is_resolved_once_by_the_plan(tmp_path, monkeypatch):
    """The plan resolves the chosen command once (the lint check resolves it once more, inside the linter)."""
    from sapo_toolkit.linter import api

    calls = []
    resolve = api.resolve
    monkeypatch.setattr(api, "resolve", lambda *args, **kwargs: calls.append(args) or resolve(*args, **kwargs))
    recipe = stand_in(tmp_path, {}, overrides="  trainer.nnodes: 2\n  trainer.total_training_steps: 7\n")
    launch = plan(recipe, settings=Settings(), facts=FACTS, device=None)
    assert len(calls) == 1
    assert (launch.nnodes, launch.total_steps) == (2, 7)
