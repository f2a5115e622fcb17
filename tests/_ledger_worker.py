"""The child process of the ledger's concurrency tests: it opens a ledger and tries ``charges``
charges of one amount, then prints how many were accepted and how many refused."""

from __future__ import annotations

_SCRIPT = r"""
import json, sys
sys.path.insert(0, {src!r})
from dptree.privacy.ledger import Ledger
from dptree.errors import BudgetExceededError
led = Ledger(sys.argv[1], timeout=60)
ok = refused = 0
for i in range({charges}):
    try:
        led.charge({amount}, label=sys.argv[2] + "-" + str(i))
        ok += 1
    except BudgetExceededError:
        refused += 1
print(json.dumps([ok, refused]))
"""


def worker_script(src: str, charges: int, amount: str) -> str:
    """The child's code: ``amount`` is the keyword of each charge, e.g. ``"epsilon=0.01"``."""
    return _SCRIPT.format(src=src, charges=charges, amount=amount)
