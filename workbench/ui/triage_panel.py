"""TriagePanel: load two run records or a practice scenario and see the triage live.

A scenario dropdown (or :meth:`TriagePanel.load_records`) fills the panel; the declared change
dropdown re-runs triage. The panel shows the headline, the first failing mechanism with its
evidence, the debug branches and the ownership table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as widgets

from workbench.report._html import Html, each
from workbench.review import SCENARIOS, TAG_GROUPS, build_scenario, load_record, triage
from workbench.review.decision.verdict import TriageReport
from workbench.review.diagnosis.headline import anchor_of
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
        Html(
            '<div class="wb-pack"><iframe sandbox="allow-scripts" srcdoc="{}" '
            'style="width:100%;height:{}px;border:1px solid #ccc"></iframe></div>'
        ).format(str(page), int(height_px))  # NOTE: the page is text of the attribute: escaped
    )


def headline_html(r: TriageReport) -> str:
    """MFU, time and stall fraction by layer type before/after (escaped HTML)."""
    b, c = r.baseline.model, r.candidate.model
    sb, sc = b.stall(), c.stall()
    stall = Html(", ").join(
        Html("{} {:.0%} &rarr; {:.0%}").format(k, sb.get(k, 0), sc.get(k, 0))
        for k in sorted(set(sb) | set(sc))
    )
    head = f"{r.baseline.label} vs {r.candidate.label}"
    if not r.comparable:
        return Html(
            "<b>{}</b><br><b>REFUSED</b> (declared changed: {}): mismatched tags<ul>{}</ul>{}"
        ).format(
            head,
            r.changed or "(none)",
            each("<li>{}</li>", r.mismatched_tags),
            each("{}<br>", (x for x in r.reasons if x.startswith("tags differ"))),
        )
    h = r.headline()
    # NOTE: three significant figures, as the decision's reasons print it (0.0597%, not 0.1%)
    mfu = Html(" &rarr; ").join(
        f"{m.mfu * 100:.3g}%" if m.peak_flops > 0 else "unknown" for m in (b, c)
    )
    return Html(
        "<b>{}</b><br>time {:.1f} &rarr; {:.1f} us ({}), MFU {}<br>stall: {}<br>decision: "
        "<b>{}</b><ul>{}</ul>"
    ).format(
        head, b.time_s * 1e6, c.time_s * 1e6, f"{h['compared']} {h['change']:+.1%}", mfu,
        stall or "n/a", r.decision, each("<li>{}</li>", r.reasons),
    )  # fmt: skip


def first_failing_html(r: TriageReport) -> str:
    """The first failing mechanism, its owner and evidence (escaped HTML)."""
    ff = r.first_failing
    if ff is None:
        return Html("<i>no failing mechanism</i>" if r.comparable else "<i>triage refused</i>")
    owner = r.owner.role if r.owner else "?"
    where = anchor_of(ff)  # NOTE: every family the share is made of, counts and times adding up
    return Html("<b>{}</b> at <code>{}</code>, {:.0%} of the regression (owner: {})<br>{}").format(
        ff.mechanism, where, ff.share, owner, ff.evidence
    )


def branches_html(r: TriageReport) -> str:
    """The debug branches as a table (escaped HTML)."""
    rows = each(
        "<tr>{}</tr>",
        (
            each("<td>{}</td>", (n.status, n.question, n.evidence, n.next_action))
            for n in r.branches
        ),
    )
    return Html(
        "<table><tr><th>status</th><th>question</th><th>evidence</th><th>next</th></tr>{}</table>"
    ).format(rows)


def owners_html(r: TriageReport) -> str:
    """The ownership table, the assigned role marked (escaped HTML)."""
    mark = Html("&#9654; ")
    rows = Html("").join(
        Html("<tr><td>{}{}</td><td>{}</td><td>{}</td></tr>").format(
            mark if r.owner and o.role == r.owner.role else "",
            o.role,
            o.responsibility,
            o.closure_artifact,
        )
        for o in r.owners.roles
    )
    return Html(
        "<table><tr><th>role</th><th>responsibility</th><th>closure artifact</th></tr>{}</table>"
    ).format(rows)


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
