"""Model zoo and ingest: presets, builders, Hugging Face config.json and ONNX -> ``ir.Graph``."""

from workbench.models.bert import encoder_graph
from workbench.models.config import TransformerConfig
from workbench.models.mlp import mlp_graph
from workbench.models.presets import PRESETS, build_graph, list_models
from workbench.models.resnet import resnet50_graph
from workbench.models.transformer import decoder_graph

__all__ = [
    "PRESETS",
    "TransformerConfig",
    "build_graph",
    "decoder_graph",
    "encoder_graph",
    "list_models",
    "mlp_graph",
    "resnet50_graph",
]
