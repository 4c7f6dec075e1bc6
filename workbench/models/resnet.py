"""ResNet-50 v1.5 (torchvision): every convolution, batch norm, ReLU, residual add and pool.

v1.5 puts the stride-2 of each stage's first bottleneck on the 3x3 convolution (v1 puts it on the
first 1x1), which is what torchvision ships: 4.09 GMACs at 224x224 and 25,557,032 parameters.

Batch norm is kept as its own op, an :class:`~workbench.ir.Elementwise` of kind ``"affine"``
(inference form: per-channel scale and shift, 2 FLOPs per element, gamma and beta = 2 parameters
per channel). Lowering may fold it into the preceding convolution; the graph keeps it so that the
parameter count matches the published one.
"""

from __future__ import annotations

from workbench.errors import WorkbenchError
from workbench.ir import Conv2d, Elementwise, Graph, Pool, Reshape
from workbench.models._blocks import Stack

__all__ = ["resnet50_graph"]

# (bottleneck width, blocks, stride of the first block) for stages conv2_x .. conv5_x
_STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))


class _Net:
    """Tracks the current activation (name, channels, height, width) while ops are added."""

    def __init__(self, st: Stack, batch: int, layout: str) -> None:
        self.st, self.batch, self.layout = st, batch, layout
        self.axis = 1 if layout == "NCHW" else -1

    def shape(self, c: int, h: int, w: int) -> tuple[int, ...]:
        """Activation shape of ``c`` channels of ``h x w`` in this layout."""
        return (self.batch, c, h, w) if self.layout == "NCHW" else (self.batch, h, w, c)

    def conv_bn(
        self, name: str, x: str, chw: tuple[int, int, int], k: int, kernel: int, stride: int,
        relu: bool,
    ) -> tuple[str, tuple[int, int, int]]:  # fmt: skip
        """Add conv -> batch norm (-> ReLU); return the output name and (channels, h, w)."""
        c, h, w = chw
        conv = Conv2d(
            name=f"{name}.conv", inputs=(x,), batch=self.batch, in_channels=c, height=h,
            width=w, out_channels=k, kernel_h=kernel, kernel_w=kernel, stride=stride,
            padding=kernel // 2, dtype=self.st.dtype, layout=self.layout,
        )  # fmt: skip
        y = self.st.add(conv)
        out = (k, conv.out_h, conv.out_w)
        y = self.st.add(
            Elementwise(
                name=f"{name}.bn", inputs=(y,), op="affine", shape=self.shape(*out),
                channel_axis=self.axis, dtype=self.st.dtype, layer_type="norm",
            )
        )  # fmt: skip
        if relu:
            y = self.st.ew(f"{name}.relu", "relu", (y,), self.shape(*out), "elementwise")
        return y, out

    def bottleneck(
        self, name: str, x: str, chw: tuple[int, int, int], width: int, stride: int
    ) -> tuple[str, tuple[int, int, int]]:
        """Add a bottleneck block (1x1, 3x3 with the stride, 1x1, shortcut, add, ReLU)."""
        a, s = self.conv_bn(f"{name}.conv1", x, chw, width, 1, 1, relu=True)
        a, s = self.conv_bn(f"{name}.conv2", a, s, width, 3, stride, relu=True)
        a, s = self.conv_bn(f"{name}.conv3", a, s, 4 * width, 1, 1, relu=False)
        short = x
        if stride != 1 or chw[0] != 4 * width:
            short, _ = self.conv_bn(f"{name}.downsample", x, chw, 4 * width, 1, stride, False)
        y = self.st.ew(f"{name}.add", "add", (short, a), self.shape(*s), "elementwise")
        return self.st.ew(f"{name}.relu", "relu", (y,), self.shape(*s), "elementwise"), s


def resnet50_graph(
    batch: int = 1, image: int = 224, dtype: str = "bf16", layout: str = "NCHW", classes: int = 1000
) -> Graph:
    """Build ResNet-50 v1.5 inference on ``batch`` square RGB images of ``image`` pixels.

    Args:
        batch: Images.
        image: Height and width in pixels.
        dtype: Activation and weight dtype.
        layout: ``"NCHW"`` or ``"NHWC"``.
        classes: Outputs of the final fully connected layer.

    Returns:
        The graph (names ``stem.*``, ``layer{1..4}.{block}.*``, ``avgpool``, ``fc``).

    >>> g = resnet50_graph()
    >>> sum(op.macs for op in g.ops if op.kind == "Conv2d") + g.op("fc").m * 2048 * 1000
    4089184256
    """
    for key, value in (("batch", batch), ("image", image), ("classes", classes)):
        if not isinstance(value, int) or value <= 0:
            raise WorkbenchError(f"resnet50: {key} must be a positive integer, got {value!r}")
    if image < 32:
        raise WorkbenchError(f"resnet50: image must be at least 32 pixels, got {image}")
    if layout not in ("NCHW", "NHWC"):
        raise WorkbenchError(f"resnet50: layout must be NCHW or NHWC, got {layout!r}")
    st = Stack(dtype=dtype, ops=[])
    net = _Net(st, batch, layout)
    x, s = net.conv_bn("stem", "image", (3, image, image), 64, 7, 2, relu=True)
    pool = Pool(
        name="stem.maxpool", inputs=(x,), batch=batch, channels=64, height=s[1], width=s[2],
        kernel=3, stride=2, padding=1, op="max", layout=layout, dtype=dtype,
    )  # fmt: skip
    x = st.add(pool)
    s = (64, *pool.out_hw)
    for li, (width, blocks, stride) in enumerate(_STAGES, start=1):
        for b in range(blocks):
            x, s = net.bottleneck(f"layer{li}.{b}", x, s, width, stride if b == 0 else 1)
    x = st.add(
        Pool(
            name="avgpool", inputs=(x,), batch=batch, channels=s[0], height=s[1], width=s[2],
            op="global_avg", layout=layout, dtype=dtype,
        )
    )  # fmt: skip
    flat = Reshape(
        name="flatten", inputs=(x,), shape=net.shape(s[0], 1, 1), to=(batch, s[0]), dtype=dtype
    )
    x = st.add(flat)
    st.linear("fc", x, (batch,), s[0], classes, bias=True, layer_type="conv")
    meta = (
        ("model", "resnet50"),
        ("phase", "inference"),
        ("batch", batch),
        ("image", image),
        ("dtype", dtype),
        ("layout", layout),
    )
    return Graph(name=f"resnet50 b{batch} {image}x{image}", ops=tuple(st.ops), meta=meta)
