from onenn.pipeline.logs import job_log
from onenn.analysis.plots import PlotStyle, render
from onenn.analysis.tables import read_table

with job_log(snakemake.log[0]):  # noqa: F821
    render(
        snakemake.params.figure,  # noqa: F821
        read_table(snakemake.input[0]),  # noqa: F821
        PlotStyle(**snakemake.params.style),  # noqa: F821
        [snakemake.output.png, snakemake.output.pdf],  # noqa: F821
        snakemake.params.group_by,  # noqa: F821
    )
