"""TriagePanel: load two run records or a practice scenario and see the triage live.

A scenario dropdown (or :meth:`TriagePanel.load_records`) fills the panel; the declared change
dropdown re-runs triage. The panel shows the headline, the first failing mechanism with its
evidence, the debug branches and the ownership table.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from workbench.review import SCENARIOS, TAG_GROUPS, build_scenario, load_record, triage
from workbench.review.decision.verdict import TriageReport
from workbench.review.records.store import RunRecord

__all__ = [
    "TriagePanel",
    "branches_html",
    "first_failing_html",
    "headline_html",
    "owners_html",
    "show_pack",
]


def show_pack(pack: Any, *, height_px: int = 720) -> Any:
    """Render a review pack in the notebook (an ``IPython.display.HTML`` to display).

    The page goes into a sandboxed ``<iframe srcdoc>`` (its own document: its styles and the
    inlined chart JavaScript do not leak into the notebook); the page text is escaped into the
    attribute, so it is shown, never interpreted by the notebook itself.

    Args:
        pack: A :class:`~workbench.review.pack.content.ComparisonPack`, or a pack page's HTML text.
        height_px: Frame height, pixels.

    Returns:
        The ``IPython.display.HTML`` object.
    """
    from IPython.display import HTML

    from workbench.report.review_pack import comparison_html

    page = pack if isinstance(pack, str) else comparison_html(pack)
    return HTML(
        f'<div class="wb-pack"><iframe sandbox="allow-scripts" '
        f'srcdoc="{html.escape(page, quote=True)}" '
        f'style="width:100%;height:{int(height_px)}px;border:1px solid #ccc"></iframe></div>'
    )


def headline_html(r: TriageReport) -> str:
    """MFU, time and stall fraction by layer type before/after (escaped HTML)."""
    b, c = r.baseline.model, r.candidate.model
    sb, sc = b.stall(), c.stall()
    stall = ", ".join(
        f"{html.escape(k)} {sb.get(k, 0):.0%} &rarr; {sc.get(k, 0):.0%}"
        for k in sorted(set(sb) | set(sc))
    )
    head = html.escape(f"{r.baseline.label} vs {r.candidate.label}")
    if not r.comparable:
        tags = "".join(f"<li>{html.escape(m)}</li>" for m in r.mismatched_tags)
        declared = html.escape(r.changed or "(none)")
        hint = "".join(f"{html.escape(x)}<br>" for x in r.reasons if x.startswith("tags differ"))
        return (
            f"<b>{head}</b><br><b>REFUSED</b> (declared changed: {declared}): mismatched "
            f"tags<ul>{tags}</ul>{hint}"
        )
    h = r.headline()
    what = html.escape(f"{h['compared']} {h['change']:+.1%}")
    mfu = " &rarr; ".join(f"{m.mfu:.1%}" if m.peak_flops > 0 else "unknown" for m in (b, c))
    reasons = "".join(f"<li>{html.escape(x)}</li>" for x in r.reasons)
    return (
        f"<b>{head}</b><br>time {b.time_s * 1e6:.1f} &rarr; {c.time_s * 1e6:.1f} us "
        f"({what}), MFU {mfu}<br>stall: {stall or 'n/a'}<br>decision: "
        f"<b>{html.escape(r.decision)}</b><ul>{reasons}</ul>"
    )


def first_failing_html(r: TriageReport) -> str:
    """The first failing mechanism, its owner and evidence (escaped HTML)."""
    ff = r.first_failing
    if ff is None:
        return "<i>no failing mechanism</i>" if r.comparable else "<i>triage refused</i>"
    owner = html.escape(r.owner.role) if r.owner else "?"
    where = f"{ff.family} x{ff.count}" if ff.family and ff.count > 1 else ff.kernel
    return (
        f"<b>{html.escape(ff.mechanism)}</b> at <code>{html.escape(where)}</code>, "
        f"{ff.share:.0%} of the regression (owner: {owner})<br>{html.escape(ff.evidence)}"
    )


def branches_html(r: TriageReport) -> str:
    """The debug branches as a table (escaped HTML)."""
    rows = "".join(
        f"<tr><td>{html.escape(n.status)}</td><td>{html.escape(n.question)}</td>"
        f"<td>{html.escape(n.evidence)}</td><td>{html.escape(n.next_action)}</td></tr>"
        for n in r.branches
    )
    return f"<table><tr><th>status</th><th>question</th><th>evidence</th><th>next</th></tr>{rows}</table>"  # noqa: E501


def owners_html(r: TriageReport) -> str:
    """The ownership table, the assigned role marked (escaped HTML)."""
    rows = "".join(
        f"<tr><td>{'&#9654; ' if r.owner and o.role == r.owner.role else ''}"
        f"{html.escape(o.role)}</td><td>{html.escape(o.responsibility)}</td>"
        f"<td>{html.escape(o.closure_artifact)}</td></tr>"
        for o in r.owners.roles
    )
    return f"<table><tr><th>role</th><th>responsibility</th><th>closure artifact</th></tr>{rows}</table>"  # noqa: E501


class TriagePanel:
    """Pick a scenario (or load two records); the triage sections update live.

    Example:
        >>> p = TriagePanel(scenario="eager-launch", simulate=False)
        >>> p.report.first_failing.mechanism
        'launch_sync_overhead'
    """

    def __init__(self, scenario: str | None = "epilogue-fusion", *, simulate: bool = False):
        self.simulate = simulate
        self._records: tuple[RunRecord, RunRecord] | None = None
        self._busy = False
        self.scenario = widgets.Dropdown(options=["(records)", *SCENARIOS], description="scenario")
        self.changed = widgets.Dropdown(options=["(none)", *TAG_GROUPS], description="changed")
        self.headline = widgets.HTML()
        self.first_failing = widgets.HTML()
        self.branches = widgets.HTML()
        self.owners = widgets.HTML()
        self.report: TriageReport | None = None
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.scenario, self.changed]),
                self.headline,
                widgets.HTML("<h4>First failing mechanism</h4>"),
                self.first_failing,
                widgets.HTML("<h4>Debug branches</h4>"),
                self.branches,
                widgets.HTML("<h4>Owners</h4>"),
                self.owners,
            ]
        )
        if scenario is not None:
            self.load_scenario(scenario)
        self.scenario.observe(self._on_scenario, names="value")
        self.changed.observe(self._on_changed, names="value")

    def _on_changed(self, _change: dict) -> None:
        if not self._busy and self._records is not None:
            self.update()

    def load_scenario(self, name: str) -> TriageReport:
        """Build scenario ``name``, declare its changed group, and triage it."""
        self._records = build_scenario(name)
        self._busy = True
        try:
            self.scenario.value = name
            self.changed.value = SCENARIOS[name].changed
        finally:
            self._busy = False
        return self.update()

    def load_records(self, baseline: str | Path, candidate: str | Path) -> TriageReport:
        """Load two run record files and triage them."""
        self._records = (load_record(baseline), load_record(candidate))
        self._busy = True
        try:
            self.scenario.value = "(records)"
        finally:
            self._busy = False
        return self.update()

    def _on_scenario(self, change: dict) -> None:
        if change["new"] != "(records)" and not self._busy:
            self.load_scenario(change["new"])

    def update(self) -> TriageReport:
        """Re-run triage with the declared change and refresh every section."""
        if self._records is None:
            raise ValueError("TriagePanel: load a scenario or two records first")
        changed = None if self.changed.value == "(none)" else self.changed.value
        r = triage(*self._records, changed=changed, simulate=self.simulate)
        self.report = r
        self.headline.value = headline_html(r)
        self.first_failing.value = first_failing_html(r)
        self.branches.value = branches_html(r)
        self.owners.value = owners_html(r)
        return r

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
