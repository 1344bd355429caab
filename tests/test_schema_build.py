"""The committed schema snapshots are exactly what schemas/build/ makes from the real wheels.

The wheels come from the package registry (`pip download --no-deps`) into a cache directory
(`$SAPO_LINT_WHEEL_CACHE`, default `~/.cache/sapo-lint/wheels`); when the registry cannot be reached the
rebuild tests are skipped with a message.  verl, torch and megatron are never imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sapo_toolkit.linter.schema import SnapshotNotFound, entrypoints, load_snapshot, tree_entries
from sapo_toolkit.schemas import build

# Snapshot rebuilds from real wheels (a build of verl 0.9.1 takes about 40 s): run by .ci/run and `-m slow`. The
# builder is covered by the default command through the small trees of test_verl_source.py and
# test_hardening_repository_verl.py.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"

# The committed megatron-core snapshots were built from the cp311 manylinux x86_64 wheels.
MCORE_PLATFORM = [
    "--only-binary=:all:",
    "--implementation",
    "cp",
    "--python-version",
    "3.11",
    "--abi",
    "cp311",
    "--platform",
    "manylinux_2_28_x86_64",
]

_NETWORK_MARKERS = (
    "NewConnectionError",
    "ConnectionError",
    "ConnectTimeout",
    "ReadTimeout",
    "Connection refused",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Max retries exceeded",
    "ProxyError",
    "Network is unreachable",
    "No route to host",
    "SSLError",
    "timed out",
    "Could not fetch URL",
)


def _cache_dir() -> Path:
    env = os.environ.get("SAPO_LINT_WHEEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sapo-lint" / "wheels"


def _wheel(requirement: str, pattern: str, extra: list[str] | None = None) -> Path:
    cache = _cache_dir()
    found = sorted(cache.glob(pattern))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--no-input",
        "--timeout",
        "30",
        "--retries",
        "1",
        requirement,
        "-d",
        str(cache),
        *(extra or []),
    ]
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip(f"package registry unreachable: `pip download {requirement}` timed out")
    found = sorted(cache.glob(pattern))
    if proc.returncode == 0 and found:
        return found[0]
    output = proc.stdout + proc.stderr
    hits = [ln.strip() for ln in output.splitlines() if any(m in ln for m in _NETWORK_MARKERS)]
    if hits:
        pytest.skip(
            f"package registry unreachable, cannot download {requirement} into {cache} "
            f"(or put the wheel there): {hits[-1][:200]}"
        )
    if "No matching distribution found" in output:
        pytest.skip(
            f"the package registry serves no wheel of {requirement} for {' '.join(extra or ['this platform'])}"
            f" (put one in {cache})"
        )
    pytest.fail(f"`{' '.join(cmd)}` failed (rc={proc.returncode}):\n{output[-3000:]}")


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def verl_091_wheel() -> Path:
    return _wheel("verl==0.9.1", "verl-0.9.1-*.whl")


@pytest.fixture(scope="session")
def mcore_0121_wheel() -> Path:
    return _wheel("megatron-core==0.12.1", "megatron_core-0.12.1-*.whl", MCORE_PLATFORM)


@pytest.fixture(scope="session")
def verl_091(verl_091_wheel) -> dict:
    located = build.locate_verl(wheel=verl_091_wheel)
    assert located.version == "0.9.1" and located.commit is None
    assert located.source == verl_091_wheel.name
    return build.build_verl_snapshot(*located)


@pytest.fixture(scope="session")
def mcore_0121(mcore_0121_wheel) -> dict:
    return build.build_consumer_snapshot(mcore_0121_wheel)


# ---------------------------------------------------------------------------------------------------------------
# Rebuild == committed
# ---------------------------------------------------------------------------------------------------------------


def _trees(snapshot: dict) -> dict[tuple[str, str], dict]:
    return {
        (name, key): tree_entries(snapshot, name, key)
        for name, stored in snapshot.get("tree_sets", {}).items()
        for key in stored["trees"]
    }


def _first_differences(built: dict, committed: dict, limit: int = 10) -> list[str]:
    out = []
    a_trees, b_trees = _trees(built), _trees(committed)
    for tree in sorted(set(a_trees) | set(b_trees)):
        a, b = a_trees.get(tree, {}), b_trees.get(tree, {})
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                out.append(f"{tree} tree [{k}]: built={a.get(k)} committed={b.get(k)}")
                if len(out) >= limit:
                    return out
    for k in sorted(set(built) | set(committed)):
        if k != "tree_sets" and built.get(k) != committed.get(k):
            out.append(f"{k} differs")
    return out


@pytest.mark.network
def test_verl_091_snapshot_is_byte_identical_to_committed(verl_091, verl_091_wheel):
    path = build.verl_snapshot_path(SCHEMAS, "0.9.1")
    text = build.snapshot_text(verl_091)
    committed_text = path.read_text(encoding="utf-8")
    if text != committed_text:
        diffs = _first_differences(json.loads(text), json.loads(committed_text))
        pytest.fail(
            f"{path.relative_to(ROOT)} is stale; regenerate with "
            f"`sapo-lint schema build --wheel {verl_091_wheel}`:\n" + "\n".join(diffs)
        )


@pytest.mark.network
def test_verl_080_snapshot_is_byte_identical_to_committed():
    wheel = _wheel("verl==0.8.0", "verl-0.8.0-*.whl")
    located = build.locate_verl(wheel=wheel)
    text = build.snapshot_text(build.build_verl_snapshot(*located))
    committed_text = build.verl_snapshot_path(SCHEMAS, "0.8.0").read_text(encoding="utf-8")
    if text != committed_text:
        diffs = _first_differences(json.loads(text), json.loads(committed_text))
        pytest.fail(
            f"schemas/verl/0.8.0.json is stale; regenerate with `sapo-lint schema build --wheel {wheel}`:\n"
            + "\n".join(diffs)
        )


@pytest.mark.network
def test_megatron_core_0121_snapshot_matches_committed(mcore_0121, mcore_0121_wheel):
    committed = _load(build.consumer_snapshot_path(SCHEMAS, "megatron-core", "0.12.1"))
    built = json.loads(build.snapshot_text(mcore_0121))
    assert built["source"] == mcore_0121_wheel.name
    assert committed["source"].startswith("megatron_core-0.12.1-")

    def strip(d: dict) -> dict:  # the platform tag of the wheel only
        return {k: v for k, v in d.items() if k != "source"}

    assert strip(built) == strip(committed)


# ---------------------------------------------------------------------------------------------------------------
# Behaviour of the built snapshot
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def meg(verl_091) -> dict[str, dict]:
    return tree_entries(verl_091, "ppo_trainer", "model_engine=megatron")  # as the linter reads it


@pytest.mark.network
def test_groups(verl_091):
    configs = verl_091["configs"]
    assert sorted(configs) == [
        "evaluation",
        "fully_async_ppo_megatron_trainer",
        "fully_async_ppo_trainer",
        "one_step_off_ppo_megatron_trainer",
        "one_step_off_ppo_trainer",
        "ppo_megatron_trainer",
        "ppo_trainer",
        "sft_trainer_engine",
    ]
    assert configs["ppo_trainer"]["groups"]["model_engine"] == {
        "default": "dp",
        "options": ["dp", "megatron", "torchtitan", "veomni"],
    }
    assert configs["ppo_megatron_trainer"]["groups"]["model_engine"]["default"] == "megatron"
    # ppo_megatron_trainer.yaml is ppo_trainer with another model_engine default: one tree set for both
    assert configs["ppo_megatron_trainer"]["trees"] == configs["ppo_trainer"]["trees"] == "ppo_trainer"
    assert sorted(verl_091["tree_sets"]["ppo_trainer"]["trees"]) == [
        f"model_engine={o}" for o in configs["ppo_trainer"]["groups"]["model_engine"]["options"]
    ]


@pytest.mark.network
def test_tau_lives_on_the_actor(meg):
    assert meg["actor_rollout_ref.actor.tau_pos"] == {"kind": "value", "type": "float", "default": 1.0}
    assert meg["actor_rollout_ref.actor.tau_neg"]["type"] == "float"
    pl = meg["actor_rollout_ref.actor.policy_loss"]
    assert pl["target"] == "verl.workers.config.PolicyLossConfig"
    assert pl["instantiated"] is True
    assert pl["kind"] == "node"
    assert "loss_mode" in pl["fields"] and "tau_pos" not in pl["fields"] and "tau_neg" not in pl["fields"]
    assert "actor_rollout_ref.actor.policy_loss.tau_pos" not in meg


@pytest.mark.network
def test_registry_choices(meg):
    loss_modes = meg["actor_rollout_ref.actor.policy_loss.loss_mode"]["choices"]
    assert "sapo" in loss_modes and "vanilla" in loss_modes and "clip_cov" in loss_modes
    assert len(loss_modes) == 12  # @register_policy_loss in verl 0.9.1 verl/trainer/ppo/core_algos.py
    adv = meg["algorithm.adv_estimator"]["choices"]
    assert {"gae", "grpo", "rloo", "tir_optimal_token_baseline"} <= set(adv) and len(adv) == 14
    assert set(meg["actor_rollout_ref.rollout.name"]["choices"]) == {"vllm", "sglang", "trtllm"}
    agg = meg["actor_rollout_ref.actor.loss_agg_mode"]["choices"]
    assert "seq-mean-token-mean" in agg and "token-mean" in agg and len(agg) == 5
    assert meg["critic.loss_agg_mode"]["choices"] == agg
    assert meg["model_engine"]["choices"] == ["dp", "megatron", "torchtitan", "veomni"]


@pytest.mark.network
def test_ref_inherits_actor_transformer_overrides(meg):
    ref = meg["actor_rollout_ref.ref.megatron.override_transformer_config"]
    assert ref["interpolation"] == "${oc.select:actor_rollout_ref.actor.megatron.override_transformer_config,{}}"
    assert ref["kind"] == "dict"
    assert ref["consumer"] == "megatron-core:TransformerConfig"
    actor = meg["actor_rollout_ref.actor.megatron.override_transformer_config"]
    assert actor["kind"] == "dict" and actor["consumer"] == "megatron-core:TransformerConfig"
    # keys already in the open dict are ordinary value entries
    rg = meg["actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity"]
    assert rg["kind"] == "value" and rg["default"] is None and rg["nullable"] is True


@pytest.mark.network
def test_consumers(meg, verl_091):
    assert meg["actor_rollout_ref.actor.optim.override_optimizer_config"]["consumer"] == "megatron-core:OptimizerConfig"
    assert meg["critic.megatron.override_ddp_config"]["consumer"] == "megatron-core:DistributedDataParallelConfig"
    for role in ("actor_rollout_ref.actor", "critic"):
        assert meg[f"{role}.checkpoint.mbridge_config"]["consumer"] == "mbridge:save_weights"
    dp = tree_entries(verl_091, "ppo_trainer", "model_engine=dp")
    # FSDP optimizer overrides are not megatron's; ray_init goes to ray.init (verl/trainer/main_ppo.py)
    assert [k for k, e in dp.items() if "consumer" in e] == ["ray_kwargs.ray_init"]


@pytest.mark.network
def test_instantiation(meg):
    assert meg["algorithm"]["target"] == "verl.trainer.config.AlgoConfig"
    assert meg["algorithm"]["instantiated"] is False
    assert meg["reward"]["instantiated"] is False
    assert meg["global_profiler"]["instantiated"] is False
    assert meg["actor_rollout_ref.actor"]["instantiated"] is True
    assert meg["actor_rollout_ref.rollout"]["instantiated"] is True
    assert meg["reward.reward_model.rollout"]["instantiated"] is True  # RolloutReplica: verl/workers/rollout/replica.py


@pytest.mark.network
def test_declared_only_fields(meg):
    # dataclass fields of verl 0.9.1 (verl/workers/config/*.py, verl/trainer/config/*.py) missing from its YAML
    expected = {
        "actor_rollout_ref.rollout": [
            "repetition_penalty",
            "standalone_gpu_memory_utilization",
            "server",
            "enable_sleep_mode",
            "limit_images",
        ],
        "actor_rollout_ref.actor": ["ppo_infer_micro_batch_size_per_gpu", "use_rollout_log_probs", "profile"],
        "actor_rollout_ref.actor.optim": ["grad_clip", "use_layer_wise_param_layout"],
        "actor_rollout_ref.actor.megatron": ["strategy", "use_dynamic_bsz", "full_determinism"],
        "actor_rollout_ref.actor.policy_loss": ["rollout_correction"],
        "actor_rollout_ref.actor.checkpoint": ["save_lora_only"],
        "actor_rollout_ref.rollout.agent": ["agent_loop_manager_class"],
        "algorithm": ["gdpo_reward_keys", "gdpo_reward_weights"],
        "critic.checkpoint": ["strict", "save_lora_only"],
    }
    for node, names in expected.items():
        for n in names:
            assert meg[f"{node}.{n}"].get("declared_only") is True, f"{node}.{n}"
    assert meg["actor_rollout_ref.rollout.repetition_penalty"] == {
        "declared_only": True,
        "kind": "value",
        "type": "float",
    }
    assert "declared_only" not in meg["actor_rollout_ref.actor.tau_pos"]


@pytest.mark.network
def test_grad_offload_is_version_specific(meg):
    assert "actor_rollout_ref.actor.megatron.grad_offload" not in meg
    old = tree_entries(_load(build.verl_snapshot_path(SCHEMAS, "0.8.0")), "ppo_trainer", "model_engine=megatron")
    e = old["actor_rollout_ref.actor.megatron.grad_offload"]
    assert e["kind"] == "value" and e["type"] == "bool"


@pytest.mark.network
def test_read_set(verl_091):
    rs = verl_091["read_set"]
    assert rs == sorted(set(rs))
    assert {"tau_pos", "tau_neg", "loss_mode", "override_transformer_config", "mbridge_config"} <= set(rs)


@pytest.mark.network
def test_optimizer_config_versions(mcore_0121):
    old = mcore_0121["classes"]["OptimizerConfig"]["fields"]
    assert "decoupled_weight_decay" not in old
    assert old["clip_grad"] == {"type": "float", "default": "1.0"}
    new = _load(build.consumer_snapshot_path(SCHEMAS, "megatron-core", "0.15.3"))["classes"]["OptimizerConfig"]
    assert new["fields"]["decoupled_weight_decay"]["type"] == "bool"
    tc = mcore_0121["classes"]["TransformerConfig"]["fields"]
    assert "tensor_model_parallel_size" in tc  # inherited from ModelParallelConfig
    assert set(tc) < set(mcore_0121["classes"]["MLATransformerConfig"]["fields"])


# ---------------------------------------------------------------------------------------------------------------
# Offline checks
# ---------------------------------------------------------------------------------------------------------------


def test_mbridge_snapshots():
    assert build.mbridge_git_main_snapshot() == _load(build.consumer_snapshot_path(SCHEMAS, "mbridge", "git-main"))
    main = _load(build.consumer_snapshot_path(SCHEMAS, "mbridge", "git-main"))["classes"]["save_weights"]["fields"]
    pypi = _load(build.consumer_snapshot_path(SCHEMAS, "mbridge", "0.15.1"))["classes"]["save_weights"]["fields"]
    assert sorted(pypi) == ["memory_efficient", "models", "weights_path"]
    assert {"distributed_filesystem", "strict"} <= set(main) and "self" not in main


def test_write_snapshot_is_atomic_and_deterministic(tmp_path):
    snap = {
        "format": 3,
        "tree_sets": {
            "t": {
                "base": {"b": {"kind": "value", "default": 1}, "a": {"kind": "node"}},
                "trees": {"dp": {"set": {}, "unset": ["b"]}},
            }
        },
        "read_set": ["y", "x"],
    }
    p = tmp_path / "sub" / "s.json"
    build.write_snapshot(snap, p)
    first = p.read_bytes()
    build.write_snapshot(json.loads(first), p)
    assert p.read_bytes() == first
    assert json.loads(first) == snap
    assert [f.name for f in p.parent.iterdir()] == ["s.json"]
    text = first.decode()
    assert '\n"a":{"kind":"node"},\n' in text  # one line per entry, sorted
    assert '"unset":[\n"b"\n]' in text and '"read_set":[\n"y",\n"x"\n]' in text  # one per line, in order
    assert '"set":{}' in text


def test_committed_verl_snapshots_are_in_the_writers_layout():
    for path in sorted((SCHEMAS / "verl").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        assert data["format"] == 4 and path.stem == data["verl_version"]
        assert build.snapshot_text(data) == text, path.name
    assert not [p for p in (SCHEMAS / "verl").iterdir() if p.suffix != ".json"]


def test_split_trees_round_trips():
    from sapo_toolkit.schemas.build.layout import split_trees

    node, dict_, other = {"kind": "node"}, {"kind": "dict"}, {"kind": "value", "default": 2}
    trees = {  # "a" everywhere; "b" changed by y; "c" only in x and y; "d" only in z; "e": a tie x/y, absent in z
        "x": {"a": node, "b": other, "c": node, "e": node},
        "y": {"a": node, "b": dict_, "c": node, "e": dict_},
        "z": {"a": node, "b": other, "d": node},
    }
    base, engines = split_trees(trees)
    assert base == {"a": node, "b": other, "c": node, "e": node}  # majority; the tie on "e" goes to x, the first
    assert engines == {
        "x": {"set": {}, "unset": []},
        "y": {"set": {"b": dict_, "e": dict_}, "unset": []},
        "z": {"set": {"d": node}, "unset": ["c", "e"]},
    }
    snapshot = {"tree_sets": {"t": {"base": base, "trees": engines}}}
    for option, tree in trees.items():
        rebuilt = tree_entries(snapshot, "t", option)
        assert rebuilt == tree and list(rebuilt) == sorted(tree)


def test_loader_reads_one_file_per_version():
    for version in ("0.9.1", "0.8.0"):
        trainer, megatron = load_snapshot(version, "ppo_trainer"), load_snapshot(version, "ppo_megatron_trainer")
        assert trainer.groups["model_engine"]["default"] == "dp"
        assert megatron.groups["model_engine"]["default"] == "megatron"
        assert trainer.read_set is megatron.read_set  # one parsed file for both configs
        assert trainer.tree({"model_engine": "megatron"}) is megatron.tree({"model_engine": "megatron"})
        assert entrypoints(version)["verl.trainer.main_ppo"] == "ppo_trainer"


@pytest.mark.parametrize("version", ["../verl/0.9.1", "0.9.1/..", "..", "", "0.9.1/", "/etc/passwd", ".9", "0..9"])
def test_loader_rejects_versions_that_are_not_plain(version):
    with pytest.raises(SnapshotNotFound):
        load_snapshot(version, "ppo_trainer")
    assert entrypoints(version) == entrypoints("0.9.1")  # unknown: the newest snapshot's


def test_generator_is_lazy_and_never_imports_the_linter():
    code = (
        "import sys; import sapo_toolkit.schemas.build as b; heavy = {'hydra', 'omegaconf', 'libcst'}; "
        "assert not heavy & set(sys.modules), heavy & set(sys.modules); "
        "import pkgutil, importlib; "
        "[importlib.import_module(m.name) for m in pkgutil.iter_modules(b.__path__, b.__name__ + '.')]; "
        "print(sorted(m for m in sys.modules if m.startswith('sapo_toolkit.linter')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_locate_installed_verl_without_importing_it():
    from importlib import metadata

    try:
        metadata.distribution("verl")
    except metadata.PackageNotFoundError:
        with pytest.raises(build.SchemaBuildError, match="not installed"):
            build.locate_verl()
    else:
        pkg, version, source, _ = build.locate_verl()
        assert (pkg / "trainer" / "config" / "ppo_trainer.yaml").is_file() and version in source
    assert "verl" not in sys.modules


def test_locate_verl_errors(tmp_path):
    with pytest.raises(build.SchemaBuildError):
        build.locate_verl(wheel=tmp_path / "missing.whl")
    with pytest.raises(build.SchemaBuildError):
        build.locate_verl(verl_root=tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# verl main (a git archive), the other trainer configs, ray
# ---------------------------------------------------------------------------------------------------------------

VERL_MAIN_ARCHIVE = Path("/work/shared/verl-src/verl-main-1dda039.tar.gz")
needs_verl_main = pytest.mark.skipif(not VERL_MAIN_ARCHIVE.is_file(), reason=f"no {VERL_MAIN_ARCHIVE}")


@pytest.fixture(scope="session")
def verl_main() -> dict:
    located = build.locate_verl(verl_root=VERL_MAIN_ARCHIVE)
    assert located.version == "0.10.0.dev"
    assert located.commit == "1dda039b9c6311889a9c9a26040677e1254814f9"  # from the archive's pax header
    return build.build_verl_snapshot(*located)


@needs_verl_main
def test_verl_main_snapshot_is_byte_identical_to_committed(verl_main):
    path = build.verl_snapshot_path(SCHEMAS, "0.10.0.dev")
    text = build.snapshot_text(verl_main)
    committed_text = path.read_text(encoding="utf-8")
    if text != committed_text:
        diffs = _first_differences(json.loads(text), json.loads(committed_text))
        pytest.fail(
            f"{path.relative_to(ROOT)} is stale; regenerate with "
            f"`sapo-lint schema build --verl-root {VERL_MAIN_ARCHIVE}`:\n" + "\n".join(diffs)
        )
    assert verl_main["commit"] == "1dda039b9c6311889a9c9a26040677e1254814f9"
    assert verl_main["source"] == "git archive verl-main-1dda039.tar.gz of commit " + verl_main["commit"]


@needs_verl_main
def test_verl_main_has_the_keys_the_corpus_uses(verl_main):
    meg = tree_entries(verl_main, "ppo_trainer", "model_engine=megatron")
    assert meg["actor_rollout_ref.actor.megatron.grad_offload"]["type"] == "bool"  # not in 0.9.1 (test above)
    # verl/trainer/config/algorithm.py: `rollout_is_threshold: str | float = 2.0` on RolloutCorrectionConfig, the
    # annotation of AlgoConfig.rollout_correction (no _target_ in algorithm/rollout_correction.yaml)
    assert meg["algorithm.rollout_correction.rollout_is_threshold"]["type"] == "float|str"
    assert "inferred" not in meg["algorithm.rollout_correction.rollout_is_threshold"]
    # FSDPEngineConfig.turbo_config: dict[str, Any], handed whole to fsdp_turbo (fsdp_turbo_impl.py)
    dp = tree_entries(verl_main, "ppo_trainer", "model_engine=dp")
    for path in (
        "actor_rollout_ref.actor.fsdp_config.turbo_config",
        "actor_rollout_ref.actor.fsdp_config.turbo_config.distributed",
        "actor_rollout_ref.actor.fsdp_config.turbo_config.distributed.fsdp_plan",
    ):
        assert dp[path]["kind"] == "dict", path
    assert dp["actor_rollout_ref.actor.fsdp_config.turbo_config.distributed.fsdp_plan.param_dtype"]["kind"] == "value"
    # FSDPEngineConfig.mixed_precision: Optional[dict[str, Any]], not in the YAML
    assert dp["actor_rollout_ref.actor.fsdp_config.mixed_precision"] == {
        "declared_only": True,
        "kind": "dict",
        "nullable": True,
        "type": "dict",
    }
    assert dp["ray_kwargs.ray_init"] == {"consumer": "ray:init", "kind": "dict", "type": "dict"}
    assert dp["ray_kwargs.ray_init.runtime_env"]["kind"] == "dict"


@needs_verl_main
def test_verl_main_other_trainer_configs(verl_main):
    configs = verl_main["configs"]
    sft = configs["sft_trainer_engine"]
    assert sft["groups"]["engine"] == {
        "default": "fsdp",
        "options": ["automodel", "fsdp", "megatron", "torchtitan", "veomni"],
    }
    assert sft["groups"]["model"] == {"default": "hf_model", "options": ["hf_model"]}
    assert sft["trees"] == "sft_trainer_engine"
    trees = verl_main["tree_sets"]["sft_trainer_engine"]["trees"]
    assert len(trees) == 25 and "engine=megatron,optim=megatron" in trees
    mm = tree_entries(verl_main, "sft_trainer_engine", "engine=megatron,optim=megatron")
    assert mm["engine.tensor_model_parallel_size"]["type"] == "int"
    assert "engine.fsdp_size" not in mm
    assert "engine.fsdp_size" in tree_entries(verl_main, "sft_trainer_engine", "engine=fsdp,optim=fsdp")
    # verl/experimental/fully_async_policy/fully_async_main.py: @hydra.main(config_name="fully_async_ppo_trainer"),
    # whose YAML finds ppo_trainer through `hydra.searchpath: [pkg://verl.trainer.config]`
    assert (
        verl_main["entrypoints"]["verl.experimental.fully_async_policy.fully_async_main"] == "fully_async_ppo_trainer"
    )
    assert configs["fully_async_ppo_megatron_trainer"]["trees"] == configs["fully_async_ppo_trainer"]["trees"]
    assert configs["fully_async_ppo_megatron_trainer"]["groups"]["model_engine"]["default"] == "megatron"
    fa = verl_main["tree_sets"]["fully_async_ppo_trainer"]
    assert fa["extends"] == "ppo_trainer" and "base" not in fa  # stored as differences from ppo_trainer's trees
    fully_async = tree_entries(verl_main, "fully_async_ppo_trainer", "model_engine=megatron")
    assert fully_async["async_training.staleness_threshold"]["type"] == "float"
    assert "async_training.staleness_threshold" not in tree_entries(verl_main, "ppo_trainer", "model_engine=megatron")


@pytest.fixture(scope="session")
def ray_wheel() -> Path:
    # the snapshot reads ray's Python sources, the same in every platform's wheel: the running platform's is enough
    return _wheel("ray==2.60.0", "ray-2.60.0-*.whl", ["--only-binary=:all:"])


@pytest.mark.network
def test_ray_init_snapshot_matches_committed(ray_wheel):
    built = json.loads(build.snapshot_text(build.build_consumer_snapshot(ray_wheel)))
    committed = _load(build.consumer_snapshot_path(SCHEMAS, "ray", "2.60.0"))
    assert built == committed
    fields = committed["classes"]["init"]["fields"]
    assert {"num_cpus", "runtime_env", "namespace", "address"} <= set(fields)
    # popped from **kwargs in ray/_private/worker.py init(); any other keyword raises RuntimeError
    assert fields["_temp_dir"]["hidden"] is True and fields["object_spilling_directory"]["hidden"] is True
    assert "**kwargs" not in fields and "kwargs" not in fields


def test_source_archive_gives_its_commit(tmp_path):
    import tarfile

    root = tmp_path / "verl-main"
    (root / "verl" / "trainer" / "config").mkdir(parents=True)
    (root / "verl" / "trainer" / "config" / "ppo_trainer.yaml").write_text("a: 1\n")
    (root / "verl" / "version").mkdir()
    (root / "verl" / "version" / "version").write_text("9.9.dev\n")
    archive = tmp_path / "verl-main-abcdef0.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "ab" * 20}) as tf:
        tf.add(root, arcname="verl-main")
    located = build.locate_verl(verl_root=archive)
    assert (located.version, located.commit) == ("9.9.dev", "ab" * 20)
    assert located.source == f"git archive {archive.name} of commit {'ab' * 20}"
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w", format=tarfile.PAX_FORMAT) as tf:
        tf.add(root, arcname="verl-main")
    assert build.locate_verl(verl_root=plain).commit is None


def test_union_annotations():
    from sapo_toolkit.schemas.build.annotations import analyze_annotation
    from sapo_toolkit.schemas.build.source_index import Index

    index = Index(Path("/nonexistent"), packages=())

    def t(code: str):
        return analyze_annotation(index, "m", code)

    assert t("str | float").type == "float|str"
    assert t("Optional[Union[int, str]]").type == "int|str" and t("Optional[Union[int, str]]").nullable
    assert t("int | float").type == "float"  # an int is a float
    assert t("float").type == "float"
    assert t("int | Any").type == "any"


# ---------------------------------------------------------------------------------------------------------------
# megatron-core from Megatron-LM source archives (releases the package index does not have)
# ---------------------------------------------------------------------------------------------------------------

MEGATRON_SRC = Path("/work/shared/megatron-src")
# archive -> the version its megatron/core/package_info.py gives (tag core_v0.19.0 says 0.19.1)
MEGATRON_ARCHIVES = {"mlm-core_v0.18.0.tar.gz": "0.18.0", "mlm-core_v0.19.0.tar.gz": "0.19.1"}


@pytest.mark.parametrize("archive,version", sorted(MEGATRON_ARCHIVES.items()))
def test_megatron_source_snapshots_are_byte_identical_to_committed(archive, version):
    path = MEGATRON_SRC / archive
    if not path.is_file():
        pytest.skip(f"no {path}")
    built = build.build_consumer_snapshot(path)
    committed = build.consumer_snapshot_path(SCHEMAS, "megatron-core", version)
    assert built["version"] == version
    assert build.snapshot_text(built) == committed.read_text(encoding="utf-8"), (
        f"{committed.relative_to(ROOT)} is stale; regenerate with `sapo-lint schema build --consumer-wheel {path}`"
    )
    flags = built["classes"]["arguments"]["fields"]
    # the flags MindSpeed reads from Megatron's parsed arguments on NPU (none is a TransformerConfig field)
    assert {"swiglu", "use_distributed_optimizer", "use_flash_attn"} <= set(flags)
    assert not {"swiglu", "use_distributed_optimizer"} & set(built["classes"]["TransformerConfig"]["fields"])
    assert flags["masked_softmax_fusion"]["flag"] == "--no-masked-softmax-fusion"
