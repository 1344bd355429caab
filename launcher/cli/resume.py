"""`sapo-launch resume RUN_DIR [KEY=VALUE ...]`: continue a run from its checkpoint, as one curve with it."""

from __future__ import annotations

import click

from .rerun import replay_options, replay_run


@click.command("resume")
@replay_options
def resume(**given):
    """Continue RUN_DIR (once it has ended: crashed, stopped, lost, or finished and to be trained further) from its
    last checkpoint, in a new run directory, where it ran (--local: here; --address URL: that cluster): what RUN_DIR
    ran, with OVERRIDES (Hydra `key=value`), saving in RUN_DIR's checkpoint directory, with verl's
    trainer.resume_mode=resume_path at the step its tracker names (resume_mode=auto where the checkpoints are on
    storage only the cluster sees). The two runs are linked both ways (plan.json `resume`, summary.json
    `resumed_by`), and the new run's gates, report and status are over the whole curve: RUN_DIR's steps up to the
    resume point, then its own. Everything else is as for `rerun`."""
    replay_run(resume=True, **given)
