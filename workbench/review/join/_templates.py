"""Sharding in a measured pair: the same kernel run with other template arguments.

A kernel's template arguments carry how its work was cut: FBGEMM's TBE kernels are instantiated
per vectors-per-thread (``split_embedding_codegen_forward_unweighted_kernel<float, float, float,
long, 2ul>`` where each rank holds narrower embedding rows than at ``..., 5ul>``), CUTLASS and
PyTorch kernels per tile, block or vector width. Two traces of one workload that launch the same
kernel template from the same operator with different arguments ran it sharded or tiled
differently, which changes its time whatever the GPU. :func:`template_differences` finds them:
per ``(operator, kernel template)``, the argument lists each run used; a pair *differs* when each
side has a list the other lacks (one side running more instantiations, such as a new dtype, is an
operator or data-type difference, said elsewhere).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from workbench._format import fmt_cut
from workbench.evidence.operators import RecordedOps
from workbench.evidence.run import MeasuredRun

__all__ = ["TemplateDifference", "template_differences", "template_split"]

_NO_OP = "(no operator recorded)"


def template_split(name: str) -> tuple[str, tuple[str, ...] | None]:
    """A demangled kernel name as ``(template, its top-level template arguments)``.

    The function is the last name before the parameter list (a return type is skipped); its
    first top-level ``<...>`` holds the arguments. A name without one gives ``(name, None)``.

    >>> template_split("void split_embedding_kernel<float, long, 2ul>(at::Accessor<float, 1>)")
    ('split_embedding_kernel', ('float', 'long', '2ul'))
    >>> template_split("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, 7>(int)")
    ('internal::gemvx::kernel', ('int', '7'))
    >>> template_split("ampere_sgemm_128x64_nn")
    ('ampere_sgemm_128x64_nn', None)
    """
    depth, head = 0, name
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0 and i > 0:
            head = name[:i]
            break
    func, depth, start = head.strip(), 0, 0
    for i, ch in enumerate(func):
        depth += ch == "<"
        depth -= ch == ">" and depth > 0
        if ch == " " and depth == 0:
            start = i + 1
    func = func[start:]
    open_at = func.find("<")
    if open_at <= 0:
        return func or name, None
    args: list[str] = []
    part: list[str] = []
    depth = 0
    for ch in func[open_at + 1 :]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(part).strip())
            part = []
            continue
        part.append(ch)
    args.append("".join(part).strip())
    return func[:open_at].strip(), tuple(args)


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateDifference:
    """One kernel template that a shared operator ran with other arguments in each run.

    Attributes:
        operator: The ``cpu_op`` that launched it (or ``(no operator recorded)``).
        template: The kernel template (``split_embedding_codegen_forward_unweighted_kernel``).
        baseline: The argument lists only the baseline used.
        candidate: The argument lists only the candidate used.
    """

    operator: str
    template: str
    baseline: tuple[tuple[str, ...], ...]
    candidate: tuple[tuple[str, ...], ...]

    def describe(self, limit: int = 60) -> str:
        """``<..., 2ul> vs <..., 5ul>`` (the differing positions when both have one list).

        >>> TemplateDifference(operator="op", template="k", baseline=(("float", "2ul"),),
        ...                    candidate=(("float", "5ul"),)).describe()
        'k<float, 2ul> vs <float, 5ul> (argument 2: 2ul vs 5ul)'
        """
        a, b = self.baseline[0], self.candidate[0]
        first, second = fmt_cut(", ".join(a), limit), fmt_cut(", ".join(b), limit)
        text = f"{self.template}<{first}> vs <{second}>"
        if len(self.baseline) == len(self.candidate) == 1 and len(a) == len(b):
            moved = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
            if moved:
                parts = ", ".join(
                    f"{i + 1}: {fmt_cut(a[i], 24)} vs {fmt_cut(b[i], 24)}" for i in moved[:3]
                )
                text += f" (argument {parts})"
        return text


def _instantiations(
    run: MeasuredRun, ops: RecordedOps
) -> dict[tuple[str, str], set[tuple[str, ...]]]:
    memo: dict[str, tuple[str, tuple[str, ...] | None]] = {}
    out: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for k in run.kernels:
        if k.kind != "kernel" or k.iteration is None:
            continue
        if k.name not in memo:
            memo[k.name] = template_split(k.name)
        template, args = memo[k.name]
        if args is None:
            continue
        op = ops.op_of(k.correlation)
        out[(op.name if op is not None else _NO_OP, template)].add(args)
    return out


def template_differences(
    a: MeasuredRun, ops_a: RecordedOps, b: MeasuredRun, ops_b: RecordedOps
) -> tuple[TemplateDifference, ...]:
    """The kernel templates both runs launch from one operator with other arguments each.

    Args:
        a: The baseline run.
        ops_a: Its operators.
        b: The candidate run.
        ops_b: Its operators.

    Returns:
        One entry per ``(operator, template)`` where each side used an argument list the other
        did not, sorted by operator then template.
    """
    ia, ib = _instantiations(a, ops_a), _instantiations(b, ops_b)
    out = []
    for key in sorted(set(ia) & set(ib)):
        only_a, only_b = ia[key] - ib[key], ib[key] - ia[key]
        if only_a and only_b:
            out.append(
                TemplateDifference(
                    operator=key[0],
                    template=key[1],
                    baseline=tuple(sorted(only_a)),
                    candidate=tuple(sorted(only_b)),
                )
            )
    return tuple(out)
