"""sapo-launch: lint, plan and run verl SAPO training from a recipe, on NPU or GPU.

`plan.py` turns a recipe into the trainer's argv and environment (pure); `local.py` runs a plan; `rundir.py`
records it; `device.py` detects the accelerator; `doctor/` checks the installed stack. The launcher reads and
lints recipes only through `sapo_toolkit.linter.api` and the linter's shared `core`.
"""
