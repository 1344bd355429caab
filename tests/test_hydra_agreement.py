"""sapo-lint's compose-time verdicts (SL001/SL002/SL005/SL006/SL009/SL012) agree with real `hydra.compose` on verl's
config directory, override list by override list: the hand-written cases below on verl 0.9.1, and cases generated
from each snapshot's config groups (every placement swapped to every option, misspelt options, wrong packages, keys
of the option a swap replaced, `+` new selections, `~` deletions, null options) and keys, on verl 0.9.1 (from its
wheel) and verl main (from the git archive in ../shared/verl-src)."""

import random
import tarfile
from pathlib import Path

import pytest

from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.schema import load_snapshot
from sapo_toolkit.linter.settings import Settings

from .helpers import recipe

COMPOSE_TIME = {"SL001", "SL002", "SL005", "SL006", "SL009", "SL012"}
CONFIG = "ppo_megatron_trainer"  # helpers.HEADER's
VERL_MAIN_ARCHIVE = Path("/work/shared/verl-src/verl-main-1dda039.tar.gz")

CASES = [
    # valid
    ["actor_rollout_ref.actor.tau_pos=1.2"],
    ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4"],
    ["+actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion=True"],
    ["+actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform"],  # null default
    ["++actor_rollout_ref.actor.tau_neg=1.1"],
    ["++trainer.brand_new_key=1"],
    ["~actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules"],
    ["+actor_rollout_ref.rollout.repetition_penalty=1.0"],  # dataclass field missing from the YAML
    ["model_engine=megatron"],
    ["model_engine=dp"],
    ["+actor_rollout_ref.actor.policy_loss.tau_pos=1.2"],  # composes; SL003/SP001 catch it
    ["data.filter_overlong_prompts_workers=16", "trainer.logger=[console,file]"],
    ["+trainer.foo=1", "trainer.foo=2"],
    ["~trainer.total_epochs", "+trainer.total_epochs=3"],
    ["+actor_rollout_ref.ref.megatron.override_transformer_config.recompute_granularity=full"],
    # a mapping value: merged key by key into a config node or a non-null dict, set whole elsewhere
    ["actor_rollout_ref.actor.policy_loss={loss_mode:sapo}"],
    ["actor_rollout_ref.actor={policy_loss:{loss_mode:sapo},tau_pos:2}"],
    ["actor_rollout_ref.actor.megatron.override_transformer_config={recompute_method:uniform}"],
    [
        "actor_rollout_ref.actor.megatron={tensor_model_parallel_size:2,override_transformer_config:{recompute_granularity:full}}"
    ],
    ["actor_rollout_ref.ref.megatron={tensor_model_parallel_size:2}"],
    ["actor_rollout_ref.rollout.engine_kwargs={vllm:{}}"],
    ["++actor_rollout_ref.actor.megatron.override_transformer_config={apply_rope_fusion:true}"],
    ["+actor_rollout_ref.actor.policy_loss={tau_pos:1}"],  # `+` merges a mapping without struct mode; SP001 catches it
    ["+actor_rollout_ref.actor.new_node={a:1}"],
    # refused by Hydra
    ["actor_rollout_ref.actor.policy_loss={tau_pos:1}"],
    ["actor_rollout_ref.actor={policy_loss:{tau_poss:1}}"],
    ["actor_rollout_ref.actor.megatron.override_transformer_config={apply_rope_fusion:true}"],
    ["actor_rollout_ref.rollout.engine_kwargs={vllm:{a:1}}"],
    ["actor_rollout_ref.model.override_config={a:1}"],
    ["actor_rollout_ref.actor.optim.override_optimizer_config={optimizer_cpu_offload:true}"],  # {} under Megatron
    ["actor_rollout_ref.actor.tau_poss=1.2"],
    ["actor_rollout_ref.actor.megatron.tensor_parallel_size=4"],
    ["actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion=True"],
    ["actor_rollout_ref.rollout.repetition_penalty=1.0"],
    ["+actor_rollout_ref.actor.tau_pos=1.2"],
    ["+actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend=auto"],
    ["+model_engine=megatron"],
    ["model_engine=fsdp9"],
    ["~actor_rollout_ref.actor.megatron.grad_offload"],  # exists in verl 0.8 and main, not 0.9.1
    ["~trainer.no_such_key"],
    ["trainer.foo=1"],
    ["+trainer.foo=1", "+trainer.foo=2"],
    ["~trainer.total_epochs", "trainer.total_epochs=3"],
    ["trainer.total_epochs=[1,2"],
    # config groups (hand-written; the generated cases below have every placement and option)
    ["model_engine=dp", "actor@actor_rollout_ref.actor=megatron_actor", "actor_rollout_ref.actor.megatron.seed=1"],
    ["actor@actor_rollout_ref.actor=dp_actor", "actor_rollout_ref.actor.megatron.seed=1"],
    ["actor_rollout_ref.actor.megatron.seed=1", "actor@actor_rollout_ref.actor=dp_actor"],  # groups apply first
    ["actor_rollout_ref.actor.fsdp_config.param_offload=true", "actor@actor_rollout_ref.actor=dp_actor"],
    ["critic@critic=megatron_critic"],  # critic's package is its own: the key is `critic`
    ["critic=criitc"],
    ["model=hf_model"],  # placed twice: model@actor_rollout_ref.model, model@critic.model
    ["~critic", "critic.model.path=x"],  # model@critic.model still writes there
    ["~critic", "critic.ppo_epochs=1"],
    ["+profiler@actor_rollout_ref.prof=profiler", "actor_rollout_ref.prof.tool=nsys"],
    ["+profiler@actor_rollout_ref.prof=profiler", "actor_rollout_ref.prof.toolx=nsys"],
    ["+optim@actor_rollout_ref.actor.optim=fsdp", "actor_rollout_ref.actor.optim.weight_decay=0.1"],
    ["critic=null"],
    ["~model_engine"],
    ["foo@bar=1"],
    ["critic={ppo_epochs:2}"],  # a mapping is set on the key `critic`, not a group override
]


def _value(entry: dict) -> str | None:
    """An override's text for a value entry's default, when it is a plain scalar."""
    default = entry.get("default")
    if entry.get("kind") != "value" or isinstance(default, (dict, list)) or default is None:
        return None
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, (int, float)):
        return repr(default)
    if isinstance(default, str) and default.replace("_", "").replace("-", "").isalnum():
        return default
    return None


def _leaves(subtree: dict, limit: int, rng: random.Random) -> list[tuple[str, str]]:
    """Up to `limit` (relative key, value) pairs of a subtree's plain scalar keys."""
    found = [(rel, v) for rel, e in sorted(subtree.items()) if rel and (v := _value(e)) is not None]
    return rng.sample(found, min(limit, len(found)))


def _misspelt(name: str) -> str:
    return name[:-2] + name[-1] + name[-2] if len(name) > 2 else name + "x"


def generated_cases(version: str) -> list[list[str]]:
    """Override lists for the config `CONFIG` of one verl snapshot: config-group selections first, then keys."""
    snap = load_snapshot(version, CONFIG)
    rng = random.Random(21)
    selection = snap.default_selection()
    cases: list[list[str]] = []
    other = next(o for o in snap.groups["model_engine"]["options"] if o != selection["model_engine"])
    for key, p in snap.placements.items():
        if key in snap.selecting:
            continue
        group, package = p["group"], p["package"]
        current = snap.selected(key, selection)
        old = snap.subtree(group, current)
        for option in snap.group_options[group]:
            cases.append([f"{key}={option}"])  # every option
            new = snap.subtree(group, option) or {}
            gone = {rel: e for rel, e in old.items() if rel not in new and not e.get("declared_only")}
            for rel, value in _leaves(gone, 1, rng):  # a key only the replaced option has
                cases.append([f"{key}={option}", f"{package}.{rel}={value}"])
        if "${" in p["default"]:  # the option follows model_engine; a swap replaces it
            elsewhere = snap.subtree(group, snap.selected(key, {"model_engine": other}))
            for rel, value in _leaves({r: e for r, e in old.items() if r not in elsewhere}, 1, rng):
                cases.append([f"model_engine={other}", f"{key}={current}", f"{package}.{rel}={value}"])
                cases.append([f"model_engine={other}", f"{package}.{rel}={value}"])
        cases.append([f"{key}={_misspelt(current)}"])
        cases.append([f"{group}@{package}={current}"] if "@" not in key else [f"{group}={current}"])  # wrong key
        cases.append([f"~{key}"])
        for rel, value in _leaves(old, 1, rng):
            cases.append([f"~{key}", f"{package}.{rel}={value}"])
        cases.append([f"+{key}={current}"])
    first = next(iter(k for k in snap.placements if k not in snap.selecting))
    current = snap.selected(first, selection)
    cases += [[f"~{first}={current}"], [f"~{first}={_misspelt(current)}"], [f"{first}=null"], [f"++{first}={current}"]]
    for group in sorted(snap.group_options)[::3]:  # `+` appends at a new package, then its keys
        option = snap.group_options[group][0]
        for rel, value in _leaves(snap.subtree(group, option) or {}, 1, rng):
            cases.append([f"+{group}@sapo_new={option}", f"sapo_new.{rel}={value}"])
            cases.append([f"+{group}@sapo_new={option}", f"sapo_new.{_misspelt(rel)}={value}"])
        cases.append([f"+{group}@sapo_new={_misspelt(option)}"])
    cases += [["no_such_group@x=y"], ["~no_such_group"], ["~model_engine"], ["model_engine=fsdp9"]]
    tree = snap.tree(selection)
    values = [(path, v) for path, e in tree.entries.items() if (v := _value(e)) is not None]
    for path, value in rng.sample(values, 10):
        cases += [[f"{path}={value}"], [f"{_misspelt(path)}={value}"], [f"+{path}={value}"], [f"~{path}x"]]
    return cases


def hydra_verdicts(config_dir: Path, cases: list[list[str]]) -> list[bool]:
    """Whether real Hydra refuses each override list: one initialize for all, a compose per case (each YAML file
    parsed once)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from sapo_toolkit.schemas.build.compose import config_files_parsed_once

    refused = []
    GlobalHydra.instance().clear()
    with config_files_parsed_once(), initialize_config_dir(config_dir=str(config_dir), version_base=None):
        for overrides in cases:
            try:
                compose(CONFIG, overrides=overrides)
            except Exception:  # noqa: BLE001 - any compose failure is a refusal
                refused.append(True)
            else:
                refused.append(False)
    GlobalHydra.instance().clear()
    return refused


def linter_verdicts(version: str, cases: list[list[str]], tmp_path: Path) -> list[bool]:
    path = tmp_path / "empty.yaml"
    path.write_text(recipe(f'verl: "{version}"\noverrides: {{}}'), encoding="utf-8")
    # only the SL rules: SP001 replaces SL001 on a nested tau (one finding per problem), which this test would
    # otherwise read as no compose-time verdict
    settings = Settings(select=["SL"])
    return [bool({d.code for d in lint_paths([path], settings, c).diagnostics} & COMPOSE_TIME) for c in cases]


def disagreements(version: str, config_dir: Path, cases: list[list[str]], tmp_path: Path) -> list[str]:
    hydra = hydra_verdicts(config_dir, cases)
    linter = linter_verdicts(version, cases, tmp_path)
    return [
        f"{' '.join(c)}: Hydra {'refuses' if h else 'composes'}, sapo-lint {'refuses' if s else 'composes'}"
        for c, h, s in zip(cases, hydra, linter, strict=True)
        if h != s
    ]


@pytest.fixture(scope="module")
def verl_main_config_dir(tmp_path_factory) -> Path:
    """verl main's config directories (the trainer's and the experimental ones), from the git archive."""
    if not VERL_MAIN_ARCHIVE.is_file():
        pytest.skip(f"no {VERL_MAIN_ARCHIVE}")
    out = tmp_path_factory.mktemp("verl-main")
    with tarfile.open(VERL_MAIN_ARCHIVE) as tf:
        members = [m for m in tf.getmembers() if "/verl/trainer/config/" in m.name and m.isfile()]
        tf.extractall(out, members, filter="data")
    return next(out.glob("*/verl/trainer/config"))


def selects_group(override: str, groups: dict) -> bool:
    key = override.lstrip("+~").split("=")[0]
    return "@" in key or key in groups


def test_cases_hold_every_kind_of_group_selection():
    for version in ("0.9.1", "0.10.0.dev"):
        groups = load_snapshot(version, CONFIG).group_options
        cases = CASES + generated_cases(version)
        selections = [c for c in cases if any(selects_group(o, groups) for o in c)]
        assert len(cases) >= 200 and len(selections) >= 60, (version, len(cases), len(selections))


@pytest.mark.slow
def test_verl_091_compose_verdicts_match_hydra(verl_config_dir, tmp_path):
    cases = CASES + generated_cases("0.9.1")
    assert not disagreements("0.9.1", verl_config_dir, cases, tmp_path)


@pytest.mark.slow
def test_verl_main_compose_verdicts_match_hydra(verl_main_config_dir, tmp_path):
    cases = CASES + generated_cases("0.10.0.dev")
    assert not disagreements("0.10.0.dev", verl_main_config_dir, cases, tmp_path)
