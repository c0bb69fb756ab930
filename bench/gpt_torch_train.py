#!/usr/bin/python3
"""PyTorch's side of bench/gpt_benchmark.sh: trains the kit's GPT (tests/kit/gpt/torch_gpt.py, the
same model as the kit's oracle) with the shape, batch, optimizer and threads gpt_train used, on
random tokens (the speed does not depend on the text), and prints one JSON line:
{"tokens_per_second": ..., "seconds": ..., "steps": ...}, timed over the steps after the first
(which pays for first touches of memory), as the benchmark times gpt_train.

usage: gpt_torch_train.py --layers L --hidden H --heads A --seq T --vocab V --batch_size B
                          --steps S --threads N [--experts E --top_k K]
                          [--arch llama --kv_heads KV]
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kit", "gpt"))
import torch_gpt  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    for name in ("layers", "hidden", "heads", "seq", "vocab", "batch_size", "steps", "threads"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--experts", type=int, default=0)
    p.add_argument("--top_k", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--arch", choices=("gpt2", "llama"), default="gpt2")
    p.add_argument("--kv_heads", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    config = {"vocab_size": a.vocab, "seq_len": a.seq, "layers": a.layers, "hidden": a.hidden,
              "heads": a.heads, "experts": a.experts, "top_k": a.top_k, "aux_loss_coef": 0.01,
              "layer_norm_eps": 1e-5, "arch": a.arch, "kv_heads": a.kv_heads or a.heads}
    model = torch_gpt.Gpt(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr)
    positions = torch.arange(a.seq)
    start = None
    for step in range(a.steps):
        if step == 1:
            start = time.perf_counter()
        tokens = torch.randint(0, a.vocab, (a.batch_size, a.seq + 1))
        loss, _ = model.loss(tokens[:, :-1], positions, tokens[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - start
    timed_steps = a.steps - 1
    print(json.dumps({"tokens_per_second": timed_steps * a.batch_size * a.seq / seconds,
                      "seconds": seconds, "steps": timed_steps}))


if __name__ == "__main__":
    main()
