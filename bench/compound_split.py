"""How often a compound memory is split right: the facts that must survive an update, on
bench/updates/compound_cases.jsonl, per batch of cases (each batch was written before the rules were tuned on it).

    PYTHONPATH=. .venv/bin/python bench/compound_split.py [-v]
"""

import json
import sys
from collections import Counter
from pathlib import Path

from consolidation.hygiene.compound import survivors

cases = [json.loads(line) for line in Path(__file__).with_name("updates").joinpath("compound_cases.jsonl").open()]
right, total = Counter(), Counter()
for case in cases:
    got = survivors(case["older"], case["newer"])
    ok = got == case["survive"]
    right[case["batch"]] += ok
    total[case["batch"]] += 1
    if not ok or "-v" in sys.argv:
        print(("ok   " if ok else "WRONG"), case["older"], "->", case["newer"], "| kept:", got)
for batch in sorted(total):
    print(f"batch {batch}: {right[batch]}/{total[batch]} right ({right[batch] / total[batch]:.0%})")
print(f"all: {sum(right.values())}/{len(cases)} right ({sum(right.values()) / len(cases):.0%})")
