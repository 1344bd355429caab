"""sapo-lint: pre-launch checks for verl + Megatron SAPO training recipes."""

__version__ = "0.1.0"
