"""Model zoo and ingest: presets, builders, Hugging Face config.json and ONNX -> ``ir.Graph``."""

from workbench.models.bert import encoder_graph
from workbench.models.config import TransformerConfig
from workbench.models.flops import training_flops_per_token, training_mfu
from workbench.models.hf import config_from_hf, from_hf_config
from workbench.models.mlp import mlp_graph
from workbench.models.onnx_ingest import OnnxImport, from_onnx
from workbench.models.presets import PRESETS, build_graph, list_models
from workbench.models.resnet import resnet50_graph
from workbench.models.transformer import decoder_graph

__all__ = [
    "PRESETS",
    "OnnxImport",
    "TransformerConfig",
    "build_graph",
    "config_from_hf",
    "decoder_graph",
    "encoder_graph",
    "from_hf_config",
    "from_onnx",
    "list_models",
    "mlp_graph",
    "resnet50_graph",
    "training_flops_per_token",
    "training_mfu",
]
