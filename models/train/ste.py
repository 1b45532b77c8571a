"""Straight-through estimators shared by the quantization-aware models (BNN, SAC CNN and the
co-design search's super networks): the forward pass is the hardware's exact quantizer, the
backward pass lets the gradient through (unchanged, or clipped for the sign)."""

from __future__ import annotations

import torch

from models.numerics.sac import EMAX, EMIN


class _IdentityGradient(torch.autograd.Function):
    """Base: subclasses define `quantize`; the gradient passes unchanged."""

    @staticmethod
    def quantize(x: torch.Tensor) -> torch.Tensor:
        raise TypeError("subclasses define quantize")

    @classmethod
    def forward(cls, ctx, x):
        return cls.quantize(x)

    @staticmethod
    def backward(ctx, g):
        return g


class RoundSTE(_IdentityGradient):
    """torch.round (half to even) with an identity gradient."""

    quantize = staticmethod(torch.round)


class FloorSTE(_IdentityGradient):
    """torch.floor with an identity gradient (the ReLU & quantize block drops fraction bits)."""

    quantize = staticmethod(torch.floor)


class Pow2STE(_IdentityGradient):
    """Zero or +-2^e, e = floor(log2|w| + 1/2) clipped to the window (saturating above, zero
    below), as models.numerics.sac.quantize_pow2; identity gradient."""

    @staticmethod
    def quantize(w):
        mag = w.abs()
        e = torch.floor(torch.log2(mag.clamp_min(1e-30)) + 0.5)
        q = torch.sign(w) * torch.exp2(e.clamp(EMIN, EMAX))
        return torch.where((e < EMIN) | (mag == 0), torch.zeros_like(w), q)


class SignSTE(torch.autograd.Function):
    """sign with sign(0) = +1; gradient passes where |x| <= 1 (hardtanh)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)
