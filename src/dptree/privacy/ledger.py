"""A persistent privacy-budget ledger shared by processes: SQLite in WAL mode.

``Ledger(path, total_epsilon=..., total_delta=..., total_rho=...)`` holds the total budget of one
dataset and every charge made against it. A release must be charged *before* its output exists::

    ledger = Ledger("adult.ledger", total_epsilon=3.0)
    plan = plan_range_tree(lower=0, upper=120, epsilon=0.5)        # validate first (no data)
    with ledger.charge_for(plan, label="age") as charge:          # commits the charge, or raises
        release = plan.release(hist)                              # noise is drawn only now
        release.save("age.json")
        charge.output = "age.json"                                # recorded when the block exits

Crash safety. A charge is one row inserted inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` after the
budget check (the check and the insert are one transaction, so concurrent processes cannot
overspend: SQLite serialises writers). The commit is durable when :meth:`Ledger.charge` returns
(``synchronous=FULL``), and only then is noise drawn and the output written. Killing the process
at any moment (kill -9) therefore leaves either no charge and no output, or the charge with or
without the output: never an output without its charge, and never two rows for one charge
(a transaction commits entirely or not at all). A charge whose release then failed or was
killed still counts: its noise may have been drawn. There are no refunds.

Composition against an (epsilon, delta) total: by the ledger's *accountant*, fixed when the
ledger is created (``accountant=``), stored in ``ledger_meta`` and bound into the hash chain:

* ``"renyi"`` (the default when ``total_delta > 0``): a Rényi filter
  (:class:`~dptree.privacy.accounting.RenyiFilter`, Feldman & Zrnic 2021) at orders fixed at
  creation (``orders=``, or one order chosen for a declared ``workload=`` of plans by
  ``RenyiFilter.for_workload``). A charge is accepted iff the filter accepts the sum of every
  charge's Rényi curve with it, each curve recomputed from the chain (the stored loss's
  mechanisms; for a charge of numbers only, randomized response at its epsilon or alpha * rho),
  inside the charge's transaction. Valid under fully adaptive composition (the filter's
  theorem). While every charge is pure, a sum of epsilons within the total is accepted as well
  (on those runs the privacy loss is at most that sum). A charge with an (epsilon, delta) step
  has no Rényi curve: it is counted by the filter's hybrid rule when the ledger was created with
  a share of total_delta set aside for such steps (``approx_delta=``: their deltas add up against
  it, their epsilons enter the filter), and refused (InvalidParameterError) otherwise. The
  accountant never changes (a filter's guarantee is for the rule applied from the first charge);
* ``"basic"`` (the default for a pure epsilon total, and for ledgers upgraded from older
  formats): pure epsilon charges add up (basic composition, Dwork & Roth 2014, Thm 3.16; valid
  adaptively as a filter, Rogers, Roth, Ullman & Vadhan 2016); (epsilon, delta) charges add up
  in both parameters; zCDP charges (Gaussian noise) add up in rho (Bun & Steinke 2016, Lemma
  2.3), converted with CKS 2020 Cor. 13 at the delta that the (epsilon, delta) charges left
  over, and the epsilons add.

Against a rho total (either accountant):

* zCDP charges add up in rho; a pure charge made by :meth:`Ledger.charge_for` counts the exact rho of
  the mechanisms in its stored loss (each Laplace level epsilon_l^2 / 2, so a d-level tree with
  epsilon split evenly epsilon^2 / (2d); an exponential mechanism epsilon^2 / 8, Cesar & Rogers
  2021, Lemma 3.2); a pure charge of numbers only (:meth:`Ledger.charge`) counts epsilon^2 / 2
  (BS16 Prop. 1.4); an (epsilon, delta) charge with delta > 0 cannot be counted against a rho
  total and is refused.

When both an epsilon and a rho total are given, every charge must fit both.

Amounts are stored exactly: each float is recorded as its shortest decimal (what Python prints)
and summed as exact rationals, so ten charges of 0.1 fit a total of 1.0 exactly.

Stored losses. :meth:`Ledger.charge_for` records the plan's
:meth:`~dptree.privacy.loss.PrivacyLoss.to_dict` with the charge, as canonical JSON (sorted keys,
no whitespace): what the release cost, mechanism by mechanism, not only a number.
:meth:`Ledger.charge` records none (``history()`` shows ``loss`` None, "numbers only").

Integrity (format 3). The file itself is the trust anchor: there is no secret, so whoever can
write the file can replace it wholesale (delete it, or rebuild a consistent one with a smaller
spend). What the ledger does is fail closed on every edit it can see:

* CHECK constraints refuse rows whose amounts are not non-negative finite decimals (negative
  numbers, NaN, Infinity) and malformed kinds, statuses and hashes, at the SQL level;
* the charges form a hash chain: each row stores the SHA-256 of the previous row's hash and its
  own immutable fields (id, time, label, kind, epsilon, delta, rho, pid, stored loss); a stored
  loss must not spend more than its row's amounts; the chain starts from a
  hash of the totals and a random ledger id, and its head is stored in ``ledger_meta``. The chain,
  the schema, the totals and the spend (which can never exceed the totals) are verified on every
  open and inside every charge's transaction, so an edited, inserted or deleted row, an edited
  total, a dropped or rebuilt table or an added trigger raises :class:`LedgerCorruptError`;
* tables are created only in an empty database, never re-created in an existing ledger.

Not detected: a rewrite that recomputes the chain with this code (SHA-256 is unkeyed), a
whole-file replacement or deletion, and edits of a charge's ``status`` and ``output`` columns
(bookkeeping outside the chain: they do not enter the spend). Keep the ledger where only the
releasing account can write, and back it up.

Backups. A committed charge may sit in the ``-wal`` file beside the ledger until SQLite
checkpoints it into the main file, so a copy of the main file alone is not a backup: it can lack
the latest charges, and restoring it refunds them silently. :meth:`Ledger.backup` (``dptree budget
PATH --backup OUT``) writes a copy that holds every committed charge (SQLite's online backup API).

Ledgers written by dptree in format 1 (no chain) or format 2 (no stored loss) raise
:class:`LedgerOutdatedError` when opened. :meth:`Ledger.upgrade` (``dptree budget PATH
--upgrade``) checks every old charge (and a format-2 chain), builds the current table and chain
over them, in one transaction, and carries them over as numbers only.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Iterable, Sequence, cast

from dptree.errors import (
    BudgetExceededError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    LedgerLockedError,
    LedgerOutdatedError,
    LedgerReadOnlyError,
)
from dptree.privacy.budget import check_delta
from dptree.privacy.ledger_accountant import (
    Spend,
    accountant_text,
    parse_accountant,
)
from dptree.privacy.ledger_format import (
    ROW_FIELDS,
    Totals,
    amount_fraction,
    amount_text,
    describe_charge,
    describe_totals,
    mechanisms_text,
    row_hash,
    utc_now,
)
from dptree.privacy.ledger_rules import LedgerRules
from dptree.privacy.loss import PrivacyLoss

__all__ = [
    "Ledger",
    "Charge",
    "Spend",
    "LedgerError",
    "LedgerCorruptError",
    "LedgerLockedError",
    "LedgerOutdatedError",
    "LedgerReadOnlyError",
]


@dataclass
class Charge:
    """One committed charge. Usable as a context manager: on exit it records ``output`` and
    whether the block succeeded (``done``) or raised (``failed``); the charge counts either way."""

    ledger: "Ledger"
    id: int
    label: str
    epsilon: float
    delta: float
    rho: float
    loss: PrivacyLoss | None = field(default=None, repr=False)
    output: str | None = None
    status_recorded: bool = True
    _closed: bool = field(default=False, repr=False)

    def __enter__(self) -> "Charge":
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if not self._closed:
            self._closed = True
            try:
                self.ledger._finish(self.id, "done" if et is None else "failed", self.output)
            except LedgerLockedError:
                # The charge itself is committed; only its outcome could not be recorded (it stays
                # 'charged'). Failing here would report an error for a release that was made.
                self.status_recorded = False



class Ledger(LedgerRules):
    """A privacy budget shared by every process that opens the same SQLite file.

    The first opening creates the file and fixes the totals (``total_epsilon`` with
    ``total_delta``, and/or ``total_rho``); later openings may omit them or must repeat them.
    ``timeout`` bounds the wait (seconds) for another process's transaction. ``read_only=True``
    opens an existing ledger for inspection only.

    Example::

        >>> import os, tempfile, numpy as np, dptree
        >>> path = os.path.join(tempfile.mkdtemp(), "budget.db")
        >>> ages = 18 + np.arange(10_000) % 73
        >>> ledger = dptree.Ledger(path, total_epsilon=3.0)  # creates the file, fixes the total
        >>> plan = dptree.plan_range_tree(lower=0, upper=120, epsilon=1.0)
        >>> with ledger.charge_for(plan, label="ages"):  # charged before the data is read
        ...     rel = plan.release(dptree.leaf_histogram(ages, plan), rng=7)
        >>> [(c["label"], c["epsilon"], c["status"]) for c in ledger.history()]
        [('ages', 1.0, 'done')]
        >>> ledger.charge(epsilon=2.5, label="too much")
        Traceback (most recent call last):
            ...
        dptree.errors.BudgetExceededError: ledger ...: this release (epsilon=2.5) would exceed the total budget ...
        >>> ledger.close()
        >>> with dptree.Ledger(path) as again:  # a later opening, here or in another process
        ...     again.spent()
        Spend(epsilon=1.0, delta=0.0, rho=0.25, charges=1)
    """


    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        total_epsilon: float | None = None,
        total_delta: float = 0.0,
        total_rho: float | None = None,
        timeout: float = 10.0,
        read_only: bool = False,
        accountant: str | None = None,
        orders: Sequence[float] | None = None,
        workload: Iterable[Any] | None = None,
        approx_delta: float | None = None,
    ) -> None:
        self.path = self._check_path(path)
        self.timeout = self._check_timeout(timeout)
        self.read_only = read_only
        requested = self._requested_totals(total_epsilon, total_delta, total_rho)
        wanted = self._requested_accountant(requested, accountant, orders, workload, approx_delta)
        if wanted is not None:
            self._new_orders, self._new_approx_delta = wanted[1], wanted[2]
        exists = self.path.exists()
        if self.path.is_dir():
            raise LedgerError(f"ledger path {self.path} is a directory; give a file name such as budget.ledger")
        if read_only:
            if not exists:
                raise LedgerError(f"ledger file not found: {self.path}")
        else:
            self._check_writable(exists)
            if not exists and requested is None:
                raise InvalidParameterError(
                    f"{self.path} is a new ledger: give its total budget, e.g. total_epsilon=1.0 "
                    "(with total_delta) and/or total_rho"
                )
            if not exists:
                self._create_file(cast(Totals, requested))
        self._con = self._connect()
        try:
            self._totals = self._open(requested)
            # verified by the chain on open
            self._orders, self._approx_delta = parse_accountant(self._meta().get("accountant"))
        except BaseException:
            self._con.close()
            raise
        asked = (accountant, orders, workload, approx_delta) != (None, None, None, None)
        if wanted is not None and asked:
            name, want_orders, want_reserve = wanted
            if name != self.accountant or (name == "renyi" and (
                    ((orders is not None or workload is not None) and want_orders != self._orders)
                    or (approx_delta is not None and want_reserve != self._approx_delta))):
                self._con.close()
                raise InvalidParameterError(
                    f"ledger {self.path} was created with the accountant "
                    f"{accountant_text(self._orders, self._approx_delta)}; the accountant cannot change (a filter's "
                    "guarantee holds for the rule applied from the first charge): omit it to use the stored one")

    @property
    def accountant(self) -> str:
        """The accountant of the epsilon total, fixed when the ledger was created.

        ``basic`` (epsilons and deltas add up) or ``renyi`` (a Rényi filter at :attr:`orders`)."""
        return "basic" if self._orders is None else "renyi"

    @property
    def orders(self) -> tuple[float, ...] | None:
        """The Rényi filter's orders (None with the basic accountant)."""
        return self._orders

    @property
    def approx_delta(self) -> float:
        """The part of total_delta the Rényi filter sets aside for releases with an (epsilon, delta)
        step (0.0: such releases are refused; always 0.0 with the basic accountant, which adds up
        their deltas with the rest)."""
        return float(self._approx_delta)

    # ------------------------------------------------------------------ opening
    @staticmethod
    def _requested_totals(eps: object, delta: object, rho: object) -> Totals | None:
        if eps is None and rho is None:
            if delta not in (0, 0.0, None):
                raise InvalidParameterError("total_delta needs total_epsilon as well", parameter="total_delta")
            return None
        for name, v in (("total_epsilon", eps), ("total_rho", rho)):
            if v is not None and isinstance(v, (int, float)) and not isinstance(v, bool) and not 0 < v < math.inf:
                raise InvalidParameterError(f"{name} must be a finite number > 0, got {v!r}", parameter=name)
        e = None if eps is None else amount_text(eps, "total_epsilon")
        r = None if rho is None else amount_text(rho, "total_rho")
        d = amount_text(check_delta(0.0 if delta is None else delta), "total_delta")
        if (e is not None and amount_fraction(e) == 0) or (r is not None and amount_fraction(r) == 0):
            raise InvalidParameterError("total_epsilon and total_rho must be > 0")
        return Totals(None if e is None else amount_fraction(e), amount_fraction(d),
                      None if r is None else amount_fraction(r))

    @property
    def total_epsilon(self) -> float | None:
        return None if self._totals.epsilon is None else float(self._totals.epsilon)

    @property
    def total_delta(self) -> float:
        return float(self._totals.delta)

    @property
    def total_rho(self) -> float | None:
        return None if self._totals.rho is None else float(self._totals.rho)

    def spent(self) -> Spend:
        """The budget spent so far: epsilon (and delta) as counted against the epsilon total, rho
        as counted against the rho total. With the renyi accountant, epsilon is what the filter's
        running sums convert to at the total's delta (split over its orders; see
        :class:`~dptree.privacy.accounting.RenyiFilter`) and delta is the total's. Verifies the
        ledger first (raises LedgerCorruptError if it was edited)."""
        return self._spend_of(self._read()[0])

    def can_afford(self, *release_plans: Any) -> bool:
        """Whether :meth:`charge_for` would accept ``release_plans`` now, charged one after another
        (the same checks on one verified snapshot; nothing is written, and a read-only ledger can
        answer). Another process may charge in between: only :meth:`charge_for` reserves the budget."""
        return self._what_if(release_plans)[0] == len(release_plans)

    def fits(self, *release_plans: Any) -> int:
        """How many of ``release_plans``, charged one after another now, the ledger would accept
        before the first refusal (nothing is written)."""
        return self._what_if(release_plans)[0]

    def spent_with(self, *release_plans: Any) -> Spend:
        """What :meth:`spent` would report after charging ``release_plans`` now, one after another
        (nothing is written; :meth:`can_afford` says whether they would be accepted). A plan that
        the ledger could never charge (an (epsilon, delta) step under the renyi accountant without
        delta set aside for it) raises InvalidParameterError, as its charge would."""
        return self._what_if(release_plans, refuse=True)[1]

    def _what_if(self, release_plans: Sequence[Any], refuse: bool = False) -> tuple[int, Spend]:
        """How many of the plans, charged in order, would be accepted before the first refusal, and
        the spend after all of them."""
        if not release_plans:
            raise InvalidParameterError("give at least one release plan")
        s, accepted, refused = self._read()[0], 0, False
        for plan in release_plans:
            epsilon, delta, rho, text = self._plan_charge(plan)
            kind, fe, fd, fr, cost, pure_rho = self._charge_terms(epsilon, delta, rho, text)
            if refuse:
                self._refuse_curveless(kind, fd, cost)
            refused = refused or self._violation(s, kind, fe, fd, fr, pure_rho, cost, text) is not None
            accepted += not refused
            s = self._after(s, kind, fe, fd, fr, pure_rho, cost)
        return accepted, self._spend_of(s)

    # ------------------------------------------------------------------ charging
    def charge(
        self,
        *,
        epsilon: float = 0.0,
        delta: float = 0.0,
        rho: float = 0.0,
        label: str = "",
    ) -> Charge:
        """Check the budget and commit one charge, atomically; raise BudgetExceededError if it
        does not fit. Give ``epsilon`` (pure), ``epsilon`` and ``delta`` (approximate DP), or
        ``rho`` (zCDP, for Gaussian noise). Call it after validating the release's parameters and
        before reading the data and drawing its noise; the returned :class:`Charge` is committed
        and durable. The ledger is verified inside the same transaction (LedgerCorruptError)."""
        return self._commit(epsilon, delta, rho, label, None)

    def _commit(self, epsilon: float, delta: float, rho: float, label: str, loss: str | None) -> Charge:
        """Check and commit one charge (amounts, and the canonical JSON of its stored loss or None)."""
        if self.read_only:
            raise LedgerReadOnlyError(f"ledger {self.path} was opened read_only; open it writable to charge releases")
        if not isinstance(label, str):
            raise InvalidParameterError("label must be a string")
        kind, fe, fd, fr, cost, pure_rho = self._charge_terms(epsilon, delta, rho, loss)
        self._refuse_curveless(kind, fd, cost)
        e, d, r = amount_text(epsilon, "epsilon"), amount_text(delta, "delta"), amount_text(rho, "rho")
        con = self._con
        with self._transaction("BEGIN IMMEDIATE"):  # read the verified state, check, append the chained row
            s = self._state()
            why = self._violation(s, kind, fe, fd, fr, pure_rho, cost, loss)
            if why is not None:
                left = self._spend_of(s)
                raise BudgetExceededError(
                    f"ledger {self.path}: this release ({describe_charge(fe, fd, fr)}) would exceed the "
                    f"total budget ({describe_totals(self._totals, 'total_')}): {why}. Already spent in {s.n} "
                    f"charges: epsilon {left.epsilon:.6g}, delta {left.delta:.3g}, rho {left.rho:.6g}. "
                    "Ask a smaller budget or stop releasing from this data."
                )
            cid, created, pid = s.last_id + 1, utc_now(), os.getpid()
            own = row_hash(s.head, (cid, created, label, kind, e, d, r, pid, loss))
            con.execute(
                f"INSERT INTO charges({ROW_FIELDS}, status, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "'charged', NULL)",
                (cid, created, label, kind, e, d, r, pid, loss, s.head, own),
            )
            con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (own,))
        return Charge(ledger=self, id=cid, label=label, epsilon=float(fe), delta=float(fd), rho=float(fr),
                      loss=None if cost is None else cost.loss)

    def charge_for(self, release_plan: Any, *, label: str = "") -> Charge:
        """Charge the budget of a validated release plan (every ``plan_*`` of dptree: its privacy
        ``statement``; a plan whose statement states no ``budget_spent`` is charged its
        ``budget``, e.g. :func:`dptree.plan_hierarchy_counts`'s) and store its
        :meth:`privacy_loss` with the charge, inside the hash chain.

        Laplace plans charge their requested epsilon (>= what the rounded noise spends); Gaussian
        plans charge rho (the requested rho, or the rho their (epsilon, delta) budget converts to).
        Against a rho total, a pure plan counts the exact rho of its mechanisms (a d-level Laplace
        tree epsilon^2 / (2d), an exponential mechanism epsilon^2 / 8). The amounts never fall
        below what the stored loss spends. A statement passed alone is charged as numbers only.
        """
        epsilon, delta, rho, text = self._plan_charge(release_plan)
        return self._commit(epsilon, delta, rho, label, text)

    # ------------------------------------------------------------------ inspection
    def history(self) -> list[dict[str, Any]]:
        """Every charge, oldest first: id, time (UTC), label, kind, epsilon, delta, rho, status,
        output, ``loss`` (the stored :meth:`PrivacyLoss.to_dict`, or None for a charge of numbers
        only), ``mechanisms`` (its families, e.g. ``laplace x10``, or ``numbers only``) and its
        marginal cost: ``marginal_epsilon`` and ``marginal_rho``, how much it raised :meth:`spent`'s
        epsilon and rho when it was charged, as the ledger's accountant counts them.
        Verifies the ledger first (raises LedgerCorruptError if it was edited)."""
        _, rows = self._read(
            "SELECT id, created_utc, label, kind, epsilon, delta, rho, status, output, loss FROM charges ORDER BY id"
        )
        keys = ("id", "created_utc", "label", "kind", "epsilon", "delta", "rho", "status", "output", "loss")
        out = []
        s = self._empty_state()
        before = self._spend_of(s)
        for row in rows:
            rec = dict(zip(keys, row))
            for k in ("epsilon", "delta", "rho"):
                rec[k] = float(amount_fraction(rec[k]))
            kind, fe, fd, fr, cost, pure_rho = self._charge_terms(rec["epsilon"], rec["delta"], rec["rho"], rec["loss"])
            s = self._after(s, kind, fe, fd, fr, pure_rho, cost)
            after = self._spend_of(s)
            rec["loss"] = None if cost is None else cost.loss.to_dict()
            rec["mechanisms"] = mechanisms_text(cost)
            rec["marginal_epsilon"] = after.epsilon - before.epsilon
            rec["marginal_rho"] = after.rho - before.rho
            before = after
            out.append(rec)
        return out

    # ------------------------------------------------------------------ backup
    def backup(self, path: str | os.PathLike[str], *, force: bool = False) -> Spend:
        """Write a copy of the whole ledger to ``path``, every committed charge included, and
        return the spend it holds.

        Committed charges may still be in the ledger's ``-wal`` file, so a copy of the main file
        alone can lack them (restoring it would refund them). This copies through SQLite's online
        backup API, which reads what this connection sees: one consistent snapshot, even while
        other processes charge. The copy is one self-contained file (no ``-wal``), written next to
        ``path``, verified like any ledger, then renamed into place. An existing ``path`` is
        replaced only with ``force=True``, and then only when it is not an SQLite file or is an
        earlier backup of this same ledger; never the ledger itself or its journal files."""
        out = self._check_path(path, "backup")
        self._check_backup_path(out, force)

        def verified(copy: str) -> Spend:
            with Ledger(copy, read_only=True, timeout=self.timeout) as led:
                return led.spent()

        return self._backup_to(out, verified)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Ledger {self.path} totals {describe_totals(self._totals)}>"
