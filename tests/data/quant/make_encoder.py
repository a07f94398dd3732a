#!/usr/bin/env python3
# Writes encoder_layer.onnx: one torch.nn.TransformerEncoderLayer (d_model 64, 4 heads, feed-forward 128, ReLU,
# post-norm, batch first) on 16 tokens, exported by torch.onnx (opset 17) as torch writes it — the in-projection as
# one MatMul + Add of a bias, the heads by Slice / Reshape / Transpose, Q·Kᵀ and P·V, Softmax, LayerNormalization,
# each Linear of the feed-forward block as MatMul + Add — for the int8 tests (tests/quant/qdq_test.cpp). Seeded weights.
# Needs python3-torch (scripts/install_deps.sh torch):
#   /usr/bin/python3 tests/data/quant/make_encoder.py
import os

import torch

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True, dropout=0.0).eval()
x = torch.randn(1, 16, 64)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "encoder_layer.onnx")
torch.onnx.export(layer, x, out, opset_version=17, input_names=["input"], output_names=["output"], do_constant_folding=True)
