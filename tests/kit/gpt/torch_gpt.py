"""The kit's GPT (starter/include/dtk/gpt/gpt.hpp) in PyTorch, GPT-2's block and a Llama's: the
oracle of the kit test check_oracle.py and the opponent of bench/gpt_benchmark.sh.

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


class RMSNorm(nn.Module):
    """A Llama's norm: x / sqrt(mean(x^2) + eps) * weight; weight (1, width)."""

    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, width))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def norm(c):
    """The block's norm: a Llama's RMSNorm or GPT-2's LayerNorm."""
    cls = RMSNorm if c["arch"] == "llama" else LayerNorm
    return cls(c["hidden"], c["layer_norm_eps"])


def mlp_width(c):
    """The MLP's hidden width f: GPT-2's 4h, a Llama's 8h/3 rounded up to a multiple of 64."""
    return (8 * c["hidden"] // 3 + 63) // 64 * 64 if c["arch"] == "llama" else 4 * c["hidden"]


def rotate(x, positions, theta, pairs="half"):
    """Rotary positions on x (batch, heads, seq, d): pairs (i, i + d/2) turned by
    position * theta^(-2i/d). pairs="interleaved" turns (2i, 2i + 1) instead: Meta's original
    layout, a different model (the negative control's)."""
    d = x.shape[-1]
    angles = positions.to(x.dtype).view(-1, 1) * theta ** (
        -torch.arange(0, d, 2, dtype=x.dtype) / d)  # (seq, d/2)
    cos, sin = angles.cos(), angles.sin()
    if pairs == "interleaved":
        first, second = x[..., 0::2], x[..., 1::2]
        return torch.stack((first * cos - second * sin, second * cos + first * sin),
                           dim=-1).flatten(-2)
    first, second = x[..., : d // 2], x[..., d // 2:]
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


class Mlp(nn.Module):
    def __init__(self, hidden, gelu):
        super().__init__()
        self.fc1 = Linear(hidden, 4 * hidden)
        self.fc2 = Linear(4 * hidden, hidden)
        self.gelu = gelu

    def forward(self, x):
        return self.fc2(self.gelu(self.fc1(x)))


class SwiGluMlp(nn.Module):
    """A Llama's MLP: fc1 = [W_gate | W_up] (h, 2f), fc2 (f, h), no biases."""

    def __init__(self, hidden, width):
        super().__init__()
        self.fc1 = Linear(hidden, 2 * width, bias=False)
        self.fc2 = Linear(width, hidden, bias=False)

    def forward(self, x):
        gate, up = self.fc1(x).chunk(2, dim=-1)
        return self.fc2(F.silu(gate) * up)


def make_mlp(c, gelu):
    return SwiGluMlp(c["hidden"], mlp_width(c)) if c["arch"] == "llama" else Mlp(c["hidden"], gelu)


class Attention(nn.Module):
    """GPT-2's (biases, every head its own keys) or a Llama's: no biases, kv key/value heads
    (query head j reads head j // (a / kv)), q and k turned by rotary positions."""

    def __init__(self, c, pairs="half"):
        super().__init__()
        hidden, self.heads = c["hidden"], c["heads"]
        self.llama = c["arch"] == "llama"
        self.kv_heads = c["kv_heads"] if self.llama else self.heads
        self.theta, self.pairs = c.get("rope_theta", 10000.0), pairs
        d = hidden // self.heads
        self.qkv = Linear(hidden, (self.heads + 2 * self.kv_heads) * d, bias=not self.llama)
        self.proj = Linear(hidden, hidden, bias=not self.llama)

    def forward(self, x, positions):
        batch, seq, hidden = x.shape
        d = hidden // self.heads
        # Columns [Q | K | V], head j's d columns [j d, (j + 1) d) inside each.
        q, k, v = self.qkv(x).split([self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1)
        q = q.view(batch, seq, self.heads, d).transpose(1, 2)
        k, v = (t.view(batch, seq, self.kv_heads, d).transpose(1, 2) for t in (k, v))
        if self.llama:
            q, k = (rotate(t, positions, self.theta, self.pairs) for t in (q, k))
            group = self.heads // self.kv_heads
            k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        hidden_key = positions.view(1, -1) > positions.view(-1, 1)  # key after the query
        scores = scores.masked_fill(hidden_key, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, hidden))


class MixtureOfExperts(nn.Module):
    def __init__(self, c, gelu):
        super().__init__()
        hidden, experts = c["hidden"], c["experts"]
        self.router = Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(make_mlp(c, gelu) for _ in range(experts))
        top_k, aux_coef = c["top_k"], c["aux_loss_coef"]
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
    def __init__(self, c, gelu, pairs):
        super().__init__()
        self.ln1 = norm(c)
        self.attn = Attention(c, pairs)
        self.ln2 = norm(c)
        if c["experts"]:
            self.moe = MixtureOfExperts(c, gelu)
        else:
            self.mlp = make_mlp(c, gelu)

    def forward(self, x, positions):
        x = x + self.attn(self.ln1(x), positions)
        return x + (self.moe if hasattr(self, "moe") else self.mlp)(self.ln2(x))


class Gpt(nn.Module):
    """config: the kit's GptConfig as a dict (arch "gpt2" or "llama", vocab_size, seq_len, layers,
    hidden, heads, kv_heads, rope_theta, experts, top_k, aux_loss_coef, layer_norm_eps). gelu:
    GPT-2's tanh form unless told otherwise; pairs: a Llama's rotary pairs, "half" (the kit's)
    unless told otherwise."""

    def __init__(self, config, gelu=lambda u: F.gelu(u, approximate="tanh"), pairs="half"):
        super().__init__()
        c = dict({"arch": "gpt2"}, **config)
        self.wte = nn.Embedding(c["vocab_size"], c["hidden"])
        if c["arch"] != "llama":  # a Llama's positions are its attention's rotary turns
            self.wpe = nn.Embedding(c["seq_len"], c["hidden"])
        self.blocks = nn.ModuleList(Block(c, gelu, pairs) for _ in range(c["layers"]))
        self.ln_f = norm(c)
        self.lm_head = Linear(c["hidden"], c["vocab_size"], bias=False)

    def forward(self, tokens, positions):
        """tokens (batch, seq) at positions (seq) -> logits (batch, seq, vocab)."""
        x = self.wte(tokens)
        if hasattr(self, "wpe"):
            x = x + self.wpe(positions)
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
