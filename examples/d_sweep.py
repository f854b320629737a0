"""A setting the paper never ran: experiment 1 across the input dimension d, from Python (docs/guide.md#the-python-api).

python examples/d_sweep.py            # the paper's scale: slow (8 seeds x 100000 steps per d)
python examples/d_sweep.py --tiny     # a few seconds
"""

import sys

import onenn
from onenn.analysis.plots import figure

scale = {"steps": 60, "n_eval": 4, "seeds": 2, "test_size": 64, "device": "cpu"} if "--tiny" in sys.argv else {}
results = [onenn.train(experiment="input_dimension", variant=f"d={d}", d=d, **scale) for d in (2, 4, 8, 16)]
table = onenn.evaluate(results)
final = table[(table["step"] == table["steps"]) & (table["test_set"] == "separated")]
print(final.groupby("d")["accuracy"].agg(["mean", "std"]))
figure("sweep", table, group_by=["d"]).savefig("d_sweep.png")
