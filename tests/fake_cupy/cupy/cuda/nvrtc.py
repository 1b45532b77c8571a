"""cupy.cuda.nvrtc, faked."""

from cupy._fake import NVRTC_MISSING, mode


class NVRTCError(RuntimeError):
    pass


def getVersion():
    if mode() == "no_nvrtc":
        raise RuntimeError(NVRTC_MISSING)
    return (13, 0)
