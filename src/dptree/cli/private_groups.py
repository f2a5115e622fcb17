"""``--groups private``: the groups of ``--by`` found privately from the data (``dptree release``,
``dptree quantiles``; :mod:`dptree.partitions`).

    dptree release FILE --column C --lower L --upper U --by G --groups private [--user-id U]
                   [--max-groups 1] [--groups-share 0.5] --epsilon E --delta D --out FILE

``--groups-share`` of ``--epsilon`` (and the ``--delta``) selects the groups, the rest releases one
tree (or one set of quantiles) per released group; the released groups are output (printed, and
in ``--out``, one file), and no message names a group that was not released.
"""

from __future__ import annotations

import argparse
from typing import Any

from dptree.errors import InvalidParameterError

__all__ = ["add_private_group_options", "check_private_group_options", "private_groups"]


def add_private_group_options(p: Any) -> None:
    """``--max-groups`` and ``--groups-share`` (with ``--groups private``)."""
    p.add_argument("--max-groups", type=int, default=None, metavar="M",
                   help="with --groups private: the distinct groups one user may add to (default 1; more are dropped "
                        "at random)")
    p.add_argument("--groups-share", type=float, default=0.5, metavar="S",
                   help="with --groups private: the share of --epsilon spent finding the groups (default 0.5)")


def private_groups(args: argparse.Namespace) -> bool:
    """Whether the command finds its groups privately (``--groups private``)."""
    return getattr(args, "groups", None) == "private"


def check_private_group_options(args: argparse.Namespace) -> bool:
    """The options of ``--groups private`` (True when it is given): --out names one file, and
    --max-groups and --groups-share go with it only."""
    if not private_groups(args):
        if args.max_groups is not None or args.groups_share != 0.5:
            raise InvalidParameterError("--max-groups and --groups-share apply to groups found from the data: add "
                                        "--groups private (with --by), or drop them")
        return False
    if args.out is not None and "{group}" in args.out:
        raise InvalidParameterError("with --groups private the groups are found from the data, after the files are "
                                    "checked: --out names one file (it holds every released group), without {group}")
    return True
