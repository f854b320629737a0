"""The workflow's jobs, one module per stage, each called by one thin ``workflow/scripts/*.py``: they read checked
inputs (``onenn.jobs.inputs``), call one layer and write atomically; a stage imports only what it needs."""
