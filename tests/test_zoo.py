"""The shipped zoo models (models/zoo): their cards tell the truth, and the PyTorch quantized eval
model, onnxruntime and the golden executor give the same pre-softmax scores on random integer
images and on real digits; the SAC model compiles for the default array."""
import hashlib

import numpy as np
import onnx
import pytest
import torch

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from models import golden, zoo
from models.datasets import load_digits
from models.onnx import ort as onnx_ort
from models.train.bnn import BnnNet
from models.train.sac import SacNet

SEED = 4711
TARGET = {"bnn_digits": 97.0, "sac_digits": 98.0}


@pytest.fixture(scope="module", params=zoo.MODELS)
def entry(request):
    name = request.param
    return name, zoo.load(name), zoo.card(name), onnx.load(str(zoo.path(name)))


def test_card_describes_the_file(entry):
    name, net, card, _ = entry
    assert card["sha256"] == hashlib.sha256(zoo.path(name).read_bytes()).hexdigest()
    assert card["family"] == net.meta["family"] == name.split("_")[0]
    assert card["architecture"]["summary"][1:] == net.summary().splitlines()[1:]
    for key in ("command", "seed", "seconds"):
        assert key in card["training"]
    assert card["training"]["command"].startswith("python scripts/train.py --family")
    assert net.input_shape == (1, 8, 8) and net.input_kind == "uint8"


def test_accuracy_matches_card_and_targets(entry):
    name, net, card, _ = entry
    d = load_digits("test")
    acc = 100 * float((golden.run(net, d.images).predictions == d.labels).mean())
    acc_card = card["accuracy_percent"]
    assert round(acc, 2) == acc_card["quantized_test"]
    assert acc >= TARGET[name]
    assert acc_card["float_twin_test"] - acc <= 1.5


@pytest.mark.parametrize("data", ["random", "digits"])
def test_golden_equals_onnxruntime_and_torch(entry, data):
    name, net, _, model = entry
    if data == "random":
        seed = SEED + zoo.MODELS.index(name)
        print("seed", seed)
        rng = np.random.default_rng(seed)
        x = rng.integers(0, 256, (200, *net.input_shape)).astype(np.uint8)
        x[0], x[1] = 0, 255
    else:
        x = load_digits("all").images
    ref = golden.run(net, x)
    outs = onnx_ort.layer_outputs(model, net, x)
    for i, (o, r) in enumerate(zip(outs, ref.outputs)):
        assert np.array_equal(np.asarray(o).reshape(r.shape), r.astype(np.float32)), f"layer {i}"
    for optimized in (False, True):
        scores = onnx_ort.run(model, net, x, optimized=optimized)[0]
        assert np.array_equal(scores, ref.scores.astype(np.float32))
        assert np.array_equal(np.argmax(scores, axis=1), ref.predictions)
    # the quantized PyTorch model in eval mode, holding the file's integer parameters
    torch_model = (BnnNet if net.meta["family"] == "bnn" else SacNet).from_network(net)
    with torch.no_grad():
        t = torch_model(torch.from_numpy(x.astype(np.float32))).double().numpy()
    unit = 64.0 if net.meta["family"] == "sac" else 1.0
    assert np.array_equal(t * unit, ref.scores.astype(np.float64))


def test_sac_zoo_model_compiles_for_default_array():
    net = zoo.load("sac_digits")
    card = zoo.card("sac_digits")
    prog = compile_network(net, ArrayConfig())
    assert len(prog.instructions) == card["compile"]["instructions"]
    assert prog.wmem.shape[0] == card["compile"]["weight_words"] <= ArrayConfig().wdepth
    groups = [c["group"] for c in card["column_combining"]]
    assert groups == [layer.weights.group for layer in net.layers if hasattr(layer, "weights")]


def test_bnn_zoo_model_is_small():
    net = zoo.load("bnn_digits")
    types = [layer.type_name for layer in net.layers]
    assert types[:3] == ["IntConv2d", "Step", "MaxPool2d"] and types[-1] == "BinDense"
    assert max(layer.weight.shape[0] for layer in net.layers if hasattr(layer, "weight")) <= 256
