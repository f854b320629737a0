# Figures: one seaborn figure per experiment, PNG and PDF.


rule figure:
    input:
        "results/tables/{experiment}.parquet",
    output:
        png="results/figures/{experiment}.png",
        pdf="results/figures/{experiment}.pdf",
    log:
        "logs/figures/{experiment}.log",
    params:
        figure=lambda wc: config["experiments"][wc.experiment]["figure"],
        style=config["plots"],
    script:
        "../scripts/figure.py"
