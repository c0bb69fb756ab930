"""The kit's GPT (starter/include/dtk/gpt/gpt.hpp) in PyTorch: the oracle of the kit test
check_oracle.py and the opponent of bench/gpt_benchmark.sh.

Parameters are named and shaped as the kit names and shapes its own: a weight is (in, out) and
multiplies from the right (y = x @ W + b), a bias or a LayerNorm's weight is (1, n). So the kit's
parameters load into state_dict() one to one.
Runs with Debian's /usr/bin/python3 (package python3-torch).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class Linear(nn.Module):
    """y = x @ weight (+ bias); weight (n_in, n_out), bias (1, n_out)."""

    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.bias = nn.Parameter(torch.zeros(1, n_out)) if bias else None

    def forward(self, x):
        y = x @ self.weight
        return y if self.bias is None else y + self.bias


class LayerNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, width))
        self.bias = nn.Parameter(torch.zeros(1, width))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight.view(-1), self.bias.view(-1), self.eps)


class Mlp(nn.Module):
    def __init__(self, hidden, gelu):
        super().__init__()
        self.fc1 = Linear(hidden, 4 * hidden)
        self.fc2 = Linear(4 * hidden, hidden)
        self.gelu = gelu

    def forward(self, x):
        return self.fc2(self.gelu(self.fc1(x)))


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.qkv = Linear(hidden, 3 * hidden)
        self.proj = Linear(hidden, hidden)
        self.heads = heads

    def forward(self, x, positions):
        batch, seq, hidden = x.shape
        d = hidden // self.heads
        # Columns [Q | K | V], head j's d columns [j d, (j + 1) d) inside each.
        q, k, v = self.qkv(x).split(hidden, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, d).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        hidden_key = positions.view(1, -1) > positions.view(-1, 1)  # key after the query
        scores = scores.masked_fill(hidden_key, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, hidden))


class MixtureOfExperts(nn.Module):
    def __init__(self, hidden, experts, top_k, aux_coef, gelu):
        super().__init__()
        self.router = Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(Mlp(hidden, gelu) for _ in range(experts))
        self.top_k, self.aux_coef = top_k, aux_coef
        self.aux_loss = None

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = self.router(x).softmax(dim=-1)
        # The k most probable, ties to the lower id: a stable descending sort.
        ids = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, : self.top_k]
        chosen = probs.gather(1, ids)
        gates = chosen / chosen.sum(dim=-1, keepdim=True)
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, choice = (ids == e).nonzero(as_tuple=True)
            if token.numel():
                y.index_add_(0, token, gates[token, choice].unsqueeze(1) * expert(x[token]))
        experts = len(self.experts)
        share = torch.bincount(ids.reshape(-1), minlength=experts).to(x.dtype) / ids.numel()
        self.aux_loss = self.aux_coef * experts * (share * probs.mean(dim=0)).sum()
        return y.view(shape)


class Block(nn.Module):
    def __init__(self, c, gelu):
        super().__init__()
        self.ln1 = LayerNorm(c["hidden"], c["layer_norm_eps"])
        self.attn = Attention(c["hidden"], c["heads"])
        self.ln2 = LayerNorm(c["hidden"], c["layer_norm_eps"])
        if c["experts"]:
            self.moe = MixtureOfExperts(c["hidden"], c["experts"], c["top_k"], c["aux_loss_coef"],
                                        gelu)
        else:
            self.mlp = Mlp(c["hidden"], gelu)

    def forward(self, x, positions):
        x = x + self.attn(self.ln1(x), positions)
        return x + (self.moe if hasattr(self, "moe") else self.mlp)(self.ln2(x))


class Gpt(nn.Module):
    """config: the kit's GptConfig as a dict (vocab_size, seq_len, layers, hidden, heads, experts,
    top_k, aux_loss_coef, layer_norm_eps). gelu: GPT-2's tanh form unless told otherwise."""

    def __init__(self, config, gelu=lambda u: F.gelu(u, approximate="tanh")):
        super().__init__()
        c = config
        self.wte = nn.Embedding(c["vocab_size"], c["hidden"])
        self.wpe = nn.Embedding(c["seq_len"], c["hidden"])
        self.blocks = nn.ModuleList(Block(c, gelu) for _ in range(c["layers"]))
        self.ln_f = LayerNorm(c["hidden"], c["layer_norm_eps"])
        self.lm_head = Linear(c["hidden"], c["vocab_size"], bias=False)

    def forward(self, tokens, positions):
        """tokens (batch, seq) at positions (seq) -> logits (batch, seq, vocab)."""
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.blocks:
            x = block(x, positions)
        return self.lm_head(self.ln_f(x))

    def loss(self, tokens, positions, targets):
        """Mean cross-entropy of the next tokens plus the blocks' load-balancing losses; and the
        logits."""
        logits = self(tokens, positions)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        for block in self.blocks:
            if hasattr(block, "moe"):
                loss = loss + block.moe.aux_loss
        return loss, logits
