"""cupy.cuda.compiler, faked: the exception CuPy raises for a source NVRTC rejects."""


class CompileException(Exception):
    pass
