"""How often a compound memory is split right: the facts that must survive an update, on bench/updates/compound_cases.jsonl."""

import json
import sys
from pathlib import Path

from consolidation.hygiene.compound import survivors

cases = [json.loads(line) for line in Path(__file__).with_name("updates").joinpath("compound_cases.jsonl").open()]
right = 0
for case in cases:
    got = survivors(case["older"], case["newer"])
    ok = got == case["survive"]
    right += ok
    if not ok or "-v" in sys.argv:
        print(("ok   " if ok else "WRONG"), case["older"], "->", case["newer"], "| kept:", got)
print(f"{right}/{len(cases)} right ({right / len(cases):.0%})")
