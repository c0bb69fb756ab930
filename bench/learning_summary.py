#!/usr/bin/env python3
"""A learning run's figures against its goals (bench/gpt_learning_run.sh,
bench/llama_learning_run.sh): its whole time (at most 10 minutes here), its speed and MFU, and
its validation loss against the text's bigram entropy.

usage: learning_summary.py REPORT.json START END [LABEL]     (START, END: seconds since the epoch)
"""
import json
import sys

report = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
label = sys.argv[4] + ": " if len(sys.argv) > 4 else ""
print(f"{label}Whole run: {wall:.0f} s ({wall / 60:.1f} min; goal: at most 10 min) "
      f"{'met' if wall <= 600 else 'NOT met'}")
print(f"{label}Training steps: {report['seconds']:.1f} s, {report['tokens_per_second']:.0f} "
      f"tokens/s, MFU {report['mfu']:.3f} of the GEMM peak "
      f"{report['gemm_peak_flops'] / 1e9:.1f} GFLOP/s")
print(f"{label}Validation loss {report['val_loss']:.4f} against the bigram entropy "
      f"{report['bigram_entropy']:.4f} nats per character "
      f"({'below' if report['val_loss'] < report['bigram_entropy'] else 'NOT below'})")
