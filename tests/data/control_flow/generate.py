#!/usr/bin/env python3
"""Control flow as PyTorch exports it (ONNX If and Loop), with PyTorch's own outputs as the oracle.

Run once with Debian's python3-torch; the tests read the stored files:
    /usr/bin/python3 tests/data/control_flow/generate.py
Each case writes NAME.onnx, NAME.in<k>.npy (one per model input) and NAME.out<k>.npy (one per model output).
  if_data:    torch.jit.script'ed, an `if` on the data (x.sum() > 0): an If with a computed condition;
  if_data_else: the same model, an input that takes the other branch.
  loop_data:  torch.jit.script'ed, a `for` loop over a trip count taken from the input's shape and a `while` loop on
              the data: Loops with carried values.
  if_const:   torch.jit.script'ed, a shape check (x.shape[1] == 4): an If whose condition folds to a constant once the
              input shape is fixed: inlined at import, the model translates for packages.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class IfData(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        if bool(y.sum() > 0):
            z = torch.relu(y) * 2.0
        else:
            z = torch.sigmoid(y) - x.mean()
        return z


class LoopData(torch.nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x)
        for i in range(x.shape[0]):
            acc = acc * 0.5 + x[i] * float(i + 1)
        y = acc
        n = 0
        while bool(y.abs().max() > 1.0):
            y = y * 0.5
            n += 1
        return acc, y, torch.tensor(n)


@torch.jit.script
def _check(x: torch.Tensor) -> torch.Tensor:
    if x.shape[1] == 4:
        return x * 2.0 + 1.0
    else:
        return x - 1.0


class IfConst(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return torch.relu(_check(self.conv(x)))


def save(name, m, inputs, scripted, fold=True):
    m = m.eval()
    with torch.no_grad():
        outs = m(*inputs)
    if not isinstance(outs, tuple):
        outs = (outs,)
    model = torch.jit.script(m) if scripted else m
    names_in = ["x%d" % k for k in range(len(inputs))]
    names_out = ["y%d" % k for k in range(len(outs))]
    torch.onnx.export(model, tuple(inputs), os.path.join(HERE, name + ".onnx"), input_names=names_in,
                      output_names=names_out, opset_version=14,
                      do_constant_folding=fold, dynamic_axes=None if fold else {"x0": {0: "n", 2: "h", 3: "w"}})
    if not fold:  # exported with dynamic dims so the check stays in the graph; the stored model declares this input's
        import onnx  # shape, so that the condition folds at import
        mp = onnx.load(os.path.join(HERE, name + ".onnx"))
        for vi, t in zip(mp.graph.input, inputs):
            for d, n in zip(vi.type.tensor_type.shape.dim, t.shape):
                d.Clear()
                d.dim_value = n
        onnx.save(mp, os.path.join(HERE, name + ".onnx"))
    for k, t in enumerate(inputs):
        np.save(os.path.join(HERE, "%s.in%d.npy" % (name, k)), t.numpy())
    for k, o in enumerate(outs):
        np.save(os.path.join(HERE, "%s.out%d.npy" % (name, k)), o.numpy())


def main():
    torch.manual_seed(0)
    m = IfData()
    x = torch.randn(1, 3, 5, 5)
    save("if_data", m, [x], True)
    with torch.no_grad():
        taken = [bool(m.conv(t).sum() > 0) for t in (x, -x)]
    assert taken[0] != taken[1], "the two inputs must take different branches"
    save("if_data_else", m, [-x], True)
    save("loop_data", LoopData(), [torch.randn(3, 2, 4) * 2.0], True)
    torch.manual_seed(1)
    save("if_const", IfConst(), [torch.randn(1, 3, 6, 6)], True, fold=False)


def onnx_models():
    """Models written with onnx.helper, numpy's results as the oracle: nested captures, Scan's axes and directions, and
    malformed subgraphs (bad_*.onnx, no outputs: the tests check the error)."""
    import onnx
    from onnx import TensorProto, helper as h, numpy_helper as nh

    def save_model(name, graph, opset=14):
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(HERE, name + ".onnx"))

    f32, scalar = TensorProto.FLOAT, []
    rng = np.random.default_rng(5)
    # nested: Loop over the rows of x; inside, an If on the row's sum adds row * k or subtracts the row. x and k are
    # read from the top level by the Loop's body and, through it, by the If's branches (captures of captures).
    x = rng.standard_normal((3, 4)).astype(np.float32)
    k = np.array(1.5, np.float32)
    then_g = h.make_graph([h.make_node("Mul", ["row", "k"], ["rk"]), h.make_node("Add", ["acc_in", "rk"], ["t_out"])],
                          "then", [], [h.make_tensor_value_info("t_out", f32, None)])
    else_g = h.make_graph([h.make_node("Sub", ["acc_in", "row"], ["e_out"])], "else", [],
                          [h.make_tensor_value_info("e_out", f32, None)])
    body = h.make_graph(
        [h.make_node("Gather", ["x", "i"], ["row"], axis=0), h.make_node("ReduceSum", ["row"], ["s"], keepdims=0),
         h.make_node("Greater", ["s", "zero"], ["pos"]),
         h.make_node("If", ["pos"], ["acc_out"], then_branch=then_g, else_branch=else_g),
         h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Identity", ["acc_out"], ["scan"])],
        "body", [h.make_tensor_value_info("i", TensorProto.INT64, scalar), h.make_tensor_value_info("c", TensorProto.BOOL, scalar),
                 h.make_tensor_value_info("acc_in", f32, [4])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, scalar), h.make_tensor_value_info("acc_out", f32, [4]),
         h.make_tensor_value_info("scan", f32, [4])])
    g = h.make_graph([h.make_node("Loop", ["m", "", "acc0"], ["acc", "rows"], body=body)], "nested",
                     [h.make_tensor_value_info("x", f32, [3, 4]), h.make_tensor_value_info("k", f32, scalar)],
                     [h.make_tensor_value_info("acc", f32, [4]), h.make_tensor_value_info("rows", f32, [3, 4])],
                     [nh.from_array(np.array(3, np.int64), "m"), nh.from_array(np.zeros(4, np.float32), "acc0"),
                      nh.from_array(np.array(0, np.float32), "zero")])
    save_model("nested", g)
    acc, rows = np.zeros(4, np.float32), []
    for r in x:
        acc = acc + r * k if r.sum() > 0 else acc - r
        rows.append(acc)
    for i, t in enumerate([x, k]):
        np.save(os.path.join(HERE, "nested.in%d.npy" % i), t)
    np.save(os.path.join(HERE, "nested.out0.npy"), acc)
    np.save(os.path.join(HERE, "nested.out1.npy"), np.stack(rows))

    # scan_axes: state s [2]; a scanned along axis 1 forward, b along axis 0 in reverse; out0 stacked on axis 1, out1
    # stacked in reverse; w is read from the top level.
    a = rng.standard_normal((2, 5)).astype(np.float32)
    b = rng.standard_normal((5, 2)).astype(np.float32)
    w = np.array([0.25, -2.0], np.float32)
    body = h.make_graph(
        [h.make_node("Mul", ["a_t", "b_t"], ["ab"]), h.make_node("Add", ["s_in", "ab"], ["s_out"]),
         h.make_node("Identity", ["s_out"], ["o0"]), h.make_node("Sub", ["a_t", "b_t"], ["d"]),
         h.make_node("Add", ["d", "w"], ["o1"])],
        "body", [h.make_tensor_value_info(n, f32, [2]) for n in ("s_in", "a_t", "b_t")],
        [h.make_tensor_value_info(n, f32, [2]) for n in ("s_out", "o0", "o1")])
    g = h.make_graph([h.make_node("Scan", ["s0", "a", "b"], ["s", "out0", "out1"], body=body, num_scan_inputs=2,
                                  scan_input_axes=[1, 0], scan_input_directions=[0, 1], scan_output_axes=[1, 0],
                                  scan_output_directions=[0, 1])], "scan_axes",
                     [h.make_tensor_value_info("s0", f32, [2]), h.make_tensor_value_info("a", f32, [2, 5]),
                      h.make_tensor_value_info("b", f32, [5, 2])],
                     [h.make_tensor_value_info("s", f32, [2]), h.make_tensor_value_info("out0", f32, [2, 5]),
                      h.make_tensor_value_info("out1", f32, [5, 2])], [nh.from_array(w, "w")])
    save_model("scan_axes", g)
    s0 = np.array([1.0, -1.0], np.float32)
    st, o0, o1 = s0.copy(), [], []
    for t in range(5):
        at, bt = a[:, t], b[4 - t]
        st = st + at * bt
        o0.append(st)
        o1.append(at - bt + w)
    for i, t in enumerate([s0, a, b]):
        np.save(os.path.join(HERE, "scan_axes.in%d.npy" % i), t)
    np.save(os.path.join(HERE, "scan_axes.out0.npy"), st)
    np.save(os.path.join(HERE, "scan_axes.out1.npy"), np.stack(o0, axis=1))
    np.save(os.path.join(HERE, "scan_axes.out2.npy"), np.stack(o1[::-1], axis=0))

    # Malformed: a branch reading a name no scope defines; 17 nested Ifs; a GRAPHS attribute.
    cond = [h.make_tensor_value_info("cond", TensorProto.BOOL, scalar)]
    out = [h.make_tensor_value_info("y", f32, None)]
    br = h.make_graph([h.make_node("Identity", ["nowhere"], ["b_out"])], "b", [], [h.make_tensor_value_info("b_out", f32, None)])
    save_model("bad_undefined", h.make_graph([h.make_node("If", ["cond"], ["y"], then_branch=br, else_branch=br)], "g", cond, out))
    inner = h.make_graph([h.make_node("Constant", [], ["c0"], value=nh.from_array(np.array(1.0, np.float32)))], "l0", [],
                         [h.make_tensor_value_info("c0", f32, None)])
    leaf = inner
    for d in range(1, 18):  # the else branches stay one node: the file stays small
        inner = h.make_graph([h.make_node("If", ["cond"], ["c%d" % d], then_branch=inner, else_branch=leaf)], "l%d" % d,
                             [], [h.make_tensor_value_info("c%d" % d, f32, None)])
    top = h.make_node("If", ["cond"], ["y"], then_branch=inner, else_branch=leaf)
    top.name = "deep"
    save_model("bad_deep", h.make_graph([top], "g", cond, out))
    n = h.make_node("If", ["cond"], ["y"], then_branch=br, else_branch=br)
    n.attribute.append(h.make_attribute("extra", [br, br]))
    save_model("bad_graphs", h.make_graph([n], "g", cond, out))


if __name__ == "__main__":
    main()
    onnx_models()
