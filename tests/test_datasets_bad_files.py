"""Hostile and broken data files: each is refused with one DatasetError naming the file (and line
and column for CSV) before any long work; never a hang, a traceback, an allocation of the size a
file merely declares, or silently wrong values.

Classes: files that are not regular files (FIFO, device, socket; also as a directory's entry),
unreadable files and directories, decompression bombs (the cap on one data file), pickle bombs
in CIFAR batches, strict HEP-BNN CSV cells and headers, IDX headers under the cap."""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import gzip
import io
import os
import pickle
import re
import signal
import socket
import zlib
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from models import datasets
from models.datasets import (
    DatasetError,
    load_dataset,
    load_fashion,
    read_cifar_batch,
    read_hepbnn_csv,
    read_idx,
)
from tests.test_datasets import cifar_batch, idx_bytes, write_mnist_dir

SEED = 4040
HYPOTHESIS_SEED = 4041
MiB = 1 << 20
_reconstruct = np.zeros(1).__reduce__()[0]  # numpy's own, whatever its module
_frombuffer = np.zeros(1).__reduce_ex__(5)[0]  # protocol 5 arrays


@contextlib.contextmanager
def within(seconds: int = 30):
    """A test that would block (an opened FIFO) fails instead of hanging the suite."""

    def expired(*_):
        raise TimeoutError(f"blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def opened(monkeypatch):
    """The paths os.open was asked for (the loaders open every data file with it)."""
    seen = []
    real = os.open

    def recording(path, *args, **kwargs):
        seen.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording)
    return seen


@pytest.fixture
def small_cap(monkeypatch):
    """The cap on one data file set to 1 MiB (the real one is 4 GiB or half the memory)."""
    monkeypatch.setattr(datasets, "MAX_DATA_BYTES", MiB)
    return MiB


class Reduce:
    """Pickles as the call fn(*args) (then BUILD with state): how a crafted batch is written."""

    def __init__(self, fn, args, state=None):
        self.fn, self.args, self.state = fn, args, state

    def __reduce__(self):
        return (self.fn, self.args) if self.state is None else (self.fn, self.args, self.state)


# ---------------------------------------------------------------------------------------------
# 1. Not a regular file: never opened
# ---------------------------------------------------------------------------------------------
def special_file(tmp_path: Path, kind: str, name: str) -> tuple[Path, str]:
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
        return path, "a named pipe"
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))  # the socket file stays after the close
        return path, "a socket"
    assert kind == "device"
    path.symlink_to("/dev/zero")  # endless: a read would never end
    return path, "a character device"


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
@pytest.mark.parametrize(
    "name, reader",
    [
        ("x.csv", read_hepbnn_csv),
        ("x-idx3-ubyte", read_idx),
        ("data_batch_1", read_cifar_batch),
        ("x.csv.gz", None),
        ("anything", None),
    ],
)
def test_a_special_file_given_as_data_is_refused_unopened(tmp_path, opened, kind, name, reader):
    path, what = special_file(tmp_path, kind, name)
    with within():
        for load in ([reader] if reader else []) + [
            lambda p: load_dataset(p, "all"),
            lambda p: load_dataset(p, "test"),
        ]:
            with pytest.raises(DatasetError, match=re.escape(f"{path}: is {what}, not a regular file")):
                load(path)
    assert path not in opened


@pytest.mark.parametrize("entry", ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"])
def test_a_fifo_in_an_idx_directory_is_refused_unopened(tmp_path, opened, entry):
    write_mnist_dir(tmp_path, np.random.default_rng(SEED), gz=False)
    (tmp_path / entry).unlink()
    os.mkfifo(tmp_path / entry)
    with (
        within(),
        pytest.raises(
            DatasetError, match=re.escape(f"{tmp_path / entry}: is a named pipe, not a regular file")
        ),
    ):
        load_dataset(tmp_path, "test")
    assert tmp_path / entry not in opened
    assert len(load_dataset(tmp_path, "train")) == 18  # the train files are fine


def test_special_entries_in_cifar_and_fashion_directories(tmp_path, opened, monkeypatch):
    rng = np.random.default_rng(SEED)
    cifar = tmp_path / "cifar"
    cifar.mkdir()
    for i in range(1, 6):
        (cifar / f"data_batch_{i}").write_bytes(pickle.dumps(cifar_batch(rng, 2), protocol=2))
    os.mkfifo(cifar / "test_batch")
    with within(), pytest.raises(DatasetError, match=r"test_batch: is a named pipe"):
        load_dataset(cifar, "test")
    assert len(load_dataset(cifar, "train")) == 9
    (cifar / "data_batch_3").unlink()
    (cifar / "data_batch_3").mkdir()
    with pytest.raises(DatasetError, match=r"data_batch_3: is a directory, not a regular file"):
        load_dataset(cifar, "train")
    fashion = tmp_path / "fashion"
    fashion.mkdir()
    os.mkfifo(fashion / "t10k-images-idx3-ubyte.gz")
    monkeypatch.setenv("FASHION_MNIST_DIR", str(fashion))
    monkeypatch.setenv("DATASETS_CACHE_DIR", str(tmp_path / "cache"))
    with (
        within(),
        pytest.raises(
            DatasetError,
            match=r"t10k-images-idx3-ubyte.gz: is a named "
            r"pipe, not a regular file",
        ),
    ):
        load_fashion("test")
    assert cifar / "test_batch" not in opened and fashion / "t10k-images-idx3-ubyte.gz" not in opened


def test_a_fifo_swapped_in_after_the_stat_cannot_block(tmp_path, monkeypatch):
    """The open is non-blocking and the open descriptor is checked again."""
    path = tmp_path / "x.csv"
    os.mkfifo(path)
    regular = os.stat(__file__)
    real_stat = os.stat
    monkeypatch.setattr(
        os,
        "stat",
        lambda p, *a, **k: (
            regular if isinstance(p, (str, Path)) and Path(p) == path else real_stat(p, *a, **k)
        ),
    )
    with within(), pytest.raises(DatasetError, match=r"x.csv: is a named pipe"):
        read_hepbnn_csv(path)


# ---------------------------------------------------------------------------------------------
# 2. Unreadable files and directories (we run as root: the errors are injected)
# ---------------------------------------------------------------------------------------------
def test_an_unlistable_directory_names_itself(tmp_path, monkeypatch):
    write_mnist_dir(tmp_path, np.random.default_rng(SEED))

    def denied(self):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", denied)
    for split in ("test", "all"):
        with pytest.raises(
            DatasetError, match=re.escape(f"{tmp_path}: cannot list the directory (Permission denied)")
        ):
            load_dataset(tmp_path, split)
    with pytest.raises(DatasetError, match=r"cannot list the directory"):
        datasets._load_cifar_dir(tmp_path, "test")


@pytest.mark.parametrize("fail", ["stat", "open", "read"])
def test_an_unreadable_file_names_itself(tmp_path, monkeypatch, fail):
    write_mnist_dir(tmp_path, np.random.default_rng(SEED))
    (tmp_path / "d.csv").write_text("p0,label\n1,2\n")
    batch = tmp_path / "test_batch"
    batch.write_bytes(pickle.dumps(cifar_batch(np.random.default_rng(SEED), 2), protocol=2))
    victims = {tmp_path / "t10k-labels-idx1-ubyte.gz", tmp_path / "d.csv", batch}
    real = {"stat": os.stat, "open": os.open, "read": os.fdopen}[fail]

    class Broken:
        """An open file whose reads fail (a disk error)."""

        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *_):
            self.f.close()

        def fileno(self):
            return self.f.fileno()

        def read(self, *_):
            raise OSError(errno.EIO, "Input/output error")

    def failing(path, *args, **kwargs):
        if fail == "read":
            f = real(path, *args, **kwargs)
            return Broken(f) if Path(os.readlink(f"/proc/self/fd/{path}")) in victims else f
        if isinstance(path, (str, Path)) and Path(path) in victims:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, {"stat": "stat", "open": "open", "read": "fdopen"}[fail], failing)
    why = "Input/output error" if fail == "read" else "Permission denied"
    for load, victim in (
        (lambda: load_dataset(tmp_path, "test"), "t10k-labels-idx1-ubyte.gz"),
        (lambda: load_dataset(tmp_path / "d.csv", "all"), "d.csv"),
        (lambda: read_cifar_batch(batch), "test_batch"),
    ):
        with pytest.raises(DatasetError, match=re.escape(f"{tmp_path / victim}: cannot read ({why})")):
            load()


def test_odd_paths_are_dataset_errors(tmp_path):
    with pytest.raises(DatasetError, match=r"cannot read \(File name too long\)"):
        load_dataset(tmp_path / ("x" * 5000))
    with pytest.raises(DatasetError, match=r"no such file or directory"):
        load_dataset(str(tmp_path / "a\0b"))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(DatasetError, match=r"loop: cannot read \(Too many levels of symbolic"):
        load_dataset(tmp_path / "loop")
    (tmp_path / "file").write_text("x")
    with pytest.raises(DatasetError, match=r"no such file or directory"):
        load_dataset(tmp_path / "file" / "below")


# ---------------------------------------------------------------------------------------------
# 3. Decompression bombs and files over the cap
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def inflated(monkeypatch):
    """The largest output any one zlib decompress call in the loaders gave."""
    biggest = [0]
    real = zlib.decompressobj

    class Counting:
        def __init__(self, *args, **kwargs):
            self.d = real(*args, **kwargs)

        def decompress(self, data, max_length=0):
            assert max_length > 0, "inflating without a limit"
            out = self.d.decompress(data, max_length)
            biggest[0] = max(biggest[0], len(out))
            return out

        def __getattr__(self, name):
            return getattr(self.d, name)

    monkeypatch.setattr(datasets.zlib, "decompressobj", Counting)
    return biggest


CAP_WORDS = "more than the cap of 1,048,576 bytes on one data file (MAX_DATA_BYTES 1,048,576 bytes"


@pytest.mark.parametrize("members", [1, 200])
def test_a_gzip_bomb_is_refused_while_inflating(tmp_path, small_cap, inflated, members):
    # an IDX header declaring 64 MiB, and 64 MiB of zeros: ~64 KiB of gzip
    head = idx_bytes(np.zeros((0, 0, 0)))[:4] + b"".join(d.to_bytes(4, "big") for d in (64, 1024, 1024))
    body = head + bytes(64 * MiB)
    step = len(body) // members + 1
    f = tmp_path / "t10k-images-idx3-ubyte.gz"
    f.write_bytes(b"".join(gzip.compress(body[i : i + step]) for i in range(0, len(body), step)))
    assert f.stat().st_size < MiB
    with pytest.raises(DatasetError, match=re.escape(f"{f}: inflates to {CAP_WORDS}")):
        load_dataset(tmp_path, "test")
    assert inflated[0] <= small_cap + 1  # refused while inflating, not after


def test_the_cap_is_half_the_available_memory_when_that_is_less(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "available_memory_bytes", lambda: 2 * MiB)
    assert datasets.data_cap() == MiB
    f = tmp_path / "x-idx3-ubyte.gz"
    f.write_bytes(gzip.compress(idx_bytes(np.zeros((2, 1024, 1024)))))
    with pytest.raises(
        DatasetError,
        match=r"inflates to more than the cap of 1,048,576 bytes "
        r".*half the available memory if that is less",
    ):
        read_idx(f)
    monkeypatch.undo()
    assert datasets.data_cap() == min(4 << 30, datasets.available_memory_bytes() // 2)


def test_a_plain_file_over_the_cap_is_refused_unread(tmp_path, small_cap, opened):
    f = tmp_path / "t10k-images-idx3-ubyte"
    f.write_bytes(idx_bytes(np.zeros((2, 1024, 1024))))
    with pytest.raises(
        DatasetError,
        match=re.escape(f"{f}: is 2,097,168 bytes, more than the cap of 1,048,576 bytes on one data file"),
    ):
        read_idx(f)
    batch = tmp_path / "test_batch"
    batch.write_bytes(pickle.dumps(cifar_batch(np.random.default_rng(SEED), 400), protocol=4))
    with pytest.raises(
        DatasetError,
        match=r"test_batch: is 1,2\d\d,\d\d\d bytes, more than the "
        r"cap",
    ):
        load_dataset(batch, "all")
    assert f not in opened and batch not in opened


def test_multi_member_gzip_padding_and_garbage(tmp_path):
    rng = np.random.default_rng(SEED)
    img = rng.integers(0, 256, (6, 5, 4)).astype(np.uint8)
    raw = idx_bytes(img)
    f = tmp_path / "x-idx3-ubyte.gz"
    members = b"".join(gzip.compress(raw[i : i + 7]) for i in range(0, len(raw), 7))
    for tail in (b"", b"\0" * 100):  # gzip allows zero padding
        f.write_bytes(members + tail)
        assert np.array_equal(read_idx(f), img)
    f.write_bytes(members + b"junk")
    with pytest.raises(
        DatasetError,
        match=r"x-idx3-ubyte.gz: corrupt gzip data \(bytes after "
        r"the last gzip member at offset \d+\)",
    ):
        read_idx(f)
    f.write_bytes(members[:-3])
    with pytest.raises(DatasetError, match=r"corrupt gzip data \(truncated"):
        read_idx(f)
    bad_crc = bytearray(gzip.compress(raw))
    bad_crc[-6] ^= 1
    f.write_bytes(bytes(bad_crc))
    with pytest.raises(DatasetError, match=r"corrupt gzip data \(.*incorrect data check"):
        read_idx(f)
    f.write_bytes(b"\x1f\x8b")
    with pytest.raises(DatasetError, match=r"corrupt gzip data"):
        load_dataset(f, "all")


@hyp_seed(HYPOTHESIS_SEED)
@settings(max_examples=60, deadline=None)
@given(
    dims=st.lists(st.integers(1, 40), min_size=3, max_size=3),
    cuts=st.lists(st.integers(0, 70_000), max_size=4),
    cap=st.integers(1, 80_000),
    pad=st.integers(0, 3),
)
def test_gzip_loads_exactly_when_it_inflates_within_the_cap(dims, cuts, cap, pad):
    """Any split into members, any cap: loaded whole iff the inflated size is within the cap."""
    img = np.arange(int(np.prod(dims)), dtype=np.uint64).astype(np.uint8).reshape(dims)
    raw = idx_bytes(img)
    bounds = sorted({0, len(raw), *(c % (len(raw) + 1) for c in cuts)})
    blob = b"".join(gzip.compress(raw[a:b]) for a, b in pairwise(bounds)) + bytes(pad)
    path = _scratch("x-idx3-ubyte.gz", blob)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets, "MAX_DATA_BYTES", cap)
        if len(raw) <= cap and len(blob) <= cap:
            assert np.array_equal(read_idx(path), img)
        else:
            with pytest.raises(DatasetError, match=r"more than the cap of"):
                read_idx(path)


# ---------------------------------------------------------------------------------------------
# 6. IDX headers declaring enormous shapes, under the cap
# ---------------------------------------------------------------------------------------------
def test_an_idx_header_declaring_terabytes_allocates_nothing(tmp_path, small_cap):
    huge = bytes([0, 0, 8, 3]) + (2**32 - 1).to_bytes(4, "big") * 3
    f = tmp_path / "x-idx3-ubyte.gz"
    f.write_bytes(gzip.compress(huge + bytes(100)))
    with pytest.raises(
        DatasetError,
        match=r"the header announces shape \[4294967295, "
        r"4294967295, 4294967295\] \(79228162458924105385300"
        r"197375 bytes of data\) but the file holds 100",
    ):
        read_idx(f)
    f.write_bytes(gzip.compress(huge + bytes(3 * MiB)))  # and data past the cap
    with pytest.raises(DatasetError, match=r"inflates to more than the cap of 1,048,576 bytes"):
        read_idx(f)
    # 0-pixel images: the labels are never read (N labels would cost 8N bytes)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(
        bytes([0, 0, 8, 3]) + b"".join(d.to_bytes(4, "big") for d in (2**31, 0, 7))
    )
    with pytest.raises(DatasetError, match=r"images of shape \[0, 7\] hold no pixels"):
        load_dataset(tmp_path / "t10k-images-idx3-ubyte", "all")


# ---------------------------------------------------------------------------------------------
# 4. Pickle bombs in CIFAR batches
# ---------------------------------------------------------------------------------------------
def write_batch(tmp_path, obj, protocol=2) -> Path:
    f = tmp_path / "test_batch"
    f.write_bytes(obj if isinstance(obj, bytes) else pickle.dumps(obj, protocol=protocol))
    return f


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_real_batches_load_in_every_protocol(tmp_path, protocol):
    rng = np.random.default_rng(SEED + protocol)
    for labels in ("list", "numpy scalars", "array", "tuple"):
        b = cifar_batch(rng, 5)
        want = list(b[b"labels"])
        b[b"labels"] = {
            "list": want,
            "numpy scalars": [np.int64(v) for v in want],
            "array": np.array(want, np.int64),
            "tuple": tuple(want),
        }[labels]
        b[b"extra"] = bytearray(b"kept bytes")
        ds = read_cifar_batch(write_batch(tmp_path, b, protocol))
        assert np.array_equal(ds.images.reshape(5, -1), b[b"data"]), labels
        assert ds.labels.tolist() == want and ds.labels.dtype == np.int64
    # numpy 1 (and Python 2) pickles name numpy.core.multiarray
    raw = pickle.dumps(cifar_batch(rng, 3), protocol=2).replace(b"numpy._core.", b"numpy.core.")
    assert len(read_cifar_batch(write_batch(tmp_path, raw))) == 3
    # a gzipped batch (the format is told from the inflated head)
    (tmp_path / "b.gz").write_bytes(gzip.compress(pickle.dumps(cifar_batch(rng, 2), protocol)))
    assert len(load_dataset(tmp_path / "b.gz", "all")) == 2


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_bytearray_from_a_count_is_refused(tmp_path, protocol):
    f = write_batch(tmp_path, {b"data": Reduce(bytearray, (48_000_000_000,))}, protocol)
    with pytest.raises(
        DatasetError,
        match=r"test_batch: bytearray\(48000000000\) would allocate "
        r"44.7 GiB of zeros; a batch makes bytearrays only "
        r"from bytes",
    ):
        read_cifar_batch(f)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_reconstruct_declaring_a_huge_shape_is_refused(tmp_path, protocol):
    f = write_batch(
        tmp_path, {b"data": Reduce(_reconstruct, (np.ndarray, (15_000_000, 3072), b"B"))}, protocol
    )
    with pytest.raises(
        DatasetError,
        match=r"test_batch: a CIFAR batch declaring 42.9 GiB \(numpy "
        r"_reconstruct of an array \[15000000, 3072\]; numpy's "
        r"own pickles declare shape \(0,\)",
    ):
        read_cifar_batch(f)


def test_an_array_state_must_match_its_shape_and_the_cap(tmp_path):
    u1 = np.dtype("u1")
    huge = Reduce(_reconstruct, (np.ndarray, (0,), b"b"), (1, (15_000_000, 3072), u1, False, b"abc"))
    with pytest.raises(
        DatasetError,
        match=r"a CIFAR batch declaring 42.9 GiB \(array "
        r"\[15000000, 3072\] of uint8\) is over the cap of",
    ):
        read_cifar_batch(write_batch(tmp_path, {b"data": huge}))
    short = Reduce(_reconstruct, (np.ndarray, (0,), b"b"), (1, (2, 3072), u1, False, b"abc"))
    with pytest.raises(
        DatasetError,
        match=r"an array \[2, 3072\] of uint8 \(6144 bytes\) carries "
        r"3 bytes of data",
    ):
        read_cifar_batch(write_batch(tmp_path, {b"data": short}))
    # a BUILD can give a dtype fields (numpy's dtype.__setstate__ takes them): never used
    structured = Reduce(np.dtype, ("u1", False, True), (3, "|", None, ("a",), {"a": (u1, 0)}, -1, -1, 0))
    for array in (
        Reduce(_reconstruct, (np.ndarray, (0,), b"b")),
        Reduce(_frombuffer, (b"abcd", u1, (4,), "C")),
    ):  # protocol 5's arrays
        array.state = (1, (4,), structured, False, b"abcd")
        with pytest.raises(
            DatasetError,
            match=re.escape("array state: dtype (numpy.uint8, [('a', 'u1')]) is not a plain number"),
        ):
            read_cifar_batch(write_batch(tmp_path, {b"data": array}, 5))
    frombuffer = Reduce(_frombuffer, (b"abc", u1, (2, 3072), "C"))
    with pytest.raises(DatasetError, match=r"numpy _frombuffer of an array \[2, 3072\] of uint8"):
        read_cifar_batch(write_batch(tmp_path, {b"data": frombuffer}, 5))


@pytest.mark.parametrize("what", ["encode", "bytearray", "array"])
def test_memoized_data_reused_many_times_is_counted_against_the_cap(tmp_path, small_cap, what):
    """64 calls on one memoized 256 KiB string: a 260 KiB file asking for 16 MiB."""
    text = "x" * (256 << 10)
    args = {"encode": (text, "latin1"), "bytearray": (text.encode(),), "array": (np.ndarray, (0,), b"b")}[
        what
    ]
    fn = {"encode": codecs.encode, "bytearray": bytearray, "array": _reconstruct}[what]
    state = (1, (len(text),), np.dtype("u1"), False, text.encode()) if what == "array" else None
    f = write_batch(tmp_path, {b"data": [Reduce(fn, args, state) for _ in range(64)]}, 4)
    assert f.stat().st_size < 300 << 10
    with pytest.raises(
        DatasetError,
        match=r"test_batch: a CIFAR batch declaring 1,310,720 "
        r"bytes \(.*\) is over the cap of 1,048,576 bytes",
    ):
        read_cifar_batch(f)


def test_declared_lengths_and_opcode_counts_are_checked_before_unpickling(tmp_path, monkeypatch):
    bomb = b"\x80\x05\x96" + (40 << 30).to_bytes(8, "little") + b"abc."  # BYTEARRAY8 of 40 GiB
    with pytest.raises(
        DatasetError,
        match=r"not a CIFAR-10 python batch \(ValueError: expected "
        r"42949672960 bytes in a bytearray8, but only 4 "
        r"remain\)",
    ):
        read_cifar_batch(write_batch(tmp_path, bomb))
    monkeypatch.setattr(datasets, "MAX_PICKLE_OPCODES", 1000)
    assert len(read_cifar_batch(write_batch(tmp_path, cifar_batch(np.random.default_rng(1), 9))))
    many = {b"data": np.zeros((2000, 3072), np.uint8), b"labels": [1] * 2000}
    with pytest.raises(DatasetError, match=r"a CIFAR batch of more than 1,000 pickle opcodes"):
        read_cifar_batch(write_batch(tmp_path, many))


@pytest.mark.parametrize(
    "labels, words",
    [
        ([1.0, 2.7], "'labels' must be a list of integers"),
        ([True, False], "'labels' must be a list of integers"),
        ([2**70, 1], "'labels' must be a list of integers"),
        ([1, [2]], "'labels' must be a list of integers"),
        ([1, -1], "label -1 is outside 0..9"),
        (np.array([1, 10], np.uint64), "label 10 is outside 0..9"),
        ([1, 2, 3], "3 labels for 2 images"),
        (np.array(3), "'labels' must be a list of integers, got an array of shape []"),
        ({1: 2}, "'labels' must be a list of integers, got dict"),
    ],
)
def test_cifar_labels_are_whole_numbers_one_per_image(tmp_path, labels, words):
    f = write_batch(tmp_path, {b"data": np.zeros((2, 3072), np.uint8), b"labels": labels}, 4)
    with pytest.raises(DatasetError, match=re.escape(words)):
        read_cifar_batch(f)


@pytest.mark.parametrize(
    "data, words",
    [
        (np.array([1, 2], dtype=object), "numpy dtype 'O8' is not a plain number type"),
        (np.zeros(2, dtype=[("a", "u1")]), "numpy dtype 'V1' is not a plain number type"),
        ([[0] * 3072], "'data' must be uint8 [N, 3072], got list"),
        (np.zeros((1, 3072), np.int16), "'data' must be uint8 [N, 3072], got int16 [1, 3072]"),
    ],
)
def test_cifar_data_is_a_plain_uint8_array(tmp_path, data, words):
    f = write_batch(tmp_path, {b"data": data, b"labels": [1]}, 2)
    with pytest.raises(DatasetError, match=re.escape(words)):
        read_cifar_batch(f)


def test_odd_batch_keys_are_named_not_a_crash(tmp_path):
    with pytest.raises(DatasetError, match=r"no 'labels' entry \(keys: '3', 'data', 'ÿ'\)"):
        read_cifar_batch(write_batch(tmp_path, {b"data": 1, b"\xff": 2, 3: 4}))


@hyp_seed(HYPOTHESIS_SEED + 1)
@settings(max_examples=200, deadline=None)
@given(
    protocol=st.integers(2, 5),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_a_damaged_batch_is_a_dataset_error_or_a_valid_batch(protocol, edits, cut):
    """Any bytes of a real batch changed or cut: DatasetError or a valid dataset, within the
    cap (here 64 KiB), never another exception."""
    raw = bytearray(pickle.dumps(cifar_batch(np.random.default_rng(SEED), 2), protocol=protocol))
    for pos, byte in edits:
        raw[pos % len(raw)] = byte
    if cut is not None:
        raw = raw[: cut % len(raw)]
    path = _scratch("data_batch_1", bytes(raw))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets, "MAX_DATA_BYTES", 64 << 10)
        try:
            ds = read_cifar_batch(path)
        except DatasetError:
            return
    assert ds.images.shape[1:] == (3, 32, 32) and ds.images.dtype == np.uint8
    assert ds.labels.dtype == np.int64 and ds.labels.min() >= 0 and ds.labels.max() <= 9


# ---------------------------------------------------------------------------------------------
# 5. CSV: ASCII digits only, one label column, csv errors named by line
# ---------------------------------------------------------------------------------------------
HEADER = "p0,p1,p2,p3,label"
PLAIN = re.compile(r" *[0-9]{1,6} *")


def test_csv_errors_of_the_csv_module_name_the_line(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text(f"{HEADER}\n1,2,3,4,5\n1,{'7' * 200_000},3,4,5\n")
    with pytest.raises(
        DatasetError,
        match=r"d.csv: line 3: not valid CSV \(field larger than "
        r"field limit \(131072\)\)",
    ):
        read_hepbnn_csv(f)
    f.write_text(f"{HEADER}\n1,2,3,4,5\n1,2\x00,3,4,5\n")
    with pytest.raises(DatasetError, match=r"line 3, column 'p1': '2\\x00' is not a plain"):
        read_hepbnn_csv(f)
    f.write_bytes(f"{HEADER}\n1,2,3,4,5\n\n1,\xff,3,4,5\n".encode("latin-1"))
    with pytest.raises(
        DatasetError,
        match=r"d.csv: line 4: not UTF-8 text \(invalid start byte "
        r"at byte 3\)",
    ):
        read_hepbnn_csv(f)
    f.write_text(f"{HEADER}\n1,2,3,4,5\n\n\n1,2,x,4,5\n")  # blank lines count
    with pytest.raises(DatasetError, match=r"line 5, column 'p2': 'x' is not a plain"):
        read_hepbnn_csv(f)
    f.write_text(f"{HEADER}\n1,2,3,4,12\n")
    with pytest.raises(DatasetError, match=r"line 2, column 'label': label 12 is outside 0..9"):
        read_hepbnn_csv(f)
    f.write_text(f'{HEADER}\n1,2,3,4,5\n1,"2\n3",3,4,5\n')
    with pytest.raises(DatasetError, match=r"line 4, column 'p1': '2\\n3' is not a plain"):
        read_hepbnn_csv(f)
    long_name = "p" * 500
    f.write_text(f"p0,{long_name},p2,p3,label\n1,x,3,4,5\n")
    with pytest.raises(DatasetError, match=r"column 'ppppp.*\.\.\. \(500 characters\): 'x'"):
        read_hepbnn_csv(f)


@pytest.mark.parametrize(
    "header, words",
    [
        (
            "p0,label,p1,p2,label",
            "line 1: the header has 2 'label' columns (columns 2 and 5); it needs exactly one",
        ),
        ("p0,p1,,p3,label", "line 1, column 3: empty column name in the header"),
        ("p0,p1,p2,p3,label,", "line 1, column 6: empty column name in the header"),
        ("p0,p1,p1 ,p3,label", "line 1: column name 'p1' appears twice (columns 2 and 3)"),
        ("p0,p1,p2,p3,Label", "no 'label' column in the header 'p0', 'p1', 'p2', 'p3', 'Label'"),
    ],
)
def test_csv_header_needs_one_label_and_distinct_names(tmp_path, header, words):
    f = tmp_path / "d.csv"
    f.write_text(f"{header}\n" + ",".join(["1"] * len(header.split(","))) + "\n")
    with pytest.raises(DatasetError, match=re.escape(f"{f}: {words}")):
        read_hepbnn_csv(f)


def test_csv_with_a_byte_order_mark_and_crlf_lines(tmp_path):
    f = tmp_path / "d.csv"
    f.write_bytes(b"\xef\xbb\xbf" + f"{HEADER}\r\n1,2,3,4,5\r\n\r\n6,7,8,9,0\r\n".encode())
    ds = read_hepbnn_csv(f)
    assert ds.images.reshape(2, -1).tolist() == [[1, 2, 3, 4], [6, 7, 8, 9]]
    assert ds.labels.tolist() == [5, 0]
    (tmp_path / "g.csv.gz").write_bytes(gzip.compress(f.read_bytes()))
    assert load_dataset(tmp_path / "g.csv.gz", "all").labels.tolist() == [5, 0]


_GOOD_ROWS = [["1", "2", "3", "4", "5"], ["6", "7", "8", "9", "0"], ["0", "0", "0", "0", "0"]]
_TRICKY = [
    "",
    " ",
    "1_0",
    "\u0663",
    "\uff15",
    "+5",
    "-0",
    "5.",
    ".5",
    "5e0",
    "0x5",
    "\t5",
    "5\t",
    "\u00a05",
    "5\u2003",
    "1234567",
    "00000001",
    "nan",
    "inf",
    "1 2",
    "١٢",
    "\U0001d7d3",
    "²",
    "5,5",
    '"5"',
    "5\x00",
    "\x0b5",
    "5\x0c",
]


@hyp_seed(HYPOTHESIS_SEED + 2)
@settings(max_examples=300, deadline=None)
@given(
    cell=st.one_of(
        st.sampled_from(_TRICKY),
        st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=10),
        st.builds(
            lambda pre, digits, post: pre + digits + post,
            st.sampled_from(["", " ", "+", "-", "\t", "_", "\u0660", "0x", "\u00a0"]),
            st.text("0123456789", min_size=1, max_size=9),
            st.sampled_from(["", " ", ".0", "e0", "_0", "\t", ".", "\u2003", "L", "j"]),
        ),
    ).filter(lambda c: not PLAIN.fullmatch(c)),
    row=st.integers(0, 2),
    col=st.integers(0, 4),
)
def test_csv_cells_other_than_plain_ascii_digits_are_refused_by_line_and_column(cell, row, col):
    rows = [list(r) for r in _GOOD_ROWS]
    rows[row][col] = cell
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER.split(","))
    writer.writerows(rows)
    path = _scratch("cells.csv", out.getvalue().encode("utf-8"))
    name = HEADER.split(",")[col]
    with pytest.raises(DatasetError, match=re.escape(f"{path}: line {row + 2}, column {name!r}: ")):
        read_hepbnn_csv(path)


@hyp_seed(HYPOTHESIS_SEED + 3)
@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(st.integers(0, 255), min_size=4, max_size=4), st.integers(0, 9)),
        min_size=1,
        max_size=6,
    ),
    styles=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 2)), min_size=30, max_size=30
    ),
)
def test_csv_plain_digit_cells_parse_to_their_value(rows, styles):
    """Leading zeros (up to 6 digits) and surrounding spaces: always the same integer."""

    def cell(v, i):
        zeros, left, right = styles[i % len(styles)]
        digits = str(v).rjust(min(6, len(str(v)) + zeros), "0")
        return " " * left + digits + " " * right

    lines = [HEADER] + [
        ",".join(cell(v, 5 * r + c) for c, v in enumerate(pix + [lab])) for r, (pix, lab) in enumerate(rows)
    ]
    path = _scratch("plain.csv", ("\n".join(lines) + "\n").encode())
    ds = read_hepbnn_csv(path)
    assert ds.images.reshape(len(rows), -1).tolist() == [list(p) for p, _ in rows]
    assert ds.labels.tolist() == [lab for _, lab in rows]


# ---------------------------------------------------------------------------------------------
# Through a command: exit status 2, one line
# ---------------------------------------------------------------------------------------------
def test_a_command_given_a_fifo_or_a_bomb_exits_2_with_one_line(tmp_path, capsys):
    from tests.test_bad_input import SAC, one_line
    from workbench.commands import compare

    os.mkfifo(tmp_path / "pipe")
    write_batch(tmp_path, {b"data": Reduce(bytearray, (48_000_000_000,))})
    for data, words in (
        (tmp_path / "pipe", "pipe: is a named pipe, not a regular file"),
        (tmp_path / "test_batch", "bytearray(48000000000) would allocate"),
    ):
        with within(60):
            code = compare.main(
                ["--model", SAC, "--images", "2", "--data", str(data), "--out", str(tmp_path / "out")]
            )
        line = one_line(capsys.readouterr().err)
        assert code == 2 and words in line, line
        assert not (tmp_path / "out").exists()


_SCRATCH: dict = {}


def _scratch(name: str, raw: bytes) -> Path:
    """A file in one temporary directory per process (hypothesis examples share it)."""
    import tempfile

    if "dir" not in _SCRATCH:
        _SCRATCH["dir"] = tempfile.TemporaryDirectory(prefix="datasets-bad-files-")
    path = Path(_SCRATCH["dir"].name) / name
    path.write_bytes(raw)
    return path
