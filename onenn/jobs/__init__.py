"""The workflow's jobs, one module per stage, each called by one thin ``workflow/scripts/*.py``: the only code
that reads and writes the workflow's files. A job takes plain values (the settings dict of the rule's
``params``, paths, the run's identity, threads, the job's logger), reads its inputs through the checked loaders
of ``onenn.jobs.inputs`` before anything is computed, calls the layer that does the work, and writes its outputs
atomically (``onenn.base.io``). A stage's module imports only what that stage needs, so a job that draws
prompts or aggregates tables never loads torch (``tests/repo/test_layers.py``)."""
