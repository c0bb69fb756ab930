#!/usr/bin/python3
"""Kit self-test: the reference's to_bf16 (Part 16.1) rounds every float as PyTorch does
(x.to(torch.bfloat16) on the CPU), bit for bit: 2^20 random bit patterns, every exact tie and its
two neighbours for every exponent, the subnormals' ties, the largest floats, zeros and the
infinities. NaNs are compared apart: PyTorch's vectorised conversion writes 0xFFFF, the kit's
contract 0x7FC0; both must be NaNs.

usage: check_bf16_torch.py BF16_DUMP [--wrong truncate|ties_up]
With --wrong the dump rounds with that known mistake, and this test passes only if it sees the
mismatch (the comparison can fail)."""
import subprocess
import sys

import numpy as np
import torch


def floats():
    """The 32-bit patterns to round, as uint32."""
    rng = np.random.default_rng(20261206)
    random = rng.integers(0, 2**32, size=2**20, dtype=np.uint64).astype(np.uint32)
    highs = np.arange(0, 2**16, dtype=np.uint32) << 16  # every sign, exponent, kept mantissa
    ties = np.concatenate([highs | 0x8000, highs | 0x7FFF, highs | 0x8001, highs])
    specials = np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0, 0x80000000,
                         0x7F800001, 0xFFC00000, 0x7FFFFFFF], dtype=np.uint32)
    return np.concatenate([random, ties, specials])


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--wrong"):
        sys.exit(__doc__)
    bits = floats()
    dump = subprocess.run([sys.argv[1], *sys.argv[2:]], input=bits.tobytes(),
                          stdout=subprocess.PIPE, check=True).stdout
    ours = np.frombuffer(dump, dtype=np.uint16)
    theirs = (torch.from_numpy(bits.view(np.float32).copy()).to(torch.bfloat16)
              .view(torch.int16).numpy().view(np.uint16))
    if ours.size != bits.size:
        sys.exit(f"FAIL: {bits.size} floats in, {ours.size} bf16 out")
    nan = np.isnan(bits.view(np.float32))
    wrong_nan = np.count_nonzero(ours[nan] != 0x7FC0)
    differ = np.flatnonzero((ours != theirs) & ~nan)
    seen = f"{bits.size} floats ({np.count_nonzero(nan)} NaNs)"
    if len(sys.argv) == 4:
        if differ.size == 0 and wrong_nan == 0:
            sys.exit(f"FAIL: --wrong {sys.argv[3]} rounds {seen} as PyTorch does: the check "
                     "cannot see that mistake")
        print(f"ok: --wrong {sys.argv[3]}: {differ.size} of {seen} differ from PyTorch "
              f"(first: {bits[differ[0]]:#010x} -> {ours[differ[0]]:#06x}, PyTorch "
              f"{theirs[differ[0]]:#06x})")
        return
    if differ.size or wrong_nan:
        first = (f"; first: {bits[differ[0]]:#010x} -> {ours[differ[0]]:#06x}, PyTorch "
                 f"{theirs[differ[0]]:#06x}" if differ.size else "")
        sys.exit(f"FAIL: {differ.size} of {seen} round otherwise than PyTorch, {wrong_nan} NaNs "
                 f"are not 0x7FC0{first}")
    print(f"ok: to_bf16 rounds {seen} as PyTorch's x.to(torch.bfloat16) does, bit for bit; "
          "every NaN is 0x7FC0")


main()
