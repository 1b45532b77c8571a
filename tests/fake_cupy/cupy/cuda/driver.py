"""cupy.cuda.driver, faked: the exception of a failed launch."""


class CUDADriverError(RuntimeError):
    pass
