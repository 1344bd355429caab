"""A run script is evaluated once per distinct set of inputs (issue 32 item 4): a combination of switch values that
gives every input an earlier evaluation read the same value would be that evaluation again, so it is not made."""

from sapo_toolkit.linter.sources.bash import script as script_reader
from sapo_toolkit.linter.sources.files import TextFile

# `tp` is switched on, but set before it is read: it is no input, and its values make no variants of their own.
SCRIPT = """#!/bin/bash
BACKEND=${BACKEND:-vllm}
tp=2
if [ "$tp" == 4 ]; then echo four; fi
case "$BACKEND" in
  vllm) NAME=vllm ;;
  sglang) NAME=sglang ;;
esac
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=$NAME \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=$tp
"""


def test_a_combination_that_repeats_the_inputs_of_an_evaluated_one_is_not_evaluated(monkeypatch, tmp_path):
    evaluations = []
    run = script_reader.TrainerCallFinder.run
    monkeypatch.setattr(
        script_reader.TrainerCallFinder, "run", lambda self, root: evaluations.append(1) or run(self, root)
    )
    evaluation = script_reader.evaluate(TextFile(str(tmp_path / "run_x_megatron.sh"), SCRIPT))
    assert dict(evaluation.axes) == {"BACKEND": ["vllm", "sglang"], "tp": ["4", "2"]}
    assert [label for label, _ in evaluation.runs] == ["BACKEND=vllm", "BACKEND=sglang"]
    assert [[text for text, _ in ev.trainers[0].args] for _, ev in evaluation.runs] == [
        ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
        ["actor_rollout_ref.rollout.name=sglang", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
    ]
    assert len(evaluations) == 3  # the script's default, then one per backend (not one per backend and tp)
