"""The course's one vocabulary for the weight-streaming bound of a decode step.

Every lesson, check, hint and claim uses these words with these rates (issue 32: lesson 02 and
lesson 11 once graded opposite figures under one check name):

- **floor**: weight bytes over the *datasheet peak* off-chip bandwidth
  (``offchip.bandwidth_bytes_per_s``), seconds. No run beats it: a step faster than its floor is
  a modelling error (the fidelity report's roofline floor uses the same rate). Its tokens/s
  inverse is the **ceiling**.
- **expected**: weight bytes over the *sustained* off-chip bandwidth
  (``offchip.sustained_bytes_per_s``, what a well-tuned kernel achieves), seconds or tokens/s.
  A good decode step lands near it; it is not a bound (a kernel may beat it a little).
"""

from __future__ import annotations

from workbench.exercises._shared import hardware
from workbench.ir import dtype_info
from workbench.models import build_graph

__all__ = [
    "EXPECTED_RATE",
    "FLOOR_RATE",
    "VOCABULARY",
    "decode_expected_s",
    "decode_floor_s",
    "weight_bytes",
]

#: The rate behind each word, as every hint names it.
FLOOR_RATE = "datasheet peak"
EXPECTED_RATE = "sustained"
#: Word -> the rate it is computed at (floor and ceiling are one bound, in time and in tokens/s).
VOCABULARY = {"floor": FLOOR_RATE, "ceiling": FLOOR_RATE, "expected": EXPECTED_RATE}


def weight_bytes(model: str, dtype: str = "bf16") -> float:
    """Bytes of every weight of ``model`` stored as ``dtype`` (each read once per decode step)."""
    return build_graph(model, "decode", batch=1, seq=1).params * dtype_info(dtype).bytes


def decode_floor_s(model: str, hardware_name: str, dtype: str = "bf16") -> float:
    """The decode floor, seconds: weight bytes over the datasheet peak off-chip bandwidth.

    Example:
        >>> round(decode_floor_s("llama2-7b", "h100-sxm") * 1e3, 2)  # 13.48 GB / 3.35 TB/s
        4.02
    """
    return weight_bytes(model, dtype) / hardware(hardware_name).offchip.bandwidth_bytes_per_s


def decode_expected_s(model: str, hardware_name: str, dtype: str = "bf16") -> float:
    """The expected decode step, seconds: weight bytes over the sustained off-chip bandwidth."""
    return weight_bytes(model, dtype) / hardware(hardware_name).offchip.sustained_bytes_per_s
