"""Datasets: the embedded digits default and loaders for files users bring.

Every loader returns a :class:`Dataset` whose images are **uint8 pixels [N, C, H, W]** (NCHW, the
network-input convention of docs/conventions.md) and whose labels are int64 [N].

* ``"digits"``: scikit-learn's 1,797 real 8x8 digits (shipped inside scikit-learn, no
  download). Their 0..16 gray levels are mapped to 0..255 by ``(v * 255 + 8) // 16``. The split
  is fixed, stratified and uses no random numbers: the k-th image of each class (file order) is
  *test* if ``k % 5 == 0``, *val* if ``k % 10 == 1``, *train* otherwise.
* ``"fashion"``: the real Fashion-MNIST (Zalando, MIT license; 60,000 train + 10,000 test
  28x28 images) from the Debian package ``dataset-fashion-mnist`` (``make setup`` installs it),
  read from :data:`FASHION_DIR` (``$FASHION_MNIST_DIR`` overrides it). The uncompressed IDX
  files are checked against :data:`FASHION_MD5` on first use (Debian's gzip headers differ from
  upstream's, so the ``.gz`` sums do not); the verdict is cached per file size and mtime.
  Splits as for any IDX directory: test = the 10,000 t10k images, val = the last 6,000 training
  images, train = the first 54,000.
* A builtin name may carry its split: ``"fashion:train"``, ``"fashion:test"``, ``"digits:val"``;
  that split wins over the ``split`` argument (a compare job that always asks for ``test`` can
  then be pointed at the training images).
* MNIST / Fashion-MNIST IDX files (gzipped or not): a directory holding
  ``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]``, ``t10k-...``; or one
  images file (its labels file is found by the standard name).
* CIFAR-10 python batches: a directory with ``data_batch_1..5`` and ``test_batch``, or one batch
  file. Unpickling is restricted to plain containers and numpy arrays (no code runs).
* HEP-BNN CSV: a header row, one column per pixel (NCHW-flat order) and a ``label`` column.

Splits: ``train``, ``val``, ``test`` and ``all``. For a directory of training and test files,
``val`` is the last tenth of the training files and ``train`` the rest. A single file is one
set: ``all`` (or ``test``, for evaluation) returns it whole; ``train``/``val`` are refused.

Bad files raise :class:`DatasetError` naming the file and what is wrong.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
import pickle
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPLITS = ("train", "val", "test", "all")
VAL_FRACTION_DIVISOR = 10          # val = last tenth of a training file set


class DatasetError(ValueError):
    """A dataset spec or file that cannot be loaded (names the file and the problem)."""


@dataclass
class Dataset:
    images: np.ndarray      # uint8 [N, C, H, W]
    labels: np.ndarray      # int64 [N]
    name: str               # e.g. "digits:test"
    classes: int = 10

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def image_shape(self) -> tuple:
        return tuple(int(d) for d in self.images.shape[1:])


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise DatasetError(f"split must be one of {SPLITS}, got {split!r}")
    return split


# ---------------------------------------------------------------------------------------------
# digits (embedded)
# ---------------------------------------------------------------------------------------------
def digits_split_indices(labels: np.ndarray) -> dict[str, np.ndarray]:
    """The fixed, stratified digits split, without random numbers: the k-th image of each class
    (in file order) is test if k % 5 == 0, val if k % 10 == 1, train otherwise."""
    labels = np.asarray(labels)
    k = np.zeros(labels.shape[0], dtype=np.int64)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        k[members] = np.arange(members.size)
    i = np.arange(labels.shape[0])
    test = k % 5 == 0
    val = k % 10 == 1
    return {"train": i[~test & ~val], "val": i[val], "test": i[test], "all": i}


def load_digits(split: str = "test") -> Dataset:
    """scikit-learn's 8x8 digits as uint8 [N, 1, 8, 8] (gray levels 0..16 -> 0..255)."""
    from sklearn.datasets import load_digits as _sk_digits
    _check_split(split)
    d = _sk_digits()
    levels = d.images.astype(np.int64)            # exact: the file holds integers 0..16
    pixels = ((levels * 255 + 8) // 16).astype(np.uint8)
    idx = digits_split_indices(d.target)[split]
    return Dataset(pixels[idx, None], d.target[idx].astype(np.int64), f"digits:{split}", 10)


# ---------------------------------------------------------------------------------------------
# IDX (MNIST, Fashion-MNIST)
# ---------------------------------------------------------------------------------------------
_IDX_TYPES = {0x08: "unsigned byte", 0x09: "signed byte", 0x0B: "int16", 0x0C: "int32",
              0x0D: "float32", 0x0E: "float64"}


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError(f"{path}: corrupt gzip data ({exc})") from None
    return raw


def read_idx(path) -> np.ndarray:
    """Read an IDX file of unsigned bytes (gzipped or not) into a uint8 array of its shape."""
    path = Path(path)
    return _parse_idx(_read_bytes(path), path)


def _parse_idx(raw: bytes, path: Path) -> np.ndarray:
    """The array of an IDX file's (uncompressed) bytes; errors name `path`."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise DatasetError(f"{path}: not an IDX file (the first two bytes must be zero, got "
                           f"{raw[:4].hex() or 'an empty file'})")
    dtype, ndim = raw[2], raw[3]
    if dtype != 0x08:
        what = _IDX_TYPES.get(dtype, "unknown")
        raise DatasetError(f"{path}: IDX data type 0x{dtype:02x} ({what}) is not supported; "
                           f"pixels and labels must be unsigned bytes (0x08)")
    if ndim == 0 or len(raw) < 4 + 4 * ndim:
        raise DatasetError(f"{path}: truncated IDX header ({ndim} dimensions, {len(raw)} bytes)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    need = math.prod(dims)                 # Python integers: no overflow on a bogus header
    have = len(raw) - 4 - 4 * ndim
    if have != need:
        raise DatasetError(f"{path}: the header announces shape {list(dims)} ({need} bytes of "
                           f"data) but the file holds {have}")
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


_IDX_NAME = re.compile(r"^(?P<set>train|t10k)-images[-.]idx3-ubyte(?P<gz>\.gz)?$")


def _idx_labels_path(images: Path) -> Path:
    name = images.name.replace("images", "labels").replace("idx3", "idx1")
    for cand in (images.with_name(name), images.with_name(name.removesuffix(".gz")),
                 images.with_name(name + ".gz")):
        if cand != images and cand.exists():
            return cand
    raise DatasetError(f"{images}: no labels file next to it (looked for {name})")


def _load_idx_pair(images_path: Path, name: str) -> Dataset:
    images = read_idx(images_path)
    if images.ndim != 3:
        raise DatasetError(f"{images_path}: an images file must have 3 dimensions [N, H, W], "
                           f"got shape {list(images.shape)}")
    if images.shape[0] == 0:
        raise DatasetError(f"{images_path}: holds no images (its header announces 0)")
    labels_path = _idx_labels_path(images_path)
    labels = read_idx(labels_path)
    if labels.ndim != 1:
        raise DatasetError(f"{labels_path}: a labels file must have 1 dimension, got shape "
                           f"{list(labels.shape)}")
    if labels.shape[0] != images.shape[0]:
        raise DatasetError(f"{labels_path} holds {labels.shape[0]} labels but {images_path} "
                           f"holds {images.shape[0]} images")
    return _checked(Dataset(images[:, None].copy(), labels.astype(np.int64), name), labels_path)


def _checked(ds: Dataset, label_file, classes: int = 10) -> Dataset:
    """Labels in 0..classes-1 and at least one image of at least one pixel."""
    if len(ds) == 0:
        raise DatasetError(f"{label_file}: holds no images")
    if ds.images[0].size == 0:
        raise DatasetError(f"{label_file}: images of shape {list(ds.image_shape)} hold no "
                           f"pixels")
    if (ds.labels.min() < 0 or ds.labels.max() >= classes):
        bad = int(ds.labels[(ds.labels < 0) | (ds.labels >= classes)][0])
        raise DatasetError(f"{label_file}: label {bad} is outside 0..{classes - 1}")
    return ds


def _train_val(ds: Dataset, split: str) -> Dataset:
    """Split a training set: the last tenth is validation."""
    n_val = len(ds) // VAL_FRACTION_DIVISOR
    cut = len(ds) - n_val
    if n_val == 0:
        raise DatasetError(f"{ds.name}: {len(ds)} training images are too few for a "
                           f"validation split (its last tenth; at least "
                           f"{VAL_FRACTION_DIVISOR} needed)")
    sl = slice(0, cut) if split == "train" else slice(cut, None)
    return Dataset(ds.images[sl], ds.labels[sl], f"{ds.name.rsplit(':', 1)[0]}:{split}",
                   ds.classes)


def _concat(parts: list[Dataset], name: str) -> Dataset:
    return Dataset(np.concatenate([p.images for p in parts]),
                   np.concatenate([p.labels for p in parts]), name, parts[0].classes)


def _load_idx_dir(path: Path, split: str) -> Dataset:
    found = {}
    for f in sorted(path.iterdir()):
        m = _IDX_NAME.match(f.name)
        if m:
            found.setdefault(m["set"], f)
    sets = {"train": "train", "val": "train", "test": "t10k"}
    need = ["train", "t10k"] if split == "all" else [sets[split]]
    missing = [s for s in need if s not in found]
    if missing:
        raise DatasetError(f"{path}: no {missing[0]}-images-idx3-ubyte[.gz] file for split "
                           f"{split!r}")
    parts = {s: _load_idx_pair(found[s], f"{path.name}:{s}") for s in need}
    if split == "test":
        return Dataset(parts["t10k"].images, parts["t10k"].labels, f"{path.name}:test")
    if split == "all":
        return _concat([parts["train"], parts["t10k"]], f"{path.name}:all")
    return _train_val(parts["train"], split)


# ---------------------------------------------------------------------------------------------
# Fashion-MNIST from the Debian package
# ---------------------------------------------------------------------------------------------
FASHION_PACKAGE = "dataset-fashion-mnist"
FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
# MD5 of the *uncompressed* IDX files. The t10k sums are upstream's (zalandoresearch); the train
# sums are those of the Debian package's files (upstream publishes only the .gz sums, and
# Debian's gzip headers differ).
FASHION_MD5 = {
    "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
    "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
    "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
}
_FASHION_CACHE: dict = {}           # (file, size, mtime_ns) -> uint8 array (this process)


def fashion_dir() -> Path:
    """Where the Fashion-MNIST IDX files are: ``$FASHION_MNIST_DIR`` or the package's folder."""
    return Path(os.environ.get("FASHION_MNIST_DIR", FASHION_DIR))


def _verdict_file() -> Path:
    """Verified MD5s survive the process here (git-ignored build/), keyed by size and mtime."""
    root = Path(__file__).resolve().parents[1]
    return Path(os.environ.get("DATASETS_CACHE_DIR", root / "build" / "datasets")) / \
        "fashion_md5_verdicts.json"


def _stat_key(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


def _read_verdicts() -> dict:
    try:
        return json.loads(_verdict_file().read_text())
    except (OSError, ValueError):
        return {}


def _remember_verdict(key: tuple) -> None:
    """Best effort: an unwritable cache only costs a re-check next time."""
    verdicts = _read_verdicts()
    verdicts[key[0]] = [key[1], key[2]]
    f = _verdict_file()
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f"{f.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")
        tmp.replace(f)
    except OSError:
        pass


def _fashion_file(stem: str) -> np.ndarray:
    """One Fashion-MNIST IDX file, its uncompressed bytes checked against FASHION_MD5 (once per
    file version: the verdict is cached by size and mtime, in memory and in build/datasets)."""
    folder = fashion_dir()
    path = next((p for p in (folder / f"{stem}.gz", folder / stem) if p.is_file()), None)
    if path is None:
        raise DatasetError(
            f"{folder / (stem + '.gz')}: Fashion-MNIST is missing; install the Debian package "
            f"{FASHION_PACKAGE} (make setup does: apt-get install {FASHION_PACKAGE}) or set "
            f"FASHION_MNIST_DIR to a folder holding its four IDX files")
    key = _stat_key(path)
    if key in _FASHION_CACHE:
        return _FASHION_CACHE[key]
    raw = _read_bytes(path)
    if _read_verdicts().get(key[0]) != [key[1], key[2]]:
        got = hashlib.md5(raw).hexdigest()
        if got != FASHION_MD5[stem]:
            raise DatasetError(
                f"{path}: uncompressed MD5 {got} is not Fashion-MNIST's {FASHION_MD5[stem]} "
                f"(a corrupt or different file; reinstall the Debian package {FASHION_PACKAGE})")
        _remember_verdict(key)
    arr = _parse_idx(raw, path)
    _FASHION_CACHE[key] = arr
    return arr


def load_fashion(split: str = "test") -> Dataset:
    """Fashion-MNIST (Debian package dataset-fashion-mnist) as uint8 [N, 1, 28, 28]: test =
    t10k (10,000), val = the last tenth of the 60,000 training images, train = the rest."""
    _check_split(split)
    parts = {}
    for s in (("train", "t10k") if split == "all" else
              ("t10k",) if split == "test" else ("train",)):
        images = _fashion_file(f"{s}-images-idx3-ubyte")
        labels = _fashion_file(f"{s}-labels-idx1-ubyte")
        if images.ndim != 3 or labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise DatasetError(f"{fashion_dir()}: {s} images {list(images.shape)} and labels "
                               f"{list(labels.shape)} do not pair")
        parts[s] = Dataset(images[:, None], labels.astype(np.int64), f"fashion:{s}")
    if split == "test":
        return Dataset(parts["t10k"].images, parts["t10k"].labels, "fashion:test")
    if split == "all":
        return _concat([parts["train"], parts["t10k"]], "fashion:all")
    return _train_val(parts["train"], split)


# ---------------------------------------------------------------------------------------------
# CIFAR-10 python batches
# ---------------------------------------------------------------------------------------------
class _SafeUnpickler(pickle.Unpickler):
    """Only plain containers and numpy arrays: a batch file must not be able to run code."""
    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("builtins", "bytearray"),
                ("_codecs", "encode")}      # protocol-2 pickles from Python 3 encode bytes so

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"forbidden object {module}.{name}")


def read_cifar_batch(path) -> Dataset:
    """One CIFAR-10 python batch: dict with b'data' uint8 [N, 3072] and b'labels'."""
    path = Path(path)
    raw = _read_bytes(path)
    try:
        d = _SafeUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means a corrupt file
        raise DatasetError(f"{path}: not a CIFAR-10 python batch "
                           f"({type(exc).__name__}: {exc})") from None
    if not isinstance(d, dict):
        raise DatasetError(f"{path}: a CIFAR-10 batch is a dict, got {type(d).__name__}")
    d = {k.decode() if isinstance(k, bytes) else k: v for k, v in d.items()}
    for key in ("data", "labels"):
        if key not in d:
            raise DatasetError(f"{path}: the batch has no {key!r} entry (keys: {sorted(d)})")
    data = np.asarray(d["data"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise DatasetError(f"{path}: 'data' must be uint8 [N, 3072], got {data.dtype} "
                           f"{list(data.shape)}")
    try:
        labels = np.asarray(d["labels"], dtype=np.int64)
    except (TypeError, ValueError):
        raise DatasetError(f"{path}: 'labels' must be a list of integers") from None
    if labels.shape != (data.shape[0],):
        raise DatasetError(f"{path}: {labels.size} labels for {data.shape[0]} images")
    # rows are channel-major (1024 red, 1024 green, 1024 blue), each 32x32 row-major: NCHW
    return _checked(Dataset(data.reshape(-1, 3, 32, 32).copy(), labels, path.name), path)


def _load_cifar_dir(path: Path, split: str) -> Dataset:
    train_files = [path / f"data_batch_{i}" for i in range(1, 6)]
    test_file = path / "test_batch"
    need = {"train": train_files, "val": train_files, "test": [test_file],
            "all": train_files + [test_file]}[split]
    missing = [f for f in need if not f.exists()]
    if missing:
        raise DatasetError(f"{path}: {missing[0].name} is missing for split {split!r}")
    parts = [read_cifar_batch(f) for f in need]
    ds = _concat(parts, f"{path.name}:{split}")
    return _train_val(ds, split) if split in ("train", "val") else ds


# ---------------------------------------------------------------------------------------------
# HEP-BNN CSV
# ---------------------------------------------------------------------------------------------
def _csv_image_shape(n: int, path: Path) -> tuple:
    for c in (1, 3):
        side = int(round((n / c) ** 0.5)) if n % c == 0 else 0
        if side and c * side * side == n:
            return (c, side, side)
    raise DatasetError(f"{path}: {n} pixel columns are not C x H x H for C = 1 or 3")


CSV_LIMIT = 1 << 31          # a cell beyond +-2^31 is no pixel and no label (and no int64 risk)


def _csv_int(text: str, where: str) -> int:
    """One CSV cell as an integer: '7', ' 7 ', '7.0' and '7e0' are 7; 'nan', 'inf', '7.5', '' and
    cells beyond +-2^31 are errors naming `where` (file, line, column)."""
    try:
        value = int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            f = float("nan")
        if not np.isfinite(f) or f != np.floor(f):
            raise DatasetError(f"{where}: {text!r} is not an integer") from None
        value = int(f)
    if not -CSV_LIMIT <= value <= CSV_LIMIT:
        raise DatasetError(f"{where}: {text.strip()!r} is out of range (a pixel is 0..255, "
                           f"a label 0..9)")
    return value


def read_hepbnn_csv(path) -> Dataset:
    """HEP-BNN CSV: header, one integer column per pixel (NCHW-flat), and a `label` column."""
    path = Path(path)
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not a UTF-8 text file ({exc})") from None
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if r]
    if not rows:
        raise DatasetError(f"{path}: empty file")
    header = [h.strip() for h in rows[0]]
    if "label" not in header:
        raise DatasetError(f"{path}: no 'label' column in the header {header[:5]}...")
    li = header.index("label")
    pix_cols = [i for i in range(len(header)) if i != li]
    shape = _csv_image_shape(len(pix_cols), path)
    n = len(rows) - 1
    values = np.empty((n, len(header)), dtype=np.int64)
    for r, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise DatasetError(f"{path}: line {r} has {len(row)} fields, the header has "
                               f"{len(header)}")
        for c, v in enumerate(row):
            values[r - 2, c] = _csv_int(v, f"{path}: line {r}, column {header[c]!r}")
    pixels = values[:, pix_cols]
    if pixels.size and (pixels.min() < 0 or pixels.max() > 255):
        bad = np.argwhere((pixels < 0) | (pixels > 255))[0]
        raise DatasetError(f"{path}: line {bad[0] + 2}, column {header[pix_cols[bad[1]]]!r}: "
                           f"pixel {int(pixels[tuple(bad)])} is outside 0..255")
    ds = Dataset(pixels.astype(np.uint8).reshape(n, *shape), values[:, li], path.name)
    return _checked(ds, path)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------
def _sniff(path: Path) -> str:
    if path.suffix.lower() == ".csv" or path.name.lower().endswith(".csv.gz"):
        return "csv"
    head = _read_bytes(path)[:4]
    if len(head) == 4 and head[0] == 0 and head[1] == 0:
        return "idx"
    if head[:1] == b"\x80":
        return "cifar"
    raise DatasetError(f"{path}: cannot tell the format (expected an IDX file, a CIFAR-10 "
                       f"python batch or a .csv file)")


BUILTIN = {"digits": load_digits, "fashion": load_fashion}


def parse_spec(spec) -> tuple[str, str | None]:
    """(name or path, split it carries or None): ``"fashion:train"`` -> ("fashion", "train").
    Only a builtin name carries a split (a path may contain colons)."""
    text = str(spec)
    name, sep, split = text.rpartition(":")
    if sep and name in BUILTIN:
        if split not in SPLITS:
            raise DatasetError(f"{text}: split must be one of {SPLITS}, got {split!r}")
        return name, split
    return text, None


def load_dataset(spec, split: str = "test") -> Dataset:
    """Load ``"digits"``, ``"fashion"`` (either may carry its split: ``"fashion:train"``) or a
    path (IDX directory/file, CIFAR-10 directory/batch, HEP-BNN CSV)."""
    _check_split(split)
    name, own_split = parse_spec(spec)
    if name in BUILTIN:
        return BUILTIN[name](own_split or split)
    path = Path(spec)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or directory (and not one of the names "
                           f"{', '.join(sorted(BUILTIN))})")
    if path.is_dir():
        names = {f.name for f in path.iterdir()}
        if any(_IDX_NAME.match(n) for n in names):
            return _load_idx_dir(path, split)
        if "test_batch" in names or any(n.startswith("data_batch_") for n in names):
            return _load_cifar_dir(path, split)
        raise DatasetError(f"{path}: holds no images (neither MNIST-style IDX files such as "
                           f"train-images-idx3-ubyte.gz nor CIFAR-10 batches such as test_batch)")
    if split in ("train", "val"):
        raise DatasetError(f"{path}: a single file has no {split!r} split; use split 'all' or "
                           f"'test' to take it whole, or give the directory of the dataset")
    kind = _sniff(path)
    if kind == "csv":
        ds = read_hepbnn_csv(path)
    elif kind == "idx":
        ds = _load_idx_pair(path, path.name)
    else:
        ds = read_cifar_batch(path)
    ds.name = f"{path.name}:{split}"
    return ds


def adapt_to_network(ds: Dataset, net) -> np.ndarray:
    """The dataset's images as a batch for ``net`` (an ir.Network): same element count, in the
    network's input shape (NCHW-flat order if one side is flat) and input dtype; else an error."""
    want = tuple(net.input_shape)
    have = ds.image_shape
    if int(np.prod(have)) != int(np.prod(want)):
        raise DatasetError(f"dataset {ds.name} has images {'x'.join(map(str, have))}; network "
                           f"{net.name} expects input {'x'.join(map(str, want))}")
    if have != want and len(have) > 1 and len(want) > 1:
        raise DatasetError(f"dataset {ds.name} has images {'x'.join(map(str, have))}; network "
                           f"{net.name} expects input {'x'.join(map(str, want))} (same size, "
                           f"different layout: refusing to guess)")
    if net.input_kind == "binary":
        raise DatasetError(f"network {net.name} takes +-1 input; dataset {ds.name} holds pixels")
    classes = int(np.prod(net.output_shape))
    if len(ds) and ds.labels.max() >= classes:
        raise DatasetError(f"dataset {ds.name} has label {int(ds.labels.max())}; network "
                           f"{net.name} has {classes} outputs")
    x = ds.images.reshape(len(ds), *want)
    return x.astype(np.uint8 if net.input_kind == "uint8" else np.int32)


def load_for_network(spec, net, split: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """(images as a batch for `net`, labels): `load_dataset` + `adapt_to_network`, the call a
    compare script with ``--data digits|fashion[:SPLIT]|PATH`` needs."""
    ds = load_dataset(spec, split)
    return adapt_to_network(ds, net), ds.labels


__all__ = ["BUILTIN", "Dataset", "DatasetError", "FASHION_MD5", "FASHION_PACKAGE", "SPLITS",
           "adapt_to_network", "digits_split_indices", "fashion_dir", "load_dataset",
           "load_digits", "load_fashion", "load_for_network", "parse_spec", "read_cifar_batch",
           "read_hepbnn_csv", "read_idx"]
