"""Integer steps read off onnxruntime's own evaluation of BatchNormalization + comparison.

A HEP-BNN activation is ``Where(Compare(BatchNormalization(x), c), +-1, -+1)`` on an integer
pre-activation x. Its golden form is a Step (threshold t, direction d). To make the golden output
equal onnxruntime's for *every* input, including those on the threshold or within float32
rounding of it, the importer does not solve the batch norm algebraically: it builds a two-node
ONNX model (the same BatchNormalization and comparison nodes, same attributes, same parameter
tensors, same input rank) and lets onnxruntime evaluate it on every integer of each channel's
reachable range; :func:`models.numerics.bnn.step_from_table` reads (t, d) off that table.

Ranges wider than :data:`FULL_TABLE` integers (a wide ``input_range``) are bracketed instead:
onnxruntime evaluates evenly spaced points, the interval where the output changes is narrowed
until it is at most FULL_TABLE wide, and that interval is evaluated in full. This relies on the
output being monotone in x, which holds for float32 ``x * s + b`` (rounding is monotone) and is
checked on every evaluated point.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from models.checks import NumericsError
from models.numerics.bnn import step_from_table
from models.onnx.graph import node_error
from models.onnx.ort import session

FULL_TABLE = 1 << 16
SAMPLES = 1025


class StepEvaluator:
    """Evaluates `on = where_true_is_plus == compare(bn(x), const)` with onnxruntime."""

    def __init__(self, g, bn, cmp, x_name: str, bn_out: str, plus_when_true: bool, rank: int,
                 channels: int):
        self.bn, self.rank, self.channels = bn, rank, channels
        self.plus_when_true = plus_when_true
        inits, nodes = [], []
        names = set()
        for node in (bn, cmp):
            for name in node.input:
                if name and name != x_name and name != bn_out and name not in names:
                    inits.append(numpy_helper.from_array(np.asarray(g.consts[name]), name))
                    names.add(name)
        nodes.append(helper.make_node(bn.op_type, list(bn.input), [bn_out], name=bn.name,
                                      **{a.name: helper.get_attribute_value(a)
                                         for a in bn.attribute}))
        nodes.append(helper.make_node(cmp.op_type, list(cmp.input), ["on"], name=cmp.name))
        x = helper.make_tensor_value_info(x_name, TensorProto.FLOAT, None)
        y = helper.make_tensor_value_info("on", TensorProto.BOOL, None)
        graph = helper.make_graph(nodes, "step_table", [x], [y], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(g.opset, 7))])
        model.ir_version = min(g.model.ir_version or 8, 10) or 8
        self.sess = session(model)
        self.x_name = x_name

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """values int64 [C, L] (row c for channel c) -> bool [C, L] step output is +1."""
        v = values.astype(np.float32)
        c, n = v.shape
        if self.rank == 2:
            feed = v.T.copy()                                # [L, C]
        else:
            feed = v.reshape(1, c, n, *([1] * (self.rank - 3)))
        out = self.sess.run(None, {self.x_name: feed})[0]
        out = out.T if self.rank == 2 else out.reshape(c, n)
        return out == self.plus_when_true


def _check_exact_ints(node, lo, hi):
    big = max(abs(int(lo.min(initial=0))), abs(int(hi.max(initial=0))))
    if big >= 1 << 24:
        raise node_error(node, f"pre-activations reach {big}: beyond 2^24 float32 cannot hold "
                               f"every integer, so no exact integer step exists")


def derive_steps(ev: StepEvaluator, lo: np.ndarray, hi: np.ndarray):
    """(threshold int64 [C], direction int8 [C]) equal to the evaluated step on [lo_c, hi_c]."""
    _check_exact_ints(ev.bn, lo, hi)
    c = lo.shape[0]
    width = int((hi - lo).max()) + 1
    if width <= FULL_TABLE:
        vals = lo[:, None] + np.arange(width)[None, :]
        vals = np.minimum(vals, hi[:, None])
        table = ev(vals)
        return _from_tables(ev, [(int(lo[i]), table[i, :int(hi[i] - lo[i]) + 1]) for i in range(c)],
                            lo, hi)
    return _bracketed(ev, lo, hi)


def _from_tables(ev, tables, lo, hi):
    t = np.empty(len(tables), dtype=np.int64)
    d = np.empty(len(tables), dtype=np.int8)
    for i, (start, table) in enumerate(tables):
        if table.all():
            t[i], d[i] = int(lo[i]), 1          # always +1 on the range
        elif not table.any():
            t[i], d[i] = int(hi[i]) + 1, 1      # never +1 on the range
        else:
            try:
                t[i], d[i] = step_from_table(start, table, f"channel {i}")
            except NumericsError as exc:
                raise node_error(ev.bn, f"{exc}: not a threshold") from None
    return t, d


def _bracketed(ev, lo, hi):
    c = lo.shape[0]
    a, b = lo.copy(), hi.copy()
    while True:
        wide = (b - a + 1) > FULL_TABLE
        if not wide.any():
            break
        pts = np.stack([np.linspace(a[i], b[i], SAMPLES).round().astype(np.int64)
                        for i in range(c)], axis=0)
        on = ev(pts)
        for i in range(c):
            if not wide[i]:
                continue
            ch = np.flatnonzero(on[i, 1:] != on[i, :-1])
            if ch.size > 1:
                raise node_error(ev.bn, f"channel {i}: output is not monotone in the input "
                                        f"(changes near x={int(pts[i, ch[0] + 1])} and "
                                        f"x={int(pts[i, ch[1] + 1])}): not a threshold")
            if ch.size == 0:
                a[i] = b[i] = pts[i, 0]          # constant: one point decides
                continue
            a[i], b[i] = pts[i, ch[0]], pts[i, ch[0] + 1]
    width = int((b - a).max()) + 1
    vals = np.minimum(a[:, None] + np.arange(width)[None, :], b[:, None])
    table = ev(vals)
    # the ends of the full range are on the known sides of the bracket (monotone)
    ends = ev(np.stack([lo, hi], axis=1))
    tables = []
    for i in range(c):
        seg = table[i, :int(b[i] - a[i]) + 1]
        if seg[0] != ends[i, 0] and a[i] != lo[i]:
            raise node_error(ev.bn, f"channel {i}: output changes more than once: not a threshold")
        if seg[-1] != ends[i, 1] and b[i] != hi[i]:
            raise node_error(ev.bn, f"channel {i}: output changes more than once: not a threshold")
        if seg.all() and ends[i].all():
            tables.append((int(lo[i]), np.ones(1, bool)))
        elif not seg.any() and not ends[i].any():
            tables.append((int(lo[i]), np.zeros(1, bool)))
        else:
            tables.append((int(a[i]), seg))
    t, d = _from_tables(ev, tables, lo, hi)
    return t, d

