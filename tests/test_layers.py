"""The layering of the package: the workflow's layer never imports torch, so the Snakefile and the jobs that do
not train start without paying for it (docs/architecture.md)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pipeline_and_what_the_snakefile_imports_do_not_import_torch_or_pandas():
    code = (
        "import sys\n"
        "import onenn.pipeline, onenn.pipeline.experiments, onenn.pipeline.validate, onenn.pipeline.resources\n"
        "import onenn.pipeline.settings, onenn.pipeline.io, onenn.pipeline.logs, onenn.pipeline.provenance\n"
        "import onenn.pipeline.jobs, onenn.pipeline.inputs, onenn.pipeline.paths\n"
        "print('torch' in sys.modules, 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False", out.stderr


def test_the_snakefile_imports_only_the_pipeline_layer():
    sources = [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]
    imports = [
        line.strip()
        for path in sources
        for line in path.read_text().splitlines()
        if line.strip().startswith(("from onenn", "import onenn"))
    ]
    assert imports, "the Snakefile imports nothing from onenn?"
    assert all(line.split()[1].startswith("onenn.pipeline") for line in imports), imports
