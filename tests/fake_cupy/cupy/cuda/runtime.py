"""cupy.cuda.runtime, faked: versions, device count and properties per FAKE_CUPY_MODE."""

from cupy._fake import mode

_MESSAGES = {
    35: "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
    100: "cudaErrorNoDevice: no CUDA-capable device is detected",
}


class CUDARuntimeError(RuntimeError):
    def __init__(self, status):
        self.status = status
        super().__init__(_MESSAGES.get(status, f"cudaError {status}"))


def driverGetVersion():
    return 12040 if mode() == "old_driver" else 13000


def runtimeGetVersion():
    return 13000


def getDeviceCount():
    if mode() == "old_driver":
        raise CUDARuntimeError(35)
    if mode() == "no_device":
        raise CUDARuntimeError(100)
    return 1


def getDevice():
    return 0


def getDeviceProperties(device):
    return {
        "name": b"NVIDIA H200 (fake: the CPU emulation)",
        "major": 9,
        "minor": 0,
        "totalGlobalMem": 141 * 2**30,
        "multiProcessorCount": 132,
        "regsPerBlock": 65536,
        "maxThreadsPerBlock": 1024,
    }
