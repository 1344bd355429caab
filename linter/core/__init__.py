"""The shared core: diagnostics and locations, the Hydra override grammar, the run model (commands and their
located overrides), variant expansion and collapse, and model/accelerator records.

Everything above it (sources, engine, rules, estimator, the linter's API, a launcher) builds on these records;
the core imports nothing else of the project.
"""
