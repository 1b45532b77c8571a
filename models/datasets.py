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
  file (pickle protocol 2 to 5). Unpickling is restricted to plain containers, byte strings and
  numpy arrays of plain numbers (no code runs), and the few callables a numpy pickle needs are
  checking stand-ins: no ``bytearray(n)`` from a count, no ``_reconstruct`` of a declared shape,
  array data that matches its declared shape, all of it within the cap below.
* HEP-BNN CSV: a header row, one column per pixel (NCHW-flat order) and exactly one ``label``
  column (no empty or repeated column names). Every cell is 1 to :data:`CSV_MAX_DIGITS` ASCII
  digits, optionally between spaces (``'7'``, ``' 7 '``, ``'007'``). Signs, decimals
  (``'7.0'``), exponents (``'7e0'``), ``'1_0'`` and non-ASCII digits are refused with the line
  and column (Python's ``int`` would take some of them); so is a cell the csv module cannot
  read (over its field size limit).

Splits: ``train``, ``val``, ``test`` and ``all``. For a directory of training and test files,
``val`` is the last tenth of the training files and ``train`` the rest. A single file is one
set: ``all`` (or ``test``, for evaluation) returns it whole; ``train``/``val`` are refused.

Bad files raise :class:`DatasetError` naming the file and what is wrong, before any long work:
only regular files are opened (a FIFO, device or socket would block or never end); a file, or
what a ``.gz`` inflates to (checked while inflating, every gzip member), is at most
:func:`data_cap` bytes: :data:`MAX_DATA_BYTES`, or half the available memory if that is less.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import pickle
import pickletools
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.resources import available_memory_bytes, gib
from safeio import write_json_atomic

SPLITS = ("train", "val", "test", "all")
VAL_FRACTION_DIVISOR = 10  # val = last tenth of a training file set
MAX_DATA_BYTES = 4 << 30  # one data file, read or inflated: 4 GiB (Fashion-MNIST: 47 MB)


class DatasetError(ValueError):
    """A dataset spec or file that cannot be loaded (names the file and the problem)."""


@dataclass
class Dataset:
    images: np.ndarray  # uint8 [N, C, H, W]
    labels: np.ndarray  # int64 [N]
    name: str  # e.g. "digits:test"
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
# Reading a data file: regular files only, within the cap, gzip inflated under the cap
# ---------------------------------------------------------------------------------------------
GZIP_MAGIC = b"\x1f\x8b"
_GZIP_CHUNK = 1 << 20  # compressed bytes fed to zlib at a time
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def data_cap() -> int:
    """The most bytes one data file may hold, read or inflated: MAX_DATA_BYTES, and at most half
    the memory available now (the loaders hold the file and the arrays made from it)."""
    return min(MAX_DATA_BYTES, available_memory_bytes() // 2)


def _amount(n: int) -> str:
    """Bytes for messages: GiB/MiB when large, exact below 10 MiB (where rounding would make a
    file of 1.2 MiB read as "1 MiB, more than the cap of 1 MiB")."""
    return gib(n) if n >= 10 << 20 else f"{n:,} bytes"


def _cap_text(cap: int) -> str:
    return (
        f"the cap of {_amount(cap)} on one data file (MAX_DATA_BYTES "
        f"{_amount(MAX_DATA_BYTES)}, or half the available memory if that is less)"
    )


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _short(exc: BaseException, limit: int = 200) -> str:
    """An exception's text on one line, shortened: messages quote what a bad file made."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _show(text: str, limit: int = 40) -> str:
    """repr of a cell or a name from a user's file, shortened: a message stays one line."""
    r = repr(text)
    return r if len(r) <= limit else f"{r[:limit]}... ({len(text):,} characters)"


def _require_regular(path: Path, st: os.stat_result) -> None:
    """A FIFO, a device or a socket is never opened: a read would block forever or never end."""
    if stat.S_ISREG(st.st_mode):
        return
    kind = next((what for test, what in _NOT_REGULAR if test(st.st_mode)), "a special file")
    raise DatasetError(f"{path}: is {kind}, not a regular file")


def _exists(path: Path) -> bool:
    """Whether a directory entry is there (a dangling link or an unreadable entry counts: reading
    it then names the problem)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return False
    except OSError:
        return True
    return True


def _list_dir(path: Path) -> list[str]:
    """The names in a directory, sorted; an unreadable directory names itself."""
    try:
        return sorted(p.name for p in path.iterdir())
    except OSError as exc:
        raise DatasetError(f"{path}: cannot list the directory ({_why(exc)})") from None


def _require_within(path: Path, size: int, cap: int) -> None:
    if size > cap:
        raise DatasetError(f"{path}: is {_amount(size)}, more than {_cap_text(cap)}")


def _read_file(path: Path, cap: int, limit: int | None = None) -> bytes:
    """The bytes of a regular file (only its first `limit` bytes if given); one larger than `cap`
    is refused unopened. The file is checked with stat before it is opened, opened non-blocking
    and checked again on the open descriptor, so a FIFO swapped in meanwhile cannot block."""
    try:
        st = os.stat(path)
        _require_regular(path, st)
        _require_within(path, st.st_size, cap)
        fd = os.open(path, _OPEN_FLAGS)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            _require_regular(path, st)
            _require_within(path, st.st_size, cap)
            if limit is not None:
                return f.read(limit)
            return _read_capped(f, st.st_size, cap, path)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({_why(exc)})") from None


def _read_capped(f, size: int, cap: int, path: Path) -> bytes:
    """Read to the end of a file whose stat said `size` bytes (<= cap); a file longer than its
    stat (growing, or /proc) is read on in chunks, never past the cap."""
    first = f.read(size + 1)
    if len(first) <= size:
        return first
    parts, total = [first], len(first)
    while total <= cap:
        more = f.read(_GZIP_CHUNK)
        if not more:
            break
        parts.append(more)
        total += len(more)
    if total > cap:
        raise DatasetError(f"{path}: holds more than {_cap_text(cap)}")
    return b"".join(parts)


def _gunzip(raw: bytes, path: Path, cap: int) -> bytes:
    """Inflate every gzip member of `raw` (`cat a.gz b.gz` is one valid gzip file), refusing as
    soon as the output passes `cap`: a few MB of gzip can inflate to terabytes, so the check runs
    while inflating, zlib never producing more than the room left. Trailing zero bytes (padding)
    are allowed; anything else after the last member is corrupt."""
    view, pos, parts, total = memoryview(raw), 0, [], 0
    while True:
        d, pending = zlib.decompressobj(wbits=31), b""
        while not d.eof:
            if not pending:
                if pos >= len(view):
                    raise DatasetError(
                        f"{path}: corrupt gzip data (truncated: the stream ends inside a member)"
                    )
                pending, pos = view[pos : pos + _GZIP_CHUNK], pos + _GZIP_CHUNK
            room = cap + 1 - total
            try:
                out = d.decompress(pending, room)
            except zlib.error as exc:
                raise DatasetError(f"{path}: corrupt gzip data ({exc})") from None
            parts.append(out)
            total += len(out)
            if total > cap:  # len(out) == room: zlib stopped at the room, not at the input
                raise DatasetError(
                    f"{path}: inflates to more than {_cap_text(cap)}; refused "
                    f"while inflating (a decompression bomb or a file too "
                    f"large for this machine)"
                )
            pending = d.unconsumed_tail
        pos = min(pos, len(view)) - len(d.unused_data)
        if view[pos : pos + 2] == GZIP_MAGIC:
            continue
        if view[pos:].tobytes().strip(b"\0"):
            raise DatasetError(
                f"{path}: corrupt gzip data (bytes after the last gzip member at offset {pos})"
            )
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _read_bytes(path: Path) -> bytes:
    """A data file's bytes, inflated if it is gzip; every problem is a DatasetError naming it."""
    cap = data_cap()
    raw = _read_file(path, cap)
    return _gunzip(raw, path, cap) if raw[:2] == GZIP_MAGIC else raw


def _read_head(path: Path, n: int) -> bytes:
    """The first `n` bytes of a data file (inflated if gzip), without reading the rest."""
    raw = _read_file(path, data_cap(), limit=1 << 16)
    if raw[:2] != GZIP_MAGIC:
        return raw[:n]
    try:
        head = zlib.decompressobj(wbits=31).decompress(raw, n)
    except zlib.error as exc:
        raise DatasetError(f"{path}: corrupt gzip data ({exc})") from None
    # short: a tiny or truncated file (or a gzip header over 64 KiB): inflate it all, checked
    return head if len(head) == n else _read_bytes(path)[:n]


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
    levels = d.images.astype(np.int64)  # exact: the file holds integers 0..16
    pixels = ((levels * 255 + 8) // 16).astype(np.uint8)
    idx = digits_split_indices(d.target)[split]
    return Dataset(pixels[idx, None], d.target[idx].astype(np.int64), f"digits:{split}", 10)


# ---------------------------------------------------------------------------------------------
# IDX (MNIST, Fashion-MNIST)
# ---------------------------------------------------------------------------------------------
_IDX_TYPES = {
    0x08: "unsigned byte",
    0x09: "signed byte",
    0x0B: "int16",
    0x0C: "int32",
    0x0D: "float32",
    0x0E: "float64",
}


def read_idx(path) -> np.ndarray:
    """Read an IDX file of unsigned bytes (gzipped or not) into a uint8 array of its shape. The
    header's dims are checked against the bytes actually there (inflated under the cap), so a
    header declaring terabytes allocates nothing."""
    path = Path(path)
    return _parse_idx(_read_bytes(path), path)


def _parse_idx(raw: bytes, path: Path) -> np.ndarray:
    """The array of an IDX file's (uncompressed) bytes; errors name `path`."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise DatasetError(
            f"{path}: not an IDX file (the first two bytes must be zero, got "
            f"{raw[:4].hex() or 'an empty file'})"
        )
    dtype, ndim = raw[2], raw[3]
    if dtype != 0x08:
        what = _IDX_TYPES.get(dtype, "unknown")
        raise DatasetError(
            f"{path}: IDX data type 0x{dtype:02x} ({what}) is not supported; "
            f"pixels and labels must be unsigned bytes (0x08)"
        )
    if ndim == 0 or len(raw) < 4 + 4 * ndim:
        raise DatasetError(f"{path}: truncated IDX header ({ndim} dimensions, {len(raw)} bytes)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    need = math.prod(dims)  # Python integers: no overflow on a bogus header
    have = len(raw) - 4 - 4 * ndim
    if have != need:
        raise DatasetError(
            f"{path}: the header announces shape {list(dims)} ({need} bytes of "
            f"data) but the file holds {have}"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


_IDX_NAME = re.compile(r"^(?P<set>train|t10k)-images[-.]idx3-ubyte(?P<gz>\.gz)?$")


def _idx_labels_path(images: Path) -> Path:
    name = images.name.replace("images", "labels").replace("idx3", "idx1")
    for cand in (
        images.with_name(name),
        images.with_name(name.removesuffix(".gz")),
        images.with_name(name + ".gz"),
    ):
        if cand != images and _exists(cand):
            return cand
    raise DatasetError(f"{images}: no labels file next to it (looked for {name})")


def _load_idx_pair(images_path: Path, name: str) -> Dataset:
    images = read_idx(images_path)
    if images.ndim != 3:
        raise DatasetError(
            f"{images_path}: an images file must have 3 dimensions [N, H, W], got shape {list(images.shape)}"
        )
    if images.shape[0] == 0:
        raise DatasetError(f"{images_path}: holds no images (its header announces 0)")
    if images[0].size == 0:  # before the labels: N labels of 0-pixel images cost 8N bytes
        raise DatasetError(f"{images_path}: images of shape {list(images.shape[1:])} hold no pixels")
    labels_path = _idx_labels_path(images_path)
    labels = read_idx(labels_path)
    if labels.ndim != 1:
        raise DatasetError(
            f"{labels_path}: a labels file must have 1 dimension, got shape {list(labels.shape)}"
        )
    if labels.shape[0] != images.shape[0]:
        raise DatasetError(
            f"{labels_path} holds {labels.shape[0]} labels but {images_path} holds {images.shape[0]} images"
        )
    return _checked(Dataset(images[:, None].copy(), labels.astype(np.int64), name), labels_path)


def _checked(ds: Dataset, label_file, classes: int = 10) -> Dataset:
    """Labels in 0..classes-1 and at least one image of at least one pixel."""
    if len(ds) == 0:
        raise DatasetError(f"{label_file}: holds no images")
    if ds.images[0].size == 0:
        raise DatasetError(f"{label_file}: images of shape {list(ds.image_shape)} hold no pixels")
    if ds.labels.min() < 0 or ds.labels.max() >= classes:
        bad = int(ds.labels[(ds.labels < 0) | (ds.labels >= classes)][0])
        raise DatasetError(f"{label_file}: label {bad} is outside 0..{classes - 1}")
    return ds


def _train_val(ds: Dataset, split: str) -> Dataset:
    """Split a training set: the last tenth is validation."""
    n_val = len(ds) // VAL_FRACTION_DIVISOR
    cut = len(ds) - n_val
    if n_val == 0:
        raise DatasetError(
            f"{ds.name}: {len(ds)} training images are too few for a "
            f"validation split (its last tenth; at least "
            f"{VAL_FRACTION_DIVISOR} needed)"
        )
    sl = slice(0, cut) if split == "train" else slice(cut, None)
    return Dataset(ds.images[sl], ds.labels[sl], f"{ds.name.rsplit(':', 1)[0]}:{split}", ds.classes)


def _concat(parts: list[Dataset], name: str) -> Dataset:
    return Dataset(
        np.concatenate([p.images for p in parts]),
        np.concatenate([p.labels for p in parts]),
        name,
        parts[0].classes,
    )


def _load_idx_dir(path: Path, split: str, names: list[str] | None = None) -> Dataset:
    found = {}
    for name in _list_dir(path) if names is None else names:
        m = _IDX_NAME.match(name)
        if m:
            found.setdefault(m["set"], path / name)
    sets = {"train": "train", "val": "train", "test": "t10k"}
    need = ["train", "t10k"] if split == "all" else [sets[split]]
    missing = [s for s in need if s not in found]
    if missing:
        raise DatasetError(f"{path}: no {missing[0]}-images-idx3-ubyte[.gz] file for split {split!r}")
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
_FASHION_CACHE: dict = {}  # (file, size, mtime_ns) -> uint8 array (this process)


def fashion_dir() -> Path:
    """Where the Fashion-MNIST IDX files are: ``$FASHION_MNIST_DIR`` or the package's folder."""
    return Path(os.environ.get("FASHION_MNIST_DIR", FASHION_DIR))


def _verdict_file() -> Path:
    """Verified MD5s survive the process here (git-ignored build/), keyed by size and mtime."""
    root = Path(__file__).resolve().parents[1]
    return (
        Path(os.environ.get("DATASETS_CACHE_DIR", root / "build" / "datasets")) / "fashion_md5_verdicts.json"
    )


def _stat_key(path: Path) -> tuple:
    try:
        st = os.stat(path)
        return (str(path.resolve()), st.st_size, st.st_mtime_ns)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop in resolve()
        raise DatasetError(f"{path}: cannot read ({_short(exc)})") from None


def _read_verdicts() -> dict:
    """The cached verdicts; a missing, odd (not a regular file) or corrupt cache is empty."""
    f = _verdict_file()
    try:
        if not stat.S_ISREG(os.stat(f).st_mode):
            return {}
        verdicts = json.loads(f.read_text())
    except (OSError, ValueError):
        return {}
    return verdicts if isinstance(verdicts, dict) else {}


def _remember_verdict(key: tuple) -> None:
    """Best effort: an unwritable cache only costs a re-check next time."""
    verdicts = _read_verdicts()
    verdicts[key[0]] = [key[1], key[2]]
    f = _verdict_file()
    with contextlib.suppress(OSError):
        write_json_atomic(f, verdicts, indent=1, sort_keys=True)


def _fashion_file(stem: str) -> np.ndarray:
    """One Fashion-MNIST IDX file, its uncompressed bytes checked against FASHION_MD5 (once per
    file version: the verdict is cached by size and mtime, in memory and in build/datasets)."""
    folder = fashion_dir()
    path = next((p for p in (folder / f"{stem}.gz", folder / stem) if _exists(p)), None)
    if path is None:
        raise DatasetError(
            f"{folder / (stem + '.gz')}: Fashion-MNIST is missing; install the Debian package "
            f"{FASHION_PACKAGE} (make setup does: apt-get install {FASHION_PACKAGE}) or set "
            f"FASHION_MNIST_DIR to a folder holding its four IDX files"
        )
    key = _stat_key(path)
    if key in _FASHION_CACHE:
        return _FASHION_CACHE[key]
    raw = _read_bytes(path)
    if _read_verdicts().get(key[0]) != [key[1], key[2]]:
        got = hashlib.md5(raw).hexdigest()
        if got != FASHION_MD5[stem]:
            raise DatasetError(
                f"{path}: uncompressed MD5 {got} is not Fashion-MNIST's {FASHION_MD5[stem]} "
                f"(a corrupt or different file; reinstall the Debian package {FASHION_PACKAGE})"
            )
        _remember_verdict(key)
    arr = _parse_idx(raw, path)
    _FASHION_CACHE[key] = arr
    return arr


def load_fashion(split: str = "test") -> Dataset:
    """Fashion-MNIST (Debian package dataset-fashion-mnist) as uint8 [N, 1, 28, 28]: test =
    t10k (10,000), val = the last tenth of the 60,000 training images, train = the rest."""
    _check_split(split)
    parts = {}
    for s in ("train", "t10k") if split == "all" else ("t10k",) if split == "test" else ("train",):
        images = _fashion_file(f"{s}-images-idx3-ubyte")
        labels = _fashion_file(f"{s}-labels-idx1-ubyte")
        if images.ndim != 3 or labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise DatasetError(
                f"{fashion_dir()}: {s} images {list(images.shape)} and labels "
                f"{list(labels.shape)} do not pair"
            )
        parts[s] = Dataset(images[:, None], labels.astype(np.int64), f"fashion:{s}")
    if split == "test":
        return Dataset(parts["t10k"].images, parts["t10k"].labels, "fashion:test")
    if split == "all":
        return _concat([parts["train"], parts["t10k"]], "fashion:all")
    return _train_val(parts["train"], split)


# ---------------------------------------------------------------------------------------------
# CIFAR-10 python batches
# ---------------------------------------------------------------------------------------------
MAX_PICKLE_OPCODES = 10_000_000  # a batch needs a few per image: ~90,000 for 10,000 images
_PLAIN_DTYPES = frozenset({"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"})
_LATIN1 = frozenset({"latin1", "latin-1"})  # how protocol-2 pickles from Python 3 carry bytes


class _PickleRefused(Exception):
    """A batch asks the restricted unpickler for something it will not do (the text says what)."""


class _Budget:
    """Bytes the callables a batch may call are allowed to make, all calls together: a small
    pickle can call bytearray, encode or an array's __setstate__ again and again on one
    memoized string, so each call is counted, before it allocates."""

    def __init__(self, cap: int):
        self.cap, self.spent = cap, 0

    def spend(self, n: int, what: str) -> None:
        self.spent += n
        if self.spent > self.cap:
            raise _PickleRefused(
                f"a CIFAR batch declaring {_amount(self.spent)} ({what}) is over {_cap_text(self.cap)}"
            )


class _NdarrayName:
    """What `numpy.ndarray` unpickles to: only a marker for `_reconstruct` (the real class,
    called by REDUCE or NEWOBJ, would allocate any shape it is given)."""

    def __repr__(self) -> str:
        return "numpy.ndarray"


_NDARRAY = _NdarrayName()


def _what(obj) -> str:
    """A value from a batch for a message: a short str, else only its type (a repr could be
    as large as the file)."""
    return _show(obj) if isinstance(obj, str) else type(obj).__name__


def _dims(shape, what: str) -> tuple:
    if (
        not isinstance(shape, (tuple, list))
        or len(shape) > 32
        or not all(type(d) is int and d >= 0 for d in shape)
    ):
        raise _PickleRefused(f"{what}: the shape must be a tuple of at most 32 natural numbers")
    return tuple(shape)


def _plain_dtype(dt, what: str) -> np.dtype:
    """A fresh copy of a plain number dtype (no fields, no subarray: nothing a BUILD on the dtype
    object could have changed its size with)."""
    if (
        not isinstance(dt, np.dtype)
        or dt.names is not None
        or dt.subdtype is not None
        or dt.str[1:] not in _PLAIN_DTYPES
    ):
        shown = str(dt)[:80] if isinstance(dt, np.dtype) else _what(dt)
        raise _PickleRefused(f"{what}: dtype {shown} is not a plain number type")
    return np.dtype(dt.str)


def _declared(dims: tuple, dt: np.dtype) -> tuple[int, str]:
    return math.prod(dims) * dt.itemsize, f"array {list(dims)} of {dt}"


class _GuardedArray(np.ndarray):
    """An array being unpickled: numpy's pickles make an empty array (`_reconstruct`) and fill
    it from its state (BUILD calls __setstate__). The state's shape and dtype are checked against
    the bytes it carries and against the budget before numpy copies anything (numpy's own
    __setstate__ would take any dtype object, even one a BUILD gave object fields). Every array
    a batch makes is one; ``np.asarray`` turns it into a plain ndarray."""

    def __setstate__(self, state):
        budget = self.__dict__.get("_budget")
        if budget is None or not isinstance(state, tuple) or len(state) not in (4, 5):
            raise _PickleRefused("an array state must be (version, shape, dtype, fortran, data)")
        shape, dtype, fortran, raw = state[-4:]
        dims = _dims(shape, "array state")
        dt = _plain_dtype(dtype, "array state")
        need, what = _declared(dims, dt)
        budget.spend(need, what)
        if not isinstance(raw, (bytes, bytearray)) or len(raw) != need:
            got = f"{len(raw)} bytes" if isinstance(raw, (bytes, bytearray)) else type(raw).__name__
            raise _PickleRefused(f"an {what} ({need} bytes) carries {got} of data")
        super().__setstate__((1, dims, dt, bool(fortran), raw))


class _SafeUnpickler(pickle.Unpickler):
    """Only plain containers, byte strings and numpy arrays of plain numbers: a batch file must
    not be able to run code, nor make the callables it may name allocate more than the cap, so
    each name maps to a checking stand-in, never to the real callable."""

    def __init__(self, file, budget: _Budget):
        super().__init__(file, encoding="bytes")
        self.budget = budget
        self.allowed = {
            ("numpy", "ndarray"): _NDARRAY,
            ("numpy", "dtype"): self._dtype,
            ("builtins", "bytearray"): self._bytearray,
            ("__builtin__", "bytearray"): self._bytearray,
            ("_codecs", "encode"): self._encode,
        }
        for core in ("numpy.core", "numpy._core"):  # numpy 1 and numpy 2 pickles
            self.allowed[(f"{core}.multiarray", "_reconstruct")] = self._reconstruct
            self.allowed[(f"{core}.multiarray", "scalar")] = self._scalar
            self.allowed[(f"{core}.numeric", "_frombuffer")] = self._frombuffer  # protocol 5

    def find_class(self, module, name):
        try:
            return self.allowed[(module, name)]
        except (KeyError, TypeError):
            raise pickle.UnpicklingError(f"forbidden object {module}.{name}") from None

    def _reconstruct(self, subtype, shape, typecode=None):
        """numpy's pickles call this with shape (0,): the data comes with the state."""
        if subtype is not _NDARRAY:
            raise _PickleRefused(f"numpy _reconstruct of {_what(subtype)}, not of numpy.ndarray")
        dims = _dims(shape, "numpy _reconstruct")
        if dims != (0,):
            raise _PickleRefused(
                f"a CIFAR batch declaring {_amount(math.prod(dims))} (numpy "
                f"_reconstruct of an array {list(dims)}; numpy's own pickles "
                f"declare shape (0,) and carry the data in the state)"
            )
        arr = np.ndarray.__new__(_GuardedArray, (0,), np.int8)
        arr._budget = self.budget
        return arr

    def _frombuffer(self, buf, dtype, shape, order="C"):
        dt = _plain_dtype(dtype, "numpy _frombuffer")
        dims = _dims(shape, "numpy _frombuffer")
        need, what = _declared(dims, dt)
        self.budget.spend(need, what)
        if not isinstance(buf, (bytes, bytearray)) or len(buf) != need or order not in "CF":
            raise _PickleRefused(
                f"numpy _frombuffer of an {what} ({need} bytes) with "
                f"{type(buf).__name__} data of the wrong size or order"
            )
        arr = np.frombuffer(buf, dtype=dt).reshape(dims, order=order).view(_GuardedArray)
        arr._budget = self.budget  # a BUILD on it goes through the checks too
        return arr

    def _scalar(self, dtype, data=None):
        dt = _plain_dtype(dtype, "numpy scalar")
        if not isinstance(data, bytes) or len(data) != dt.itemsize:
            raise _PickleRefused(f"a numpy {dt} scalar needs {dt.itemsize} bytes of data")
        self.budget.spend(dt.itemsize, f"a {dt} scalar")
        return np.frombuffer(data, dtype=dt)[0]

    def _dtype(self, obj, align=False, copy=True):
        if not isinstance(obj, str) or obj not in _PLAIN_DTYPES:
            raise _PickleRefused(f"numpy dtype {_what(obj)} is not a plain number type")
        return np.dtype(obj, bool(align), True)  # a copy: BUILD may set its byte order

    def _bytearray(self, *args):
        """Only from bytes (protocol 2 passes a str and 'latin-1'): bytearray(n) from a count
        would allocate n zero bytes."""
        if not args:
            return bytearray()
        if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
            self.budget.spend(len(args[0]), "a bytearray")
            return bytearray(args[0])
        if len(args) == 2 and isinstance(args[0], str) and args[1] in _LATIN1:
            self.budget.spend(len(args[0]), "a bytearray")
            return bytearray(args[0], "latin-1")
        if isinstance(args[0], int):
            raise _PickleRefused(
                f"bytearray({args[0]}) would allocate {_amount(max(args[0], 0))} "
                f"of zeros; a batch makes bytearrays only from bytes"
            )
        raise _PickleRefused(
            f"bytearray of {type(args[0]).__name__}; a batch makes bytearrays only from bytes"
        )

    def _encode(self, obj, encoding="utf-8", errors="strict"):
        """Protocol-2 pickles from Python 3 carry bytes as _codecs.encode(str, 'latin1')."""
        if not isinstance(obj, str) or encoding not in _LATIN1 or errors != "strict":
            raise _PickleRefused(
                f"_codecs.encode of {type(obj).__name__} to {_what(encoding)}; only str to latin1 is allowed"
            )
        self.budget.spend(len(obj), "a byte string")
        return obj.encode("latin-1")


def _scan_pickle(raw: bytes, path: Path) -> None:
    """Walk the opcodes before unpickling (pickletools reads them and builds nothing): every
    counted argument must be in the file (the unpickler allocates a BYTEARRAY8's declared
    length before reading it), and a batch of millions of tiny opcodes is refused before it
    grows into many times its size in objects."""
    count = 0
    try:
        for _ in pickletools.genops(raw):
            count += 1
            if count > MAX_PICKLE_OPCODES:
                raise DatasetError(
                    f"{path}: a CIFAR batch of more than {MAX_PICKLE_OPCODES:,} "
                    f"pickle opcodes (a batch needs a few per image)"
                )
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parse failure means a corrupt file
        raise DatasetError(
            f"{path}: not a CIFAR-10 python batch ({type(exc).__name__}: {_short(exc)})"
        ) from None


def _unpickle_batch(raw: bytes, path: Path):
    _scan_pickle(raw, path)
    try:
        return _SafeUnpickler(io.BytesIO(raw), _Budget(data_cap())).load()
    except _PickleRefused as exc:
        raise DatasetError(f"{path}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means a corrupt file
        raise DatasetError(
            f"{path}: not a CIFAR-10 python batch ({type(exc).__name__}: {_short(exc)})"
        ) from None


def _cifar_labels(labels, n: int, path: Path) -> np.ndarray:
    """Whole numbers only (np.asarray(..., int64) would silently truncate 2.7 to 2), one per
    image, counted before any conversion."""
    if isinstance(labels, np.ndarray) and labels.ndim != 1:
        raise DatasetError(
            f"{path}: 'labels' must be a list of integers, got an array of shape {list(labels.shape)}"
        )
    if not isinstance(labels, (list, tuple, np.ndarray)):
        raise DatasetError(f"{path}: 'labels' must be a list of integers, got {type(labels).__name__}")
    if len(labels) != n:
        raise DatasetError(f"{path}: {len(labels)} labels for {n} images")
    try:
        arr = np.asarray(labels)
    except Exception:  # noqa: BLE001 - ragged, too deep, too large: not a list of integers
        arr = None
    if arr is None or arr.shape != (n,) or arr.dtype.kind not in "iu":
        raise DatasetError(f"{path}: 'labels' must be a list of integers")
    bad = arr[(arr < 0) | (arr > 9)]
    if bad.size:
        raise DatasetError(f"{path}: label {int(bad[0])} is outside 0..9")
    return arr.astype(np.int64)


def read_cifar_batch(path) -> Dataset:
    """One CIFAR-10 python batch: dict with b'data' uint8 [N, 3072] and b'labels'."""
    path = Path(path)
    d = _unpickle_batch(_read_bytes(path), path)
    if not isinstance(d, dict):
        raise DatasetError(f"{path}: a CIFAR-10 batch is a dict, got {type(d).__name__}")
    d = {k.decode("latin-1") if isinstance(k, bytes) else k: v for k, v in d.items()}
    for key in ("data", "labels"):
        if key not in d:
            keys = sorted(_show(str(k)) for k in d)
            raise DatasetError(
                f"{path}: the batch has no {key!r} entry (keys: "
                f"{', '.join(keys[:8])}{', ...' if len(keys) > 8 else ''})"
            )
    data = d["data"]
    if not isinstance(data, np.ndarray):
        raise DatasetError(f"{path}: 'data' must be uint8 [N, 3072], got {type(data).__name__}")
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise DatasetError(f"{path}: 'data' must be uint8 [N, 3072], got {data.dtype} {list(data.shape)}")
    labels = _cifar_labels(d["labels"], data.shape[0], path)
    # rows are channel-major (1024 red, 1024 green, 1024 blue), each 32x32 row-major: NCHW
    return _checked(Dataset(data.reshape(-1, 3, 32, 32).copy(), labels, path.name), path)


def _load_cifar_dir(path: Path, split: str, names: list[str] | None = None) -> Dataset:
    present = set(_list_dir(path) if names is None else names)
    train_files = [path / f"data_batch_{i}" for i in range(1, 6)]
    test_file = path / "test_batch"
    need = {"train": train_files, "val": train_files, "test": [test_file], "all": train_files + [test_file]}[
        split
    ]
    missing = [f for f in need if f.name not in present]
    if missing:
        raise DatasetError(f"{path}: {missing[0].name} is missing for split {split!r}")
    parts = [read_cifar_batch(f) for f in need]
    ds = _concat(parts, f"{path.name}:{split}")
    return _train_val(ds, split) if split in ("train", "val") else ds


# ---------------------------------------------------------------------------------------------
# HEP-BNN CSV
# ---------------------------------------------------------------------------------------------
CSV_MAX_DIGITS = 6  # a pixel is 0..255 and a label 0..9: room for leading zeros
_CSV_CELL = re.compile(rf" *[0-9]{{1,{CSV_MAX_DIGITS}}} *")
_CSV_ROW = re.compile(rf"(?: *[0-9]{{1,{CSV_MAX_DIGITS}}} *,)* *[0-9]{{1,{CSV_MAX_DIGITS}}} *")
_CSV_BLOCK_BYTES = 1 << 22  # rows are gathered in blocks of about this many cells


def _csv_image_shape(n: int, path: Path) -> tuple:
    for c in (1, 3):
        side = int(round((n / c) ** 0.5)) if n % c == 0 else 0
        if side and c * side * side == n:
            return (c, side, side)
    raise DatasetError(f"{path}: {n} pixel columns are not C x H x H for C = 1 or 3")


def _csv_int(text: str, where: str) -> int:
    """One CSV cell as an integer: 1 to CSV_MAX_DIGITS ASCII digits, optionally between ASCII
    spaces ('7', ' 7 ', '007'). Everything else is an error naming `where` (file, line, column):
    '', signs ('-1', '+7'), decimals ('7.0', '2.5'), exponents ('7e0'), 'nan', and what Python's
    int() would quietly take: '1_0', non-ASCII digits ('٣' is 3 to int()), tabs."""
    if _CSV_CELL.fullmatch(text):
        return int(text)
    digits = text.strip(" ")
    if digits.isascii() and digits.isdigit():
        raise DatasetError(
            f"{where}: {_show(text)} has more than {CSV_MAX_DIGITS} digits (a pixel is 0..255, a label 0..9)"
        )
    raise DatasetError(
        f"{where}: {_show(text)} is not a plain integer (1 to {CSV_MAX_DIGITS} "
        f"ASCII digits; no sign, point, exponent or '_')"
    )


def _csv_lines(raw: bytes, path: Path):
    """The file's lines decoded one at a time (a UTF-8 error names its line; no copy of the
    whole text, which one non-ASCII character would make four times the file's size)."""
    for number, line in enumerate(io.BytesIO(raw), start=1):
        try:
            yield line.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"{path}: line {number}: not UTF-8 text ({exc.reason} at byte {exc.start + 1})"
            ) from None


def _csv_rows(raw: bytes, path: Path):
    """(line number, fields) of each non-blank row; a csv error (a field over the csv module's
    size limit, a stray quote) names its line."""
    reader = csv.reader(_csv_lines(raw, path))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DatasetError(f"{path}: line {reader.line_num}: not valid CSV ({_short(exc)})") from None
        if row:
            yield reader.line_num, row


def _csv_header(row: list, line: int, path: Path) -> tuple[list, int]:
    """The column names and the label column's index: exactly one `label`, no empty or repeated
    name (a second `label` would otherwise be read as a pixel)."""
    names = [h.strip() for h in row]
    for i, name in enumerate(names):
        if not name:
            raise DatasetError(f"{path}: line {line}, column {i + 1}: empty column name in the header")
    labels = [i for i, name in enumerate(names) if name == "label"]
    if not labels:
        raise DatasetError(
            f"{path}: no 'label' column in the header {', '.join(_show(n) for n in names[:5])}..."
        )
    if len(labels) > 1:
        raise DatasetError(
            f"{path}: line {line}: the header has {len(labels)} 'label' columns "
            f"(columns {labels[0] + 1} and {labels[1] + 1}); it needs exactly one"
        )
    seen: dict = {}
    for i, name in enumerate(names):
        if name in seen:
            raise DatasetError(
                f"{path}: line {line}: column name {_show(name)} appears twice "
                f"(columns {seen[name] + 1} and {i + 1})"
            )
        seen[name] = i
    return names, labels[0]


def _csv_row(row: list, line: int, names: list, li: int, path: Path) -> list:
    """One data row as integers, every cell checked (one regular expression over the joined
    row; the first bad cell is then named), pixels in 0..255 and the label in 0..9."""
    joined = ",".join(row)
    if not (_CSV_ROW.fullmatch(joined) and joined.count(",") == len(row) - 1):
        for c, cell in enumerate(row):
            _csv_int(cell, f"{path}: line {line}, column {_show(names[c])}")
    values = list(map(int, row))
    if max(values) > 255 or values[li] > 9:
        c = next(c for c, v in enumerate(values) if v > (9 if c == li else 255))
        what = f"label {values[c]} is outside 0..9" if c == li else f"pixel {values[c]} is outside 0..255"
        raise DatasetError(f"{path}: line {line}, column {_show(names[c])}: {what}")
    return values


def read_hepbnn_csv(path) -> Dataset:
    """HEP-BNN CSV: header, one integer column per pixel (NCHW-flat), and a `label` column."""
    path = Path(path)
    rows = _csv_rows(_read_bytes(path), path)
    first = next(rows, None)
    if first is None:
        raise DatasetError(f"{path}: empty file")
    names, li = _csv_header(first[1], first[0], path)
    pix_cols = [i for i in range(len(names)) if i != li]
    shape = _csv_image_shape(len(pix_cols), path)
    per_block = max(1, _CSV_BLOCK_BYTES // len(names))
    blocks, block, k = [], np.empty((per_block, len(names)), np.uint8), 0
    for line, row in rows:
        if len(row) != len(names):
            raise DatasetError(f"{path}: line {line} has {len(row)} fields, the header has {len(names)}")
        block[k] = _csv_row(row, line, names, li, path)  # checked: every value fits uint8
        k += 1
        if k == per_block:
            blocks.append(block)
            block, k = np.empty_like(block), 0
    values = np.concatenate(blocks + [block[:k]])
    n = values.shape[0]
    ds = Dataset(values[:, pix_cols].reshape(n, *shape), values[:, li].astype(np.int64), path.name)
    return _checked(ds, path)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------
def _sniff(path: Path) -> str:
    if path.suffix.lower() == ".csv" or path.name.lower().endswith(".csv.gz"):
        return "csv"
    head = _read_head(path, 4)
    if len(head) == 4 and head[0] == 0 and head[1] == 0:
        return "idx"
    if head[:1] == b"\x80":
        return "cifar"
    raise DatasetError(
        f"{path}: cannot tell the format (expected an IDX file, a CIFAR-10 python batch or a .csv file)"
    )


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
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        raise DatasetError(
            f"{path}: no such file or directory (and not one of the names {', '.join(sorted(BUILTIN))})"
        ) from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({_why(exc)})") from None
    if stat.S_ISDIR(st.st_mode):
        names = _list_dir(path)
        if any(_IDX_NAME.match(n) for n in names):
            return _load_idx_dir(path, split, names)
        if "test_batch" in names or any(n.startswith("data_batch_") for n in names):
            return _load_cifar_dir(path, split, names)
        raise DatasetError(
            f"{path}: holds no images (neither MNIST-style IDX files such as "
            f"train-images-idx3-ubyte.gz nor CIFAR-10 batches such as test_batch)"
        )
    _require_regular(path, st)
    if split in ("train", "val"):
        raise DatasetError(
            f"{path}: a single file has no {split!r} split; use split 'all' or "
            f"'test' to take it whole, or give the directory of the dataset"
        )
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
        raise DatasetError(
            f"dataset {ds.name} has images {'x'.join(map(str, have))}; network "
            f"{net.name} expects input {'x'.join(map(str, want))}"
        )
    if have != want and len(have) > 1 and len(want) > 1:
        raise DatasetError(
            f"dataset {ds.name} has images {'x'.join(map(str, have))}; network "
            f"{net.name} expects input {'x'.join(map(str, want))} (same size, "
            f"different layout: refusing to guess)"
        )
    if net.input_kind == "binary":
        raise DatasetError(f"network {net.name} takes +-1 input; dataset {ds.name} holds pixels")
    classes = int(np.prod(net.output_shape))
    if len(ds) and ds.labels.max() >= classes:
        raise DatasetError(
            f"dataset {ds.name} has label {int(ds.labels.max())}; network {net.name} has {classes} outputs"
        )
    x = ds.images.reshape(len(ds), *want)
    return x.astype(np.uint8 if net.input_kind == "uint8" else np.int32)


def load_for_network(spec, net, split: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """(images as a batch for `net`, labels): `load_dataset` + `adapt_to_network`, the call a
    compare script with ``--data digits|fashion[:SPLIT]|PATH`` needs."""
    ds = load_dataset(spec, split)
    return adapt_to_network(ds, net), ds.labels


__all__ = [
    "BUILTIN",
    "CSV_MAX_DIGITS",
    "Dataset",
    "DatasetError",
    "FASHION_MD5",
    "FASHION_PACKAGE",
    "MAX_DATA_BYTES",
    "SPLITS",
    "adapt_to_network",
    "data_cap",
    "digits_split_indices",
    "fashion_dir",
    "load_dataset",
    "load_digits",
    "load_fashion",
    "load_for_network",
    "parse_spec",
    "read_cifar_batch",
    "read_hepbnn_csv",
    "read_idx",
]
