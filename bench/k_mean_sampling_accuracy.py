"""Would a sampled K mean keep attention's accuracy? (issue 23, docs/NVIDIA.md "Next, by these runs")

Softmax is blind to any vector subtracted from every key, so the smoothing mean of docs/NUMERICS.md
could come from a fixed sample of K (the stats launch would then read a fraction of K). The mean only
changes how well K is centred before its int8 quantization, so this compares, in fp64 on the CPU,
attention with K quantized after subtracting (a) nothing, (b) the full mean, (c) the mean of every
`--every`-th 64-token chunk and (d) the mean of every `--every`-th token, against exact attention:
1 - cos and max |error| of the output. Keys: N(0, 1) plus a per-channel bias (`--bias` times N(0, 1)),
optionally rotated by RoPE (base 10000) as real models' keys are. (d) with --every 8 is what the contract
adopted (SJ_K_MEAN_STRIDE in kernel_src/common/constants.h; docs/NUMERICS.md "K mean"). The int8 step is the contract's
(per 32-key block, scale = amax / 127, round to nearest); Q and P stay exact, so the figures isolate K.

Run: python3 bench/k_mean_sampling_accuracy.py [--seed S] (prints the seed; the same seed replays).
"""
import argparse
import math
import random

import torch


def quantize_dequantize_k(k: torch.Tensor, block: int = 32) -> torch.Tensor:
    n, d = k.shape
    blocks = k.view(n // block, block, d)
    scale = blocks.abs().amax(dim=(1, 2), keepdim=True) / 127
    return (torch.round(blocks / scale).clamp(-127, 127) * scale).view(n, d)


def rope(x: torch.Tensor) -> torch.Tensor:
    n, d = x.shape
    angle = torch.arange(n, dtype=x.dtype)[:, None] * 10000 ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    cos, sin = torch.cos(angle), torch.sin(angle)
    even, odd = x[:, 0::2], x[:, 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).reshape(n, d)


def attention(q, k, v):
    return torch.softmax(q @ k.T / math.sqrt(q.shape[1]), -1) @ v


def errors(q, k, v, exact, mean):
    out = attention(q, quantize_dequantize_k(k - mean), v)
    cos = torch.nn.functional.cosine_similarity(out.flatten(), exact.flatten(), 0).item()
    return 1 - cos, (out - exact).abs().max().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=random.randrange(2**31))
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--every", type=int, default=8, help="sample one 64-token chunk (or token) in this many")
    parser.add_argument("--draws", type=int, default=3)
    args = parser.parse_args()
    print(f"seed {args.seed} (--seed {args.seed} replays it)")
    generator = torch.Generator().manual_seed(args.seed)
    n, d = args.tokens, args.head_dim

    def normal(*shape):
        return torch.randn(*shape, dtype=torch.float64, generator=generator)

    print("| bias | RoPE | draw | 1-cos none | 1-cos full mean | 1-cos chunk sample | 1-cos token sample |"
          " max err full | max err chunk sample |")
    print("|---|---|---|---|---|---|---|---|---|")
    for bias in (0.5, 3.0, 10.0):
        for with_rope in (False, True):
            for draw in range(args.draws):
                q, v = normal(n, d), normal(n, d)
                k = normal(n, d) + bias * normal(d)
                if with_rope:
                    q, k = rope(q), rope(k)
                chunks = k.view(n // 64, 64, d)[:: args.every].reshape(-1, d)
                means = [torch.zeros(d, dtype=torch.float64), k.mean(0), chunks.mean(0), k[:: args.every].mean(0)]
                exact = attention(q, k, v)
                results = [errors(q, k, v, exact, m) for m in means]
                print(f"| {bias} | {'yes' if with_rope else 'no'} | {draw} | "
                      + " | ".join(f"{r[0]:.3e}" for r in results)
                      + f" | {results[1][1]:.4f} | {results[2][1]:.4f} |")


if __name__ == "__main__":
    main()
