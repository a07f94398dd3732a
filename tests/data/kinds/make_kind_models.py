#!/usr/bin/python3
"""Writes one small ONNX model per descriptor kind / parameter case of the package format, with constant weights
(initializers), for tests/runtime/runtime_test.cpp (every kind the lowering emits, simulated in both modes and
compared with the reference engine). Seeded; needs python3-onnx and numpy. Run from this folder."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(42)
F = TensorProto.FLOAT


def save(name, nodes, x_shape, y_shape, inits=(), opset=13):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F, x_shape)],
                          [helper.make_tensor_value_info("y", F, y_shape)],
                          [numpy_helper.from_array(v, k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="npuc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, name + ".onnx")


def w(*shape):
    return (rng.randn(*shape) * 0.3).astype(np.float32)


# ConvTranspose: strides, pads, output_padding, groups, dilations, bias
save("convtranspose", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 0, 1, 1],
                                        output_padding=[1, 0], group=2, dilations=[1, 2])],
     [1, 4, 5, 6], [1, 6, 10, 14], [("w", w(4, 3, 3, 3)), ("b", w(6))])
# Gemm variants: [N] bias, scalar C (added after the product), [1,1] C with M = 1, transB = 0, MatMul
save("gemm_vector_c", [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)], [1, 12], [1, 7],
     [("w", w(7, 12)), ("c", w(7))])
save("gemm_scalar_c", [helper.make_node("Gemm", ["x", "w", "c"], ["y"])], [2, 12], [2, 7],
     [("w", w(12, 7)), ("c", np.array(0.37, dtype=np.float32))])
save("gemm_11_c", [helper.make_node("Gemm", ["x", "w", "c"], ["y"])], [1, 12], [1, 7],
     [("w", w(12, 7)), ("c", w(1, 1))])
save("matmul", [helper.make_node("MatMul", ["x", "w"], ["y"])], [3, 12], [3, 5], [("w", w(12, 5))])
# Pooling: average with count_include_pad, 1-D max and average, global max
save("avgpool_include_pad", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                              pads=[1, 1, 1, 1], count_include_pad=1)], [1, 3, 7, 8], [1, 3, 4, 4])
save("pool_1d", [helper.make_node("MaxPool", ["x"], ["t"], kernel_shape=[3], strides=[2], pads=[1, 1]),
                 helper.make_node("AveragePool", ["t"], ["y"], kernel_shape=[2])], [1, 3, 11], [1, 3, 5])
save("globalmaxpool", [helper.make_node("GlobalMaxPool", ["x"], ["y"])], [1, 5, 4, 6], [1, 5, 1, 1])
# 1-D convolution with a LeakyRelu of alpha 0 fused into it
save("conv1d_leaky0", [helper.make_node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1]),
                       helper.make_node("LeakyRelu", ["t"], ["y"], alpha=0.0)], [1, 3, 10], [1, 4, 10],
     [("w", w(4, 3, 3)), ("b", w(4))])
# Normalisation and softmax family
save("lrn", [helper.make_node("LRN", ["x"], ["y"], size=3, alpha=1e-3, beta=0.75, bias=1.5)], [1, 6, 4, 4], [1, 6, 4, 4])
save("softmax_axis1", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], [2, 5, 3], [2, 5, 3])
save("logsoftmax", [helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)], [3, 7], [3, 7])
save("hardmax", [helper.make_node("Hardmax", ["x"], ["y"], axis=1)], [3, 7], [3, 7])
save("softmax_opset11", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], [2, 3, 4], [2, 3, 4], opset=11)
save("batchnorm_unfolded", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
     [1, 4, 3, 3], [1, 4, 3, 3], [("s", w(4)), ("b", w(4)), ("m", w(4)), ("v", np.abs(w(4)) + 0.5)])
# Data movement
save("slice_neg_steps", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [2, 6, 8], [2, 3, 3],
     [("st", np.array([-1, 1], np.int64)), ("en", np.array([0, 7], np.int64)), ("ax", np.array([1, 2], np.int64)),
      ("sp", np.array([-2, 2], np.int64))])
save("pad_constant", [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")], [1, 3, 4, 5], [1, 3, 7, 6],
     [("p", np.array([0, 0, 1, 0, 0, 0, 2, 1], np.int64)), ("v", np.array(-1.5, np.float32))])
save("transpose", [helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 3, 1])], [2, 3, 4, 5], [4, 2, 5, 3])
save("depthtospace_dcr", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="DCR")], [1, 8, 3, 4],
     [1, 2, 6, 8])
save("depthtospace_crd", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], [1, 8, 3, 4],
     [1, 2, 6, 8])
save("concat_axis0", [helper.make_node("Concat", ["x", "k"], ["y"], axis=0)], [2, 3], [5, 3], [("k", w(3, 3))])
# Element-wise: broadcasting binary ops and unary ops with parameters
save("binary_broadcast", [helper.make_node("Sub", ["x", "a"], ["t"]), helper.make_node("Div", ["t", "d"], ["u"]),
                          helper.make_node("Max", ["u", "m"], ["y"])], [2, 3, 4], [2, 3, 4],
     [("a", w(3, 1)), ("d", np.abs(w(4)) + 0.5), ("m", w(1))])
save("unary_params", [helper.make_node("Elu", ["x"], ["t"], alpha=0.7), helper.make_node("HardSigmoid", ["t"], ["u"], alpha=0.3, beta=0.4),
                      helper.make_node("Selu", ["u"], ["y"])], [2, 9], [2, 9])
# A residual Add with a fused Relu over two float16 operands of one shape, larger than the simulator's elementwise
# chunk (8 x 33 x 40 = 10560 values: five whole chunks and a partial one); fp16 (drpai) too.
save("residual_add_relu", [helper.make_node("Conv", ["x", "w1", "b1"], ["p"], pads=[1, 1, 1, 1]),
                           helper.make_node("Conv", ["x", "w2"], ["q"]),
                           helper.make_node("Add", ["p", "q"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
     [1, 4, 33, 40], [1, 8, 33, 40], [("w1", w(8, 4, 3, 3)), ("b1", w(8)), ("w2", w(8, 4, 1, 1))])
# Reductions (the reduce layer kind): axes as an attribute and as an input (ReduceSum from opset 13), keepdims 0 and
# 1, every op through two chains.
save("reduce_spatial_mean", [helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=1)], [1, 5, 4, 6],
     [1, 5, 1, 1])
save("reduce_chain_a", [helper.make_node("ReduceSum", ["x", "ax"], ["s"], keepdims=0),
                        helper.make_node("ReduceMax", ["s"], ["m"], axes=[0], keepdims=1),
                        helper.make_node("ReduceL2", ["m"], ["y"], axes=[-1], keepdims=1)], [2, 3, 4], [1, 1],
     [("ax", np.array([1], np.int64))])
save("reduce_chain_b", [helper.make_node("ReduceL1", ["x"], ["a"], axes=[2]),
                        helper.make_node("ReduceLogSumExp", ["a"], ["b"], axes=[0]),
                        helper.make_node("ReduceMin", ["b"], ["c"], axes=[1], keepdims=0),
                        helper.make_node("ReduceSumSquare", ["x"], ["d"], axes=[0, 2], keepdims=0),
                        helper.make_node("ReduceProd", ["d"], ["e"], keepdims=1),
                        helper.make_node("Abs", ["e"], ["f"]),
                        helper.make_node("ReduceLogSum", ["f"], ["g"], keepdims=1),
                        helper.make_node("Add", ["c", "g"], ["y"])], [2, 3, 4], [1, 1])
# A Concat of more inputs than a descriptor references (7): lowered as a chain of concats (DenseNet's blocks).
save("concat_many", [helper.make_node("Concat", ["x"] + ["k%d" % i for i in range(15)], ["y"], axis=1)], [1, 2, 3],
     [1, 2 + sum(range(1, 16)), 3], [("k%d" % i, w(1, i + 1, 3)) for i in range(15)])
# LayerNormalization (the layer_norm kind): over the last dim with a broadcast scale and no bias; over the last two
# dims with a bias. MatMul of a batch of matrices by a constant matrix (one tall Gemm), with a Relu fused.
save("layer_norm", [helper.make_node("LayerNormalization", ["x", "s"], ["t"], axis=-1, epsilon=1e-3),
                    helper.make_node("LayerNormalization", ["t", "s2", "b2"], ["y"], axis=1)], [2, 3, 8], [2, 3, 8],
     [("s", w(1)), ("s2", w(3, 8)), ("b2", w(8))], opset=17)
save("matmul_batched", [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["u"]),
                        helper.make_node("MatMul", ["u", "w2"], ["y"])], [2, 2, 3, 12], [2, 2, 3, 4],
     [("w", w(12, 5)), ("w2", w(5, 4))])
# Resize (the resize kind): nearest with scales (asymmetric, floor), linear with sizes (half_pixel), cubic
# (align_corners, exclude_outside), tf_crop_and_resize with a roi and an extrapolation value, and the opset-10 form.
save("resize_nearest", [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest",
                                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
     [1, 2, 3, 4], [1, 2, 6, 6], [("s", np.array([1, 1, 2, 1.5], np.float32))])
save("resize_linear_sizes", [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear")], [1, 2, 5, 4],
     [1, 2, 3, 7], [("sz", np.array([1, 2, 3, 7], np.int64))])
save("resize_cubic", [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic", coordinate_transformation_mode="align_corners",
                                       exclude_outside=1, cubic_coeff_a=-0.5)], [1, 1, 4, 5], [1, 1, 8, 10],
     [("s", np.array([1, 1, 2, 2], np.float32))])
save("resize_crop", [helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear",
                                      coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)],
     [1, 1, 6, 6], [1, 1, 4, 5],
     [("roi", np.array([0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3], np.float32)), ("sz", np.array([1, 1, 4, 5], np.int64))])
save("resize_opset10", [helper.make_node("Resize", ["x", "s"], ["y"], mode="nearest")], [1, 2, 3, 3], [1, 2, 6, 6],
     [("s", np.array([1, 1, 2, 2], np.float32))], opset=10)
# MatMul of two activations (the matmul kind): a batch of products of x by its own transpose (attention's Q·Kᵀ),
# then by a constant batch broadcast over the leading dim, a fused Relu, a 1-D second operand (a matrix-vector
# product) and a 1-D first operand, added.
save("matmul_activations", [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]),
                            helper.make_node("MatMul", ["x", "t"], ["p"]),
                            helper.make_node("MatMul", ["p", "c3"], ["q"]), helper.make_node("Relu", ["q"], ["r"]),
                            helper.make_node("MatMul", ["r", "v"], ["a"]),
                            helper.make_node("MatMul", ["u", "p"], ["b"]), helper.make_node("Add", ["a", "b"], ["y"])],
     [2, 3, 4, 5], [2, 3, 4], [("c3", w(3, 4, 6)), ("v", w(6)), ("u", w(4))])
# Gather (the gather kind): a scalar index (the axis dropped, as a Swin / ViT class-token pick), 2-D indices with a
# negative one, and along axis 0 of a constant-free activation.
save("gather", [helper.make_node("Gather", ["x", "i0"], ["a"], axis=1),
                helper.make_node("Gather", ["x", "i1"], ["b"], axis=1), helper.make_node("Add", ["b", "a"], ["c"]),
                helper.make_node("Gather", ["c", "i2"], ["y"], axis=0)],
     [2, 5, 3], [2, 2, 2, 3],
     [("i0", np.array(3, np.int64)), ("i1", np.array([[-1, 0], [2, 2]], np.int64)), ("i2", np.array([1, -2], np.int64))])
# Expand (x broadcast to a higher rank) then Tile (the tile kind); InstanceNormalization (the instance_norm kind).
save("tile_expand", [helper.make_node("Expand", ["x", "shape"], ["e"]), helper.make_node("Tile", ["e", "reps"], ["y"])],
     [2, 1, 3], [3, 2, 8, 3], [("shape", np.array([3, 2, 4, 3], np.int64)), ("reps", np.array([1, 1, 2, 1], np.int64))])
save("instance_norm", [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)], [2, 3, 4, 5],
     [2, 3, 4, 5], [("s", w(3)), ("b", w(3))])
# Where with a constant condition broadcast over the leading dim and a broadcast constant other branch (the where kind).
save("where", [helper.make_node("Where", ["c", "x", "b"], ["y"])], [2, 3, 4], [2, 3, 4],
     [("c", np.array([[True], [False], [True]])), ("b", w(4))])
# Einsum of two operands (a batched matmul, transposes where the letters ask for them): attention's two products as
# MaxViT writes them, then a contraction whose batch and free letters need transposing.
es, ec = w(5), w(3, 5, 6)
save("einsum", [helper.make_node("Mul", ["x", "s"], ["k"]),
                helper.make_node("Einsum", ["x", "k"], ["p"], equation="b h i d, b h j d -> b h i j"),
                helper.make_node("Einsum", ["p", "x"], ["v"], equation="bhij,bhjd->bhid"),
                helper.make_node("Einsum", ["v", "c"], ["y"], equation="bhid,hdk->bhik")],
     [2, 3, 4, 5], [2, 3, 4, 6], [("s", es), ("c", ec)])
# numpy's einsum (float64) as the oracle of the engine's (tests/runtime/runtime_test.cpp).
ex = rng.randn(2, 3, 4, 5).astype(np.float32)
ek = ex.astype(np.float64) * es
ep = np.einsum("bhid,bhjd->bhij", ex.astype(np.float64), ek.astype(np.float32).astype(np.float64))
ev = np.einsum("bhij,bhjd->bhid", ep.astype(np.float32).astype(np.float64), ex.astype(np.float64))
ey = np.einsum("bhid,hdk->bhik", ev.astype(np.float32).astype(np.float64), ec.astype(np.float64))
np.save("einsum_in.npy", ex)
np.save("einsum_out.npy", ey.astype(np.float32))
# Gather by indices the caller gives (an int64 and an int32 model input: an embedding lookup).
for name, itype in (("gather_input_indices", TensorProto.INT64), ("gather_input_indices_i32", TensorProto.INT32)):
    g = helper.make_graph([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], name,
                          [helper.make_tensor_value_info("x", F, [4, 3]), helper.make_tensor_value_info("i", itype, [2, 2])],
                          [helper.make_tensor_value_info("y", F, [2, 2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, name + ".onnx")
# Typed values (issue 49): comparisons, logic, integer arithmetic, bit shifts, ArgMax / ArgMin and computed Where
# conditions — float in and out, the typed_binary / typed_unary / arg_reduce / cast layers inside.
I32, I64, U8 = TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8
N = helper.make_node
save("typed_compare_where", [N("Greater", ["x", "c"], ["m"]), N("Neg", ["x"], ["nx"]), N("Where", ["m", "x", "nx"], ["y"])],
     [2, 3, 4], [2, 3, 4], [("c", w(4))])
save("typed_logic", [N("Less", ["x", "zero"], ["a"]), N("Greater", ["x", "half"], ["b"]), N("Not", ["b"], ["nb"]),
                     N("And", ["a", "nb"], ["p"]), N("Or", ["a", "b"], ["q"]), N("Xor", ["p", "q"], ["r"]),
                     N("Equal", ["a", "b"], ["e"]), N("Cast", ["r"], ["rf"], to=F), N("Cast", ["e"], ["ef"], to=F),
                     N("Mul", ["ef", "two"], ["e2"]), N("Add", ["rf", "e2"], ["y"])], [2, 3, 4], [2, 3, 4],
     [("zero", np.array(0, np.float32)), ("half", np.array(0.15, np.float32)), ("two", np.array(2, np.float32))])
save("typed_int", [N("Mul", ["x", "ten"], ["x10"]), N("Cast", ["x10"], ["i"], to=I32), N("Add", ["i", "ci"], ["s"]),
                   N("Mod", ["s", "m3"], ["md"]), N("Div", ["s", "d2"], ["dv"]), N("Mul", ["md", "dv"], ["pr"]),
                   N("Abs", ["pr"], ["ab"]), N("Neg", ["ab"], ["ng"]), N("Max", ["ng", "i"], ["mx"]),
                   N("Min", ["mx", "i", "s"], ["sm"]), N("Sign", ["sm"], ["sg"]), N("Sub", ["sm", "sg"], ["sb"]),
                   N("Cast", ["sb"], ["l"], to=I64), N("Cast", ["l"], ["y"], to=F)], [2, 3, 4], [2, 3, 4],
     [("ten", np.array(10, np.float32)), ("ci", np.array([3, -2, 0, 7], np.int32)), ("m3", np.array([3, -4, 5, 2], np.int32)),
      ("d2", np.array(-3, np.int32))])
save("typed_argmax", [N("ArgMax", ["x"], ["a"], axis=1, keepdims=1), N("ArgMin", ["x"], ["b"], axis=2, keepdims=0, select_last_index=1),
                      N("Cast", ["a"], ["af"], to=F), N("Cast", ["b"], ["bf"], to=F), N("Reshape", ["bf", "shape"], ["br"]),
                      N("Add", ["af", "br"], ["y"])], [2, 3, 4], [2, 3, 4], [("shape", np.array([2, 3, 1], np.int64))])
save("typed_uint8_shift", [N("Relu", ["x"], ["r"]), N("Mul", ["r", "forty"], ["m"]), N("Cast", ["m"], ["u"], to=U8),
                           N("BitShift", ["u", "k"], ["l"], direction="LEFT"), N("BitShift", ["l", "k2"], ["h"], direction="RIGHT"),
                           N("Cast", ["h"], ["y"], to=F)], [2, 3, 4], [2, 3, 4],
     [("forty", np.array(40, np.float32)), ("k", np.array([0, 1, 2, 3], np.uint8)), ("k2", np.array(1, np.uint8))])
save("trilu_cumsum", [N("Trilu", ["x", "k1"], ["u"], upper=1), N("Trilu", ["x", "km"], ["l"], upper=0),
                      N("CumSum", ["u", "ax1"], ["cu"], exclusive=1, reverse=1), N("Mul", ["l", "ten"], ["l10"]),
                      N("Cast", ["l10"], ["li"], to=I32), N("CumSum", ["li", "axm"], ["ci"]), N("Cast", ["ci"], ["cf"], to=F),
                      N("Add", ["cu", "cf"], ["y"])], [2, 3, 4], [2, 3, 4],
     [("k1", np.array(1, np.int64)), ("km", np.array(-1, np.int64)), ("ax1", np.array(1, np.int64)),
      ("axm", np.array(-1, np.int32)), ("ten", np.array(10, np.float32))], opset=14)
# LayerNormalization's Mean and InvStdDev read by the model (layer_norm with 3 outputs; the second layer's unread
# Mean is a scratch output before its read InvStdDev).
save("layer_norm_stats", [N("LayerNormalization", ["x", "s"], ["t", "m", "iv"], axis=2),
                          N("LayerNormalization", ["x", "s2"], ["u", "", "iv2"], axis=1, epsilon=1e-2),
                          N("Mul", ["m", "iv"], ["a"]), N("Mul", ["u", "iv2"], ["b"]), N("Add", ["t", "a"], ["c"]),
                          N("Add", ["c", "b"], ["y"])], [2, 3, 8], [2, 3, 8], [("s", w(8)), ("s2", w(3, 8))], opset=17)
# Indexing kinds: GatherElements by constant and by computed (ArgMax) indices, TopK (values and int64 indices),
# ScatterElements with add, GatherND with batch_dims, ScatterND with mul.
save("indexing", [N("GatherElements", ["x", "gi"], ["a"], axis=2),
                  N("TopK", ["x", "k"], ["v", "i"], axis=1),
                  N("Cast", ["i"], ["fi"], to=F), N("Add", ["v", "fi"], ["u"]),
                  N("ScatterElements", ["a", "si", "u"], ["s"], axis=1, reduction="add"),
                  N("GatherND", ["s", "ni"], ["g"], batch_dims=1),
                  N("ScatterND", ["g", "di", "du"], ["h"], reduction="mul"),
                  N("ArgMax", ["x"], ["am"], axis=2, keepdims=1), N("GatherElements", ["x", "am"], ["mx"], axis=2),
                  N("Add", ["h", "mx"], ["y"])], [2, 3, 4], [2, 3, 4],
     [("gi", rng.randint(-4, 4, size=(2, 3, 4)).astype(np.int64)), ("k", np.array([2], np.int64)),
      ("si", rng.randint(0, 3, size=(2, 2, 4)).astype(np.int64)),
      ("ni", np.array([[[2], [0], [1]], [[1], [1], [0]]], np.int64)),
      ("di", np.array([[1, 2], [0, 0], [1, 2]], np.int64)), ("du", w(3, 4))], opset=16)
# Clip with bounds the model computes (half the tensor's min and max) and Clip of int32 values with one constant
# bound (the clip kind); CumSum along an axis and Trilu by a k the model computes (read by the layer at run time).
save("clip_computed", [N("ReduceMin", ["x"], ["mn"], keepdims=0), N("ReduceMax", ["x"], ["mx"], keepdims=0),
                       N("Mul", ["mn", "half"], ["lo"]), N("Mul", ["mx", "half"], ["hi"]), N("Clip", ["x", "lo", "hi"], ["c"]),
                       N("Mul", ["x", "ten"], ["x10"]), N("Cast", ["x10"], ["i"], to=I32), N("Clip", ["i", "ilo"], ["ic"]),
                       N("Cast", ["ic"], ["fc"], to=F), N("Add", ["c", "fc"], ["s"]),
                       N("Mul", ["x", "zero"], ["xz"]), N("ReduceMax", ["xz"], ["zf"], keepdims=0),
                       N("Add", ["zf", "onef"], ["axf"]), N("Cast", ["axf"], ["ax"], to=I64), N("CumSum", ["s", "ax"], ["cs"]),
                       N("Reshape", ["zf", "r1"], ["zf1"]), N("Sub", ["zf1", "onef"], ["kf"]), N("Cast", ["kf"], ["km"], to=I64),
                       N("Trilu", ["cs", "km"], ["y"], upper=0)],
     [2, 3, 4], [2, 3, 4],
     [("half", np.array(0.5, np.float32)), ("ten", np.array(10, np.float32)), ("ilo", np.array(-2, np.int32)),
      ("zero", np.array(0, np.float32)), ("onef", np.array(1, np.float32)), ("r1", np.array([1], np.int64))], opset=14)
# OneHot of computed (ArgMax) indices, EyeLike and Dropout's mask (constants of a shape, copied into place).
save("onehot_eye", [N("ArgMax", ["x"], ["am"], axis=2, keepdims=0), N("OneHot", ["am", "depth", "vals"], ["oh"], axis=-1),
                    N("ReduceMean", ["x"], ["r"], axes=[0], keepdims=0), N("EyeLike", ["r"], ["e"], k=1),
                    N("Dropout", ["x"], ["d", "mask"]), N("Cast", ["mask"], ["mf"], to=F), N("Mul", ["d", "mf"], ["dm"]),
                    N("Add", ["oh", "e"], ["s"]), N("Add", ["s", "dm"], ["y"])], [2, 3, 4], [2, 3, 4],
     [("depth", np.array(4, np.int64)), ("vals", np.array([-0.5, 2.0], np.float32))])
# TopK with k a model input: the declared outputs fix k = 2; the layer refuses another k at run time.
g = helper.make_graph([N("TopK", ["x", "k"], ["v", "i"], axis=1)], "topk_input_k",
                      [helper.make_tensor_value_info("x", F, [3, 4]), helper.make_tensor_value_info("k", I64, [1])],
                      [helper.make_tensor_value_info("v", F, [3, 2]), helper.make_tensor_value_info("i", I64, [3, 2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
m.ir_version = 8
onnx.checker.check_model(m, full_check=True)
onnx.save(m, "topk_input_k.onnx")
# GridSample (bilinear, border padding) and RoiAlign (two boxes, max mode) of one feature map, concatenated.
save("sampling", [N("GridSample", ["x", "grid"], ["gs"], padding_mode="border"),
                  N("RoiAlign", ["x", "rois", "bi"], ["ra"], output_height=2, output_width=3, sampling_ratio=2,
                    spatial_scale=0.5, mode="max"),
                  N("Reshape", ["gs", "flat"], ["g1"]), N("Reshape", ["ra", "flat"], ["r1"]),
                  N("Concat", ["g1", "r1"], ["y"], axis=1)], [1, 2, 5, 6], [1, 48],
     [("grid", rng.uniform(-1.1, 1.1, size=(1, 3, 4, 2)).astype(np.float32)),
      ("rois", np.array([[0.5, 1.0, 8.0, 7.5], [2.0, 0.0, 11.0, 9.0]], np.float32)),
      ("bi", np.array([0, 0], np.int64)), ("flat", np.array([1, -1], np.int64))], opset=16)
# Range, Resize and a reduction whose start / limit / delta, scales and axes are model inputs: the declared outputs fix the shapes; the
# layers read the values at run time and refuse ones that give other shapes (tests/runtime/runtime_test.cpp).
for name, nodes, ins, outs, opset in (
        ("range_input", [N("Range", ["s", "l", "d"], ["y"])],
         [helper.make_tensor_value_info(k, F, []) for k in ("s", "l", "d")], [helper.make_tensor_value_info("y", F, [4])], 13),
        ("resize_scales_input", [N("Resize", ["x", "", "sc"], ["y"], mode="linear")],
         [helper.make_tensor_value_info("x", F, [1, 1, 2, 3]), helper.make_tensor_value_info("sc", F, [4])],
         [helper.make_tensor_value_info("y", F, [1, 1, 4, 4])], 13),
        ("reduce_axes_input", [N("ReduceSum", ["x", "ax"], ["y"], keepdims=0)],
         [helper.make_tensor_value_info("x", F, [2, 3, 4]), helper.make_tensor_value_info("ax", I64, [1])],
         [helper.make_tensor_value_info("y", F, [2, 4])], 13),
        ("compress_computed", [N("ReduceMax", ["x"], ["m"], axes=[0, 2], keepdims=0), N("Greater", ["m", "zero"], ["c"]),
                               N("Compress", ["x", "c"], ["y"], axis=1)],
         [helper.make_tensor_value_info("x", F, [2, 5, 3])], [helper.make_tensor_value_info("y", F, [2, 3, 3])], 13),
        ("constant_of_shape_input", [N("ConstantOfShape", ["s"], ["y"], value=numpy_helper.from_array(np.array([1.5], np.float32)))],
         [helper.make_tensor_value_info("s", I64, [2])], [helper.make_tensor_value_info("y", F, [2, 3])], 13),
        # The signal kinds (opset 17): a onesided DFT of a computed length (its parity is not in the bins), an STFT of a
        # computed step with a computed window (x² + 0.5: no constant to fold), a mel filter bank of computed sizes.
        ("dft_length_input", [N("DFT", ["x", "len"], ["y"], axis=1, onesided=1)],
         [helper.make_tensor_value_info("x", F, [2, 10, 1]), helper.make_tensor_value_info("len", I64, [])],
         [helper.make_tensor_value_info("y", F, [2, 6, 2])], 17),
        ("stft_input", [N("Mul", ["win", "win"], ["w2"]), N("Add", ["w2", "half"], ["wa"]), N("STFT", ["x", "st", "wa"], ["y"])],
         [helper.make_tensor_value_info("x", F, [1, 64, 1]), helper.make_tensor_value_info("st", I64, []),
          helper.make_tensor_value_info("win", F, [16])],
         [helper.make_tensor_value_info("y", F, [1, 7, 9, 2])], 17),
        # NonMaxSuppression's bounded output: 4 rows declared for at most 2 selections (rows of -1 after them), and 1
        # row declared where 2 may be selected (the run stops); the thresholds constants (words).
        ("nms_bounded", [N("NonMaxSuppression", ["boxes", "scores", "maxk", "iou", "sth"], ["y"])],
         [helper.make_tensor_value_info("boxes", F, [1, 5, 4]), helper.make_tensor_value_info("scores", F, [1, 1, 5])],
         [helper.make_tensor_value_info("y", I64, [4, 3])], 13),
        ("nms_one_row", [N("NonMaxSuppression", ["boxes", "scores", "maxk", "iou", "sth"], ["y"])],
         [helper.make_tensor_value_info("boxes", F, [1, 5, 4]), helper.make_tensor_value_info("scores", F, [1, 1, 5])],
         [helper.make_tensor_value_info("y", I64, [1, 3])], 13),
        ("mel_input", [N("MelWeightMatrix", ["nb", "dl", "sr", "lo", "hi"], ["y"])],
         [helper.make_tensor_value_info(k, I64, []) for k in ("nb", "dl", "sr")] +
         [helper.make_tensor_value_info(k, F, []) for k in ("lo", "hi")],
         [helper.make_tensor_value_info("y", F, [9, 4])], 17)):
    if name == "compress_computed":
        nodes = [helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0.0, np.float32)))] + nodes
    if name.startswith("nms_"):
        nodes = [helper.make_node("Constant", [], [k], value=numpy_helper.from_array(v)) for k, v in
                 (("maxk", np.array([2], np.int64)), ("iou", np.array([0.5], np.float32)),
                  ("sth", np.array([0.1], np.float32)))] + nodes
    if name == "stft_input":
        nodes = [helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.array(0.5, np.float32)))] + nodes
    m = helper.make_model(helper.make_graph(nodes, name, ins, outs), opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="npuc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, name + ".onnx")
# 3-D max and average pooling (count_include_pad) and a 2-D MaxPool's Indices (the pool_nd kind).
save("pool3d", [N("MaxPool", ["x"], ["mx"], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
                N("AveragePool", ["x"], ["av"], kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
                  count_include_pad=1),
                N("Reshape", ["x", "s2d"], ["r"]), N("MaxPool", ["r"], ["mp", "ix"], kernel_shape=[4, 2], strides=[4, 2]),
                N("Cast", ["ix"], ["ixf"], to=F), N("Mul", ["ixf", "milli"], ["ixs"]), N("Add", ["mp", "ixs"], ["mi"]),
                N("Reshape", ["mi", "s3d"], ["mi3"]), N("Add", ["mx", "av"], ["t"]), N("Add", ["t", "mi3"], ["y"])],
     [1, 2, 4, 4, 6], [1, 2, 2, 2, 3],
     [("s2d", np.array([1, 2, 16, 6], np.int64)), ("s3d", np.array([1, 2, 2, 2, 3], np.int64)),
      ("milli", np.array(0.001, np.float32))], opset=12)
# ReverseSequence (the reverse_sequence kind): time-major with constant lengths (one 0, one full), then batch-major on
# the result's transpose.
save("reverse_sequence", [N("ReverseSequence", ["x", "lens"], ["r"], batch_axis=1, time_axis=0),
                          N("Transpose", ["r"], ["t"], perm=[1, 0, 2]),
                          N("ReverseSequence", ["t", "lens2"], ["y"], batch_axis=0, time_axis=1)],
     [4, 3, 2], [3, 4, 2], [("lens", np.array([4, 0, 2], np.int64)), ("lens2", np.array([3, 4, 1], np.int64))], opset=10)
# The losses (the loss kind): SoftmaxCrossEntropyLoss with weights, an ignored target and its log-probabilities, and
# NegativeLogLikelihoodLoss summed, their outputs joined into y.
save("loss", [N("SoftmaxCrossEntropyLoss", ["x", "tgt", "wt"], ["l", "lp"], reduction="none", ignore_index=2),
              N("NegativeLogLikelihoodLoss", ["lp", "tgt2"], ["s"], reduction="sum"),
              N("Reshape", ["lp", "flat"], ["lpf"]), N("Reshape", ["l", "flat"], ["lf"]), N("Reshape", ["s", "one"], ["sf"]),
              N("Concat", ["lpf", "lf", "sf"], ["y"], axis=0)],
     [2, 3, 4], [33], [("tgt", np.array([[0, 1, 2, 1], [2, 2, 0, 1]], np.int64)), ("wt", np.array([0.5, 1.0, 2.0], np.float32)),
                       ("tgt2", np.array([[1, 1, 0, 2], [0, 2, 1, 1]], np.int64)), ("flat", np.array([-1], np.int64)),
                       ("one", np.array([1], np.int64))])
# Det (the det kind): the determinant of each 3x3 matrix of a batch of 2x4.
save("det", [N("Det", ["x"], ["y"])], [2, 4, 3, 3], [2, 4])
# MeanVarianceNormalization (the mvn kind): the default axes (0, 2, 3), then over the last axis alone.
save("mvn", [N("MeanVarianceNormalization", ["x"], ["m"]), N("MeanVarianceNormalization", ["m"], ["y"], axes=[3])],
     [2, 3, 4, 5], [2, 3, 4, 5])
# MaxUnpool (the max_unpool kind): a 2-D MaxPool's values and indices scattered back into an output_shape one row and
# one column larger than the pooled input (zeros elsewhere).
save("max_unpool", [N("MaxPool", ["x"], ["mp", "ix"], kernel_shape=[2, 2], strides=[2, 2]),
                    N("MaxUnpool", ["mp", "ix", "osh"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
     [1, 2, 4, 6], [1, 2, 5, 7], [("osh", np.array([1, 2, 5, 7], np.int64))], opset=12)
# Recurrent layers (the recurrent kind): a bidirectional LSTM with every optional input (bias, sequence lengths,
# initial states, peepholes), its own activations and clip, all three outputs; a reverse GRU (linear_before_reset)
# over the LSTM's output with only Y_h; a batch-major RNN with ScaledTanh. Weights constant (packed once).
H, GH = 4, 3
save("recurrent", [N("LSTM", ["x", "lw", "lr", "lb", "sl", "h0", "c0", "lp"], ["ly", "lyh", "lyc"], hidden_size=H,
                     direction="bidirectional", clip=3.0,
                     activations=["HardSigmoid", "Tanh", "Softsign", "Sigmoid", "Elu", "Relu"],
                     activation_alpha=[0.25, 0.9], activation_beta=[0.45]),
                   N("Transpose", ["ly"], ["lyt"], perm=[0, 2, 1, 3]), N("Reshape", ["lyt", "r3"], ["gx"]),
                   N("GRU", ["gx", "gw", "gr", "gb"], ["", "gyh"], hidden_size=GH, direction="reverse",
                     linear_before_reset=1),
                   N("Transpose", ["x"], ["xb"], perm=[1, 0, 2]),
                   N("RNN", ["xb", "rw", "rr"], ["ry"], hidden_size=2, layout=1, activations=["ScaledTanh"],
                     activation_alpha=[0.8], activation_beta=[1.2]),
                   N("Reshape", ["ly", "flat"], ["f1"]), N("Reshape", ["lyh", "flat"], ["f2"]),
                   N("Reshape", ["lyc", "flat"], ["f3"]), N("Reshape", ["gyh", "flat"], ["f4"]),
                   N("Reshape", ["ry", "flat"], ["f5"]), N("Concat", ["f1", "f2", "f3", "f4", "f5"], ["y"], axis=1)],
     [5, 2, 3], [1, 138],
     [("lw", w(2, 4 * H, 3)), ("lr", w(2, 4 * H, H)), ("lb", w(2, 8 * H)), ("sl", np.array([5, 3], np.int32)),
      ("h0", w(2, 2, H)), ("c0", w(2, 2, H)), ("lp", w(2, 3 * H)), ("r3", np.array([5, 2, 2 * H], np.int64)),
      ("gw", w(1, 3 * GH, 2 * H)), ("gr", w(1, 3 * GH, GH)), ("gb", w(1, 6 * GH)), ("rw", w(1, 2, 3)), ("rr", w(1, 2, 2)),
      ("flat", np.array([1, -1], np.int64))], opset=14)
# Convolution weights the model computes (the conv / conv_transpose layers read them when they run, packed per run in
# fast mode): a 2-D Conv whose weights are scaled by the input's mean (constant bias, Relu fused), then a 1-D
# ConvTranspose whose weights are a reshaped slice of that feature map.
save("conv_computed_weights", [N("ReduceMean", ["x"], ["m"], keepdims=0), N("Mul", ["cw", "m"], ["w2"]),
                               N("Conv", ["x", "w2", "cb"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["r"]),
                               N("Slice", ["r", "s0", "s1", "s2"], ["sl"]), N("Reshape", ["sl", "ws"], ["wt"]),
                               N("Reshape", ["r", "r1"], ["r1d"]),
                               N("ConvTranspose", ["r1d", "wt"], ["t"], strides=[2]), N("Reshape", ["t", "flat"], ["y"])],
     [1, 3, 5, 5], [1, 53],
     [("cw", w(4, 3, 3, 3)), ("cb", w(4)), ("s0", np.array([0, 0], np.int64)), ("s1", np.array([4, 1], np.int64)),
      ("s2", np.array([1, 2], np.int64)), ("ws", np.array([4, 1, 5], np.int64)), ("r1", np.array([1, 4, 25], np.int64)),
      ("flat", np.array([1, -1], np.int64))])
