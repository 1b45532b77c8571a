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

Both evaluate the table a slice of columns at a time (at most :data:`MAX_EVAL` values per
onnxruntime call), so the int64 and float32 copies of the points stay small whatever the channel
count; only the bool table itself is whole. onnxruntime refusing the two-node model (a batch
norm it cannot run) names the batch norm.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

from models.checks import NumericsError
from models.numerics.bnn import step_from_table
from models.onnx.graph import node_error
from models.onnx.ort import session

FULL_TABLE = 1 << 16
SAMPLES = 1025
MAX_EVAL = 1 << 22  # points per onnxruntime call (channels x columns)
# what onnxruntime raises for a model it cannot load or run (its errors derive from Exception)
ORT_ERRORS = (
    ort_state.Fail,
    ort_state.InvalidArgument,
    ort_state.InvalidGraph,
    ort_state.NotImplemented,
    ort_state.RuntimeException,
    ort_state.InvalidProtobuf,
)


def _ort_error(node, exc) -> Exception:
    first = (str(exc).strip().splitlines() or ["error"])[0]
    return node_error(node, f"onnxruntime cannot evaluate the step ({type(exc).__name__}: {first[-300:]})")


class StepEvaluator:
    """Evaluates `on = where_true_is_plus == compare(bn(x), const)` with onnxruntime."""

    def __init__(self, g, bn, cmp, x_name: str, bn_out: str, plus_when_true: bool, rank: int, channels: int):
        self.bn, self.rank, self.channels = bn, rank, channels
        self.plus_when_true = plus_when_true
        inits, nodes = [], []
        names = set()
        for node in (bn, cmp):
            for name in node.input:
                if name and name != x_name and name != bn_out and name not in names:
                    inits.append(numpy_helper.from_array(np.asarray(g.consts[name]), name))
                    names.add(name)
        nodes.append(
            helper.make_node(
                bn.op_type,
                list(bn.input),
                [bn_out],
                name=bn.name,
                **{a.name: helper.get_attribute_value(a) for a in bn.attribute},
            )
        )
        nodes.append(helper.make_node(cmp.op_type, list(cmp.input), ["on"], name=cmp.name))
        x = helper.make_tensor_value_info(x_name, TensorProto.FLOAT, None)
        y = helper.make_tensor_value_info("on", TensorProto.BOOL, None)
        graph = helper.make_graph(nodes, "step_table", [x], [y], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(g.opset, 7))])
        model.ir_version = min(g.model.ir_version or 8, 10) or 8
        try:
            self.sess = session(model)
        except ORT_ERRORS as exc:
            raise _ort_error(bn, exc) from None
        self.x_name = x_name

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """values int64 [C, L] (row c for channel c) -> bool [C, L] step output is +1."""
        v = values.astype(np.float32)
        c, n = v.shape
        # rank 2: [L, C]; otherwise [1, C, L, 1, ...]
        feed = v.T.copy() if self.rank == 2 else v.reshape(1, c, n, *([1] * (self.rank - 3)))
        try:
            out = self.sess.run(None, {self.x_name: feed})[0]
        except ORT_ERRORS as exc:
            raise _ort_error(self.bn, exc) from None
        out = out.T if self.rank == 2 else out.reshape(c, n)
        return out == self.plus_when_true


def _evaluate(ev: StepEvaluator, columns, n: int) -> np.ndarray:
    """bool [C, n]: `columns(j0, j1)` (int64 [C, j1 - j0], the points of columns j0..j1-1)
    evaluated a slice at a time, so no int64 or float32 copy of all C x n points exists."""
    c = max(ev.channels, 1)
    step = max(1, MAX_EVAL // c)
    out = np.empty((ev.channels, n), dtype=bool)
    for j0 in range(0, n, step):
        j1 = min(n, j0 + step)
        out[:, j0:j1] = ev(columns(j0, j1))
    return out


def _check_exact_ints(node, lo, hi):
    big = max(abs(int(lo.min(initial=0))), abs(int(hi.max(initial=0))))
    if big >= 1 << 24:
        raise node_error(
            node,
            f"pre-activations reach {big}: beyond 2^24 float32 cannot hold "
            f"every integer, so no exact integer step exists",
        )


def derive_steps(ev: StepEvaluator, lo: np.ndarray, hi: np.ndarray):
    """(threshold int64 [C], direction int8 [C]) equal to the evaluated step on [lo_c, hi_c]."""
    _check_exact_ints(ev.bn, lo, hi)
    c = lo.shape[0]
    if c == 0:
        raise node_error(ev.bn, "has no channels")
    width = int((hi - lo).max()) + 1
    if width <= FULL_TABLE:
        table = _evaluate(
            ev, lambda j0, j1: np.minimum(lo[:, None] + np.arange(j0, j1)[None, :], hi[:, None]), width
        )
        return _from_tables(ev, [(int(lo[i]), table[i, : int(hi[i] - lo[i]) + 1]) for i in range(c)], lo, hi)
    return _bracketed(ev, lo, hi)


def _from_tables(ev, tables, lo, hi):
    t = np.empty(len(tables), dtype=np.int64)
    d = np.empty(len(tables), dtype=np.int8)
    for i, (start, table) in enumerate(tables):
        if table.all():
            t[i], d[i] = int(lo[i]), 1  # always +1 on the range
        elif not table.any():
            t[i], d[i] = int(hi[i]) + 1, 1  # never +1 on the range
        else:
            try:
                t[i], d[i] = step_from_table(start, table, f"channel {i}")
            except NumericsError as exc:
                raise node_error(ev.bn, f"{exc}: not a threshold") from None
    return t, d


class _Samples:
    """SAMPLES evenly spaced integers from a_c to b_c for each channel c (np.linspace, rounded),
    computed a slice of columns at a time (`columns`) or one at a time (`point`)."""

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a.copy(), b.copy()
        self.step = (self.b - self.a) / (SAMPLES - 1)

    def columns(self, j0: int, j1: int) -> np.ndarray:
        j = np.arange(j0, j1, dtype=np.float64)
        pts = np.rint(self.a[:, None] + self.step[:, None] * j[None, :]).astype(np.int64)
        return np.minimum(pts, self.b[:, None])

    def point(self, c: int, j: int) -> int:
        return min(int(np.rint(self.a[c] + self.step[c] * float(j))), int(self.b[c]))


def _bracketed(ev, lo, hi):
    c = lo.shape[0]
    a, b = lo.copy(), hi.copy()
    while True:
        wide = (b - a + 1) > FULL_TABLE
        if not wide.any():
            break
        pts = _Samples(a, b)
        on = _evaluate(ev, pts.columns, SAMPLES)
        for i in range(c):
            if not wide[i]:
                continue
            ch = np.flatnonzero(on[i, 1:] != on[i, :-1])
            if ch.size > 1:
                raise node_error(
                    ev.bn,
                    f"channel {i}: output is not monotone in the input "
                    f"(changes near x={pts.point(i, ch[0] + 1)} and "
                    f"x={pts.point(i, ch[1] + 1)}): not a threshold",
                )
            if ch.size == 0:
                b[i] = a[i]  # constant: one point decides
                continue
            a[i], b[i] = pts.point(i, ch[0]), pts.point(i, ch[0] + 1)
    width = int((b - a).max()) + 1
    table = _evaluate(
        ev, lambda j0, j1: np.minimum(a[:, None] + np.arange(j0, j1)[None, :], b[:, None]), width
    )
    # the ends of the full range are on the known sides of the bracket (monotone)
    ends = ev(np.stack([lo, hi], axis=1))
    tables = []
    for i in range(c):
        seg = table[i, : int(b[i] - a[i]) + 1]
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
