"""The review pack's words around its figures: title, declared change, provenance, reproducers.

* :func:`change_label`: a declared change in a few words (``fp32 down_proj``, ``gemm_epilogue
  fusion off``, ``h100-sxm -> h200``), and :func:`pack_title` joining them with the headline
  figure (``fp32 down_proj + gemm_epilogue fusion off: step time +218%``);
* :func:`declared_rows`: the declared change, with hardware-profile figures in their units and the
  profile's ``sources`` and ``description`` prose left out (referred to by the profile hash);
* :func:`provenance_rows`: workbench version, git commit when run from a checkout, each side's
  profile hash and trace file hash;
* :func:`reproducer_rows`: commands whose paths are relative to the pack's folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench._format import fmt_capacity, fmt_change, fmt_quantity, fmt_si
from workbench.errors import printable
from workbench.review.decision.verdict import TriageReport
from workbench.review.diagnosis.changes import _none, change_label
from workbench.review.records.tags import head_commit

__all__ = [
    "change_label",
    "declared_rows",
    "file_sha256",
    "git_commit",
    "pack_title",
    "provenance_rows",
    "reproducer_rows",
    "title_labels",
]

#: Hardware-profile fields shown by reference only (prose, not figures).
_PROSE = ("sources", "description")


def pack_title(r: TriageReport, labels: Sequence[str]) -> str:
    """``<change> + <change>: <compared figure> +N%`` (the candidate's label without changes)."""
    h = r.headline() if r.comparable else None
    what = " + ".join(labels[:3]) + (f" + {len(labels) - 3} more" if len(labels) > 3 else "")
    what = what or f"{r.candidate.label} vs {r.baseline.label}"
    if h is None:
        return f"{what}: refused (the runs are not comparable)"
    return f"{what}: {h['compared']} {fmt_change(h['change'])}"


def title_labels(r: TriageReport) -> list[str]:
    """Labels of the declared changes, the largest counterfactual share first."""
    hw = [c for c in r.declared if c.group == "hardware"]
    rest = [c for c in r.declared if c.group != "hardware"]
    named = next((c for c in hw if c.name in ("profile", "name")), None)
    labels = [change_label(c) for c in rest]
    if named is not None:
        labels.append(change_label(named))
    elif hw:
        labels.append(f"hardware: {len(hw)} figure(s)")
    if r.attribution is not None:
        rank = {change_label(s.change): i for i, s in enumerate(r.attribution.shares)}
        labels.sort(key=lambda x: rank.get(x, len(rank)))
    return list(dict.fromkeys(labels))


def _figure(path: str, text: str) -> str:
    """A profile figure's value in its unit, read from the field name's suffix."""
    try:
        v = float(text)
    except ValueError:
        return text
    leaf = path.rsplit(".", 1)[-1]
    if leaf.endswith("_bytes_per_s"):
        return fmt_si(v, "B/s")
    if leaf.endswith("_flops_per_s") or leaf.endswith("_ops_per_s"):
        return fmt_si(v, "FLOP/s" if "flops" in leaf else "OP/s")
    if leaf.endswith("_bytes"):
        return fmt_capacity(v)
    if leaf.endswith("_s"):
        return fmt_quantity(v, "s")
    if leaf.endswith("_hz"):
        return fmt_si(v, "Hz")
    if leaf.endswith("_w"):
        return fmt_si(v, "W")
    return text


def declared_rows(r: TriageReport) -> list[dict[str, Any]]:
    """The declared change, figure by figure; profile prose by reference (the hash) only."""
    rows, prose = [], 0
    for c in r.declared:
        root = re.split(r"[.\[]", c.name, maxsplit=1)[0]
        if c.group == "hardware" and root in _PROSE:
            prose += 1
            continue
        hw = c.group == "hardware"
        rows.append(
            {
                "group": c.group,
                "name": c.name,
                "before": _figure(c.name, c.before) if hw else _none(c.before),
                "after": _figure(c.name, c.after) if hw else _none(c.after),
            }
        )
    if prose:
        hb, hc = r.baseline.tags.hardware, r.candidate.tags.hardware
        rows.append(
            {
                "group": "hardware",
                "name": f"profile sources and description ({prose} field(s) differ)",
                "before": f"see {hb.profile} (sha256 {hb.hardware_hash[:12]})",
                "after": f"see {hc.profile} (sha256 {hc.hardware_hash[:12]})",
            }
        )
    return rows


def git_commit(where: Path | None = None) -> str:
    """The commit of the checkout holding the workbench package, or ``"not a checkout"``.

    Fails soft: no git, no repository or a timeout give the same answer.
    """
    return head_commit(where or Path(__file__).resolve().parents[3]) or "not a checkout"


def file_sha256(path: str | os.PathLike[str] | None) -> str:
    """SHA-256 of a file's bytes, or ``-`` when there is no file (or it cannot be read)."""
    if path is None:
        return "-"
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return "-"
    return h.hexdigest()


def provenance_rows(
    r: TriageReport, inputs: tuple[str | None, str | None], out_dir: Path | None
) -> list[dict[str, Any]]:
    """What produced the pack and from what: versions, commit, profile and input file hashes."""
    from workbench import __version__

    rows = [
        {"item": "workbench version (this pack)", "baseline": __version__, "candidate": ""},
        {"item": "git commit (this pack)", "baseline": git_commit(), "candidate": ""},
    ]
    b, c = r.baseline.tags, r.candidate.tags
    rows += [
        {
            "item": "workbench version and commit (the run)",
            "baseline": f"{b.compiler.workbench_version} {b.compiler.git_commit}".strip(),
            "candidate": f"{c.compiler.workbench_version} {c.compiler.git_commit}".strip(),
        },
        {
            "item": "hardware profile and sha256",
            "baseline": f"{b.hardware.profile} {b.hardware.hardware_hash}",
            "candidate": f"{c.hardware.profile} {c.hardware.hardware_hash}",
        },
    ]
    rel = [_rel(p, out_dir) or "(built in memory)" for p in inputs]
    rows.append({"item": "input file (record or trace)", "baseline": rel[0], "candidate": rel[1]})
    sha = [file_sha256(p) for p in inputs]
    rows.append({"item": "input file sha256", "baseline": sha[0], "candidate": sha[1]})
    return rows


def _rel(path: str | None, out_dir: Path | None) -> str:
    """``path`` relative to the pack's folder (as given when there is no folder)."""
    # NOTE: shown, never opened: a name that is no UTF-8 or holds a control character is escaped
    if not path:
        return ""
    if out_dir is None:
        return printable(path)
    try:
        return printable(os.path.relpath(os.path.abspath(path), os.path.abspath(out_dir)))
    except ValueError:  # another drive (Windows)
        return printable(path)


def _relative_command(command: str, out_dir: Path | None, record: str | None = None) -> str:
    """A recorded command with every absolute path made relative to the pack's folder.

    ``record``: the record file the pack read; a ``workbench run`` that is not read from a trace
    then writes that file (``--record``) rather than the generic ``run.json``.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    words = [_rel(w, out_dir) if os.path.isabs(w) else w for w in words]
    if record and "--record" in words[:-1] and "--from-trace" not in words:
        words[words.index("--record") + 1] = record
    return shlex.join(words)


def reproducer_rows(
    r: TriageReport, inputs: tuple[str | None, str | None], out_dir: Path | None, out_name: str
) -> list[dict[str, Any]]:
    """The runs, the triage and this pack as commands run from the pack's folder."""
    out_name = printable(out_name)
    names = [
        _rel(p, out_dir) if p else f"{side}.json"
        for p, side in zip(inputs, ("baseline", "candidate"), strict=True)
    ]
    triage_cmd = ["workbench", "triage", *names]
    for g in (r.changed or "").split(","):
        if g:
            triage_cmd += ["--changed", g]
    review_cmd = ["workbench", "review", *triage_cmd[2:], "--out", out_name]
    rows = []
    sides = (("baseline run", r.baseline), ("candidate run", r.candidate))
    for (what, rec), path, name in zip(sides, inputs, names, strict=True):
        is_record = bool(path) and str(path).endswith(".json")
        cmd = _relative_command(rec.command, out_dir, name if is_record else None)
        rows.append({"what": what, "command": cmd if rec.command else "(not recorded)"})
    rows += [
        {"what": "triage", "command": shlex.join(triage_cmd)},
        {"what": "this pack", "command": shlex.join(review_cmd)},
    ]
    return rows
