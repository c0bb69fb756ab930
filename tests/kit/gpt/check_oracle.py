#!/usr/bin/python3
"""The kit's GPT against PyTorch (Debian's python3-torch), the kit test kit_gpt_pytorch_oracle.

For GPT-2's block (dense and a mixture of experts) and a Llama's (grouped-query, multi-query,
and a mixture of experts), in float and in double, kit_gpt_pytorch_oracle_case runs one batch
through the kit's model with random weights and writes the weights, the batch, the logits, the
loss and every parameter's gradient; this script loads the same weights into torch_gpt.Gpt (the
kit's shapes; the constants are the oracle's own: the norms' eps 1e-5, GPT-2's and Llama 2's,
GELU's tanh form, rotary base 10000 on pairs (i, i + d/2)), runs the same batch in float64 and
compares. Each tensor's error is max |kit - torch| / max |torch|; it must be at most 1e-9 in
double and 1e-4 in float.

usage: check_oracle.py CASE_PROGRAM          all ten cases must agree
       check_oracle.py CASE_PROGRAM --wrong eps|gelu|rope|rms_eps   negative control:
           PyTorch's model built with LayerNorm's eps 1e-6 (not 1e-5) or GELU's erf form (not
           tanh), on GPT-2's dense block; with rotary pairs (2i, 2i + 1) (not (i, i + d/2)) or
           RMSNorm's eps 1e-6, on the grouped-query Llama; the kit must be found to DISAGREE
           with it (exit 0 when it is, 1 when the comparison misses it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt  # noqa: E402

TOLERANCE = {"double": 1e-9, "float": 1e-4}
# The norms' epsilon (GPT-2's LayerNorm's, PyTorch's default; Llama 2's RMSNorm's) and a Llama's
# rotary base. The oracle sets them itself: the kit's case reports its config, and taking the
# kit's constants from there would hide a wrong one.
NORM_EPS = 1e-5
ROPE_THETA = 10000.0
# (name, arch, kv_heads, experts, top_k); the model has 4 heads.
CASES = [("dense", "gpt2", 0, 0, 1), ("moe", "gpt2", 0, 4, 2), ("llama", "llama", 2, 0, 1),
         ("llama-mqa", "llama", 1, 0, 1), ("llama-moe", "llama", 4, 4, 2)]
# Each negative control: its words, and the case its wrong PyTorch model runs.
WRONG = {"eps": ("LayerNorm eps 1e-6", CASES[0]), "gelu": ("GELU erf form", CASES[0]),
         "rope": ("rotary pairs (2i, 2i + 1)", CASES[2]), "rms_eps": ("RMSNorm eps 1e-6", CASES[2])}


def kit_case(program, dtype, arch, kv_heads, experts, top_k):
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "case.json")
        subprocess.run([program, dtype, arch, str(kv_heads), str(experts), str(top_k), path],
                       check=True)
        with open(path) as f:
            return json.load(f)


def torch_results(case, wrong=None):
    """The loss, logits and gradients of PyTorch's model on the kit's weights and batch: the
    kit's shapes, the oracle's constants."""
    config = dict(case["config"], layer_norm_eps=NORM_EPS, rope_theta=ROPE_THETA)
    gelu = lambda u: F.gelu(u, approximate="tanh")  # noqa: E731
    pairs = "half"
    if wrong in ("eps", "rms_eps"):
        config["layer_norm_eps"] = 1e-6
    elif wrong == "gelu":
        gelu = lambda u: F.gelu(u)  # noqa: E731  (the erf form)
    elif wrong == "rope":
        pairs = "interleaved"
    model = torch_gpt.Gpt(config, gelu, pairs).double()
    params = case["parameters"]
    state = model.state_dict()
    if set(state) != set(params):
        raise SystemExit("parameter names differ: only in PyTorch's %s, only in the kit's %s" %
                         (sorted(set(state) - set(params)), sorted(set(params) - set(state))))
    model.load_state_dict({name: torch.tensor(p["value"], dtype=torch.float64).view(*state[name].shape)
                           for name, p in params.items()})
    batch, positions = case["batch"], torch.tensor(case["positions"])
    tokens = torch.tensor(case["tokens"]).view(batch, -1)
    targets = torch.tensor(case["targets"]).view(batch, -1)
    loss, logits = model.loss(tokens, positions, targets)
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    return loss.item(), logits.detach(), grads


def relative_error(kit, reference):
    kit = torch.tensor(kit, dtype=torch.float64).view(reference.shape)
    scale = reference.abs().max().item()
    return (kit - reference).abs().max().item() / (scale if scale > 0 else 1.0)


def compare(case, wrong=None):
    """Every compared tensor's relative error, worst first."""
    loss, logits, grads = torch_results(case, wrong)
    errors = [("loss", abs(case["loss"] - loss) / abs(loss)),
              ("logits", relative_error(case["logits"], logits))]
    errors += [("grad " + name, relative_error(p["grad"], grads[name]))
               for name, p in case["parameters"].items()]
    return sorted(errors, key=lambda e: -e[1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("program")
    parser.add_argument("--wrong", choices=sorted(WRONG))
    args = parser.parse_args()

    if args.wrong:
        # The double model against a wrong PyTorch model: the kit must disagree.
        words, (_, arch, kv_heads, experts, top_k) = WRONG[args.wrong]
        errors = compare(kit_case(args.program, "double", arch, kv_heads, experts, top_k),
                         args.wrong)
        name, worst = errors[0]
        caught = worst > TOLERANCE["double"]
        print("negative control (%s): worst %s relative error %.3g: %s" %
              (words, name, worst,
               "caught" if caught else "NOT CAUGHT: the comparison cannot see this mistake"))
        return 0 if caught else 1

    failed = False
    for name, arch, kv_heads, experts, top_k in CASES:
        for dtype in ("double", "float"):
            errors = compare(kit_case(args.program, dtype, arch, kv_heads, experts, top_k))
            bad = [e for e in errors if e[1] > TOLERANCE[dtype]]
            worst_name, worst = errors[0]
            print("%-9s %-6s %3d tensors, worst relative error %.2e (%s), tolerance %.0e: %s" %
                  (name, dtype, len(errors), worst, worst_name, TOLERANCE[dtype],
                   "ok" if not bad else "MISMATCH"))
            for tensor, error in bad:
                print("    %s: relative error %.3g" % (tensor, error))
            failed |= bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
