#!/usr/bin/env python3
"""Kit self-test of gpt_train (assignment 3), run against the reference.

  layouts  dp = 1, 2, 3, 4 train the same model: the same weights_l2 (relative 1e-5) and final
           loss, for the dense model and a mixture of experts, in double and in float; and the
           ranks of dp > 1 do send their gradients.
  tensor   Part 10's layout: tp 1, 2, 4 x --sp or not x dp 1, 2 train the one-rank model (double,
           relative 1e-5); the tensor-parallel and data-parallel bytes of a step, and the
           activations a block keeps, are the analytic counts gpt_train prints, exactly.
  context  Part 11's: cp 1, 2, 4, contiguous and zig-zag, with tp and dp, train the one-rank
           model; the ring's bytes are the analytic count of its keys and values (their
           positions travel too: within 2 %), the other groups' bytes and the activations
           exactly.
  experts  Part 12's: ep 1, 2, 4 x top_k 1, 2 (and ep 2 inside dp 4) train the one-rank mixture
           of experts; expert-parallel ranks send rows, and each holds E/ep experts' parameters.
  pipeline Part 8's pipeline of the GPT: --pp 2, 3 (which does not divide the 4 pieces), 4 (an
           embedding alone, a head alone), GPipe and 1F1B, micro-batches on one rank, and with
           dp, tp with --sp, cp with --zigzag, all five at once on 16 ranks, and a mixture of
           experts with ep (against one rank of the same micro-batches: each micro-batch's routing
           is balanced), train the one-rank model (double, relative 1e-10); each rank sends its
           stream and gradient per micro-batch exactly as counted, and holds GPipe's m or 1F1B's
           min(m, pp - stage) micro-batches' activations at once (a block's, as counted).
           Part 14's interleaved schedule likewise (a model of 6 blocks: 8 pieces): V = 2 and 4
           chunks per stage, pp 2, 3 (6 chunks of 8 pieces) and 4, with dp, with tp, --sp, cp
           and --zigzag on 8 ranks, and experts with ep; each rank holds the schedule's warm-up
           + 1 micro-batches at once, (pp - stage - 1) * 2 + (V - 1) * pp + 1 (at most m V), and
           sends each chunk's stream and gradient as counted; its --trace names every forward
           and backward through every chunk (F3.1: micro-batch 3, chunk 1) once per step.
  buckets  Part 15's buckets (--bucket_mb): dp 2 with buckets of a few parameters, dp 4, dp 3
           with one bucket, cp 2 x dp 2, tp 2 x dp 2 train the one-rank model (double, relative
           1e-10); a ring of every bucket sends the analytic data-parallel bytes (within 2 %:
           ceil(n / p)-element chunks), in float as in double (the buckets sum in double);
           in bf16 on dp 2 the weights of the sum after the backward bit for bit (cp x dp and
           tp x dp to 1e-5); its --trace shows the rings' Isends, made between the backward's
           first and last moments, and none without --bucket_mb.
  memory   Part 16's recomputation (--recompute selective, full) on one rank (double, float and
           bf16), tp, tp x --sp x dp, cp --zigzag x tp --sp, pp with micro-batches, interleaved,
           and experts with ep (double and bf16): the weights, losses and experts' rows of the
           run without it, bit for bit; a block's activations (full: its input alone), every group's bytes and the
           pipeline's in flight as counted, the FLOPs computed again reported.
  zero     ZeRO on the GPT (--zero 1, 2 on Part 9, 3 on Part 16.3): dp 4 and 3 (shards with
           padding), tp x --sp x dp, cp x dp with full recomputation, pp x dp with micro-batches
           and experts with ep against --zero 0: stage 1 the same weights bit for bit, stages 2
           and 3 to 1e-12; every rank's parameters, gradients and Adam's states as counted from
           the shape (ceil(n / p) values of each group's segment, or at stage 3 of each piece,
           and one piece whole), fewer than at stage 0 from the stage that shards them; the
           data-parallel bytes as counted.
  bf16     --dtype bf16 (Part 16.2) on one rank, dp, tp x --sp x dp, cp --zigzag x dp, pp with
           micro-batches, experts with ep, tp with full recomputation, ZeRO 1 and 2 (dp 4, dp 3's
           padding, tp x --sp x dp) and ZeRO 3 (one rank, dp 4, tp x --sp x dp with full
           recomputation, pp x dp): the same weights bit for bit on a second run, float's to 1 %
           (not equal), ZeRO 1's those of ZeRO 0 bit for bit, ZeRO 2's and 3's to 1e-5 (3's on one
           rank bit for bit); every rank's parameters, gradients and optimizer states as counted
           (2 + 2 + 12 bytes a value, ZeRO's shards ceil(n / p); at stage 3 FSDP's fp32 shards)
           and its activations (2 bytes a kept value, 4 a statistic), fewer than float's; every
           group's bytes as counted.
  llama    --arch llama (RMSNorm, rotary positions, SwiGLU, grouped-query attention): with 2
           key/value heads for 4 query heads, dp, tp (one key/value head each, Part 10.1's
           gqa_qkv_columns) with --sp and dp, and with cp --zigzag, cp (contiguous and zig-zag,
           with dp: the rotary turns of each rank's global positions; the ring's keys and values
           half as wide), pp (2 stages, 3 that do not divide the 4 pieces, and interleaved),
           selective and full recomputation, ZeRO 3 and Part 15's buckets; replicated over
           tp/kv ranks (tp 4, with --sp, cp --zigzag, dp and ZeRO 1), and multi-query's one (tp
           2 and 4, --sp, dp, ZeRO 2 and 3, pp), whose K and V gradients the trainer sums over
           the replicas; with 4 (multi-head), tp with and without --sp, and tp x cp --zigzag; a
           Llama mixture of experts with ep: each trains the one-rank model (double, relative
           1e-10), every group's bytes and a block's activations as counted (a pipeline's per
           stage and micro-batches in flight). And in bf16 (one rank, tp x sp x dp, tp 4 x sp,
           cp --zigzag x dp, ZeRO 3 on dp 2), bf16's checks: the same bits twice, float's
           to 1 %, ZeRO 3's ZeRO 0's to 1e-5, model states, bytes and activations as counted.
  cli      every bad command line or input gets one line "gpt_train: ..." from rank 0 and exit
           status 2: unknown flags and values, layouts whose shapes do not split (naming both
           numbers), a rank count that is not tp x cp x dp, shapes the model refuses, a missing,
           empty, short or non-UTF-8 corpus, a missing `bible`, an output file that cannot be
           made, a plan (--plan) that is not JSON or has a field gpt_train cannot run (naming
           it); a run that diverges stops with one line and exit 1. --help exits 0. A plan runs
           as its flags do (the same weights_l2, bit for bit), flags beside it override it, and
           each field (tp, sp, cp, dp, pp with micro-batches, the schedule, ep, recompute,
           zero_stage) trains one rank's weights to 1e-10 with the report's layout showing the
           field taken.
  blas     the BLAS's kernels: left to itself, gpt_train multiplies with the fastest kernels the
           processor runs (never newer), names them beside the GEMM peak and in its report;
           kernels named by OPENBLAS_CORETYPE are kept, and a one-line note says when faster
           ones would run; OpenBLAS's idle threads sleep at once (OPENBLAS_THREAD_TIMEOUT 4)
           unless the environment says otherwise; the weights in double are the same with
           both, and with --threads 1 (relative 1e-12).
  learns   a short run on the King James Bible (a 2-block model of width 64, 250 steps of 32
           sequences of 32 characters): the validation loss falls below the text's bigram
           entropy; the report, the sample and the trace hold what they should.

usage: check_gpt_train.py MODE GPT_TRAIN MPIRUN [mpirun flags...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MODE, PROGRAM, MPIRUN = sys.argv[1], sys.argv[2], sys.argv[3:]
SCRATCH = tempfile.mkdtemp(prefix="dtk-gpt-train-")
failures = []

# A corpus of a few kilobytes of the Bible's words: quick to load, enough for tiny models.
SMALL = os.path.join(SCRATCH, "small.txt")
with open(SMALL, "w") as f:
    f.write(("In the beginning God created the heaven and the earth.\n"
             "And the earth was without form, and void; and darkness was upon the face of the deep.\n"
             "And God said, Let there be light: and there was light.\n") * 40)
TINY = ["--corpus", SMALL, "--layers", "2", "--hidden", "32", "--heads", "4", "--seq", "16"]


def run(ranks, args, env=None):
    """gpt_train with `args` on `ranks` ranks (one rank without mpirun: quicker to fail)."""
    command = [PROGRAM] + args if ranks == 1 else MPIRUN + ["-n", str(ranks), PROGRAM] + args
    return subprocess.run(command, capture_output=True, text=True, env=env)


def fail(message, result=None):
    failures.append(message)
    print("FAIL: " + message)
    if result is not None:
        print("\n".join("    " + line for line in (result.stdout + result.stderr).splitlines()[-15:]))


def report_of(ranks, args, name):
    path = os.path.join(SCRATCH, name + ".json")
    result = run(ranks, args + ["--report", path])
    if result.returncode != 0:
        fail("gpt_train %s (-n %d) exited %d" % (" ".join(args), ranks, result.returncode), result)
        return None
    with open(path) as f:
        return json.load(f)


def layouts():
    for model, extra in (("dense", []), ("mixture of experts", ["--experts", "4", "--top_k", "2"])):
        for dtype in ("double", "float"):
            reports = {}
            for dp in (1, 2, 3, 4):
                args = TINY + extra + ["--dp", str(dp), "--batch_size", "12", "--steps", "4",
                                       "--dtype", dtype]
                reports[dp] = report_of(dp, args, "dp%d" % dp)
            if None in reports.values():
                continue
            base = reports[1]
            worst = max(abs(r["weights_l2"] - base["weights_l2"]) / base["weights_l2"]
                        for r in reports.values())
            loss = max(abs(r["final_loss"] - base["final_loss"]) / base["final_loss"]
                       for r in reports.values())
            ok = worst <= 1e-5 and loss <= 1e-5
            print("%s %-18s %-6s dp 1-4: weights_l2 %.12g, worst relative difference %.2e, final "
                  "loss %.2e" % ("ok:" if ok else "FAIL:", model, dtype, base["weights_l2"], worst, loss))
            if not ok:
                failures.append("%s %s: dp changes the model" % (model, dtype))
            for dp, r in reports.items():
                sent = [rank["bytes_sent"]["data_parallel"] for rank in r["ranks"]]
                if dp > 1 and min(sent) == 0:
                    fail("%s %s dp %d: a rank sent no gradients (%s)" % (model, dtype, dp, sent))


GROUPS = ("tensor_parallel", "context_parallel", "data_parallel", "expert_parallel")


def same_model(what, layouts, extra, check=None, tolerance=1e-5, batch_size=4):
    """Each layout (ranks, flags) trains the one-rank model of TINY + extra in double: the same
    weights_l2 and final loss (relative `tolerance`). check(layout, report) returns its own
    failures."""
    common = TINY + extra + ["--batch_size", str(batch_size), "--steps", "3", "--dtype", "double"]
    base = report_of(1, common, "one_rank")
    if base is None:
        return
    for ranks, flags in layouts:
        r = report_of(ranks, common + flags, "layout")
        if r is None:
            continue
        l2 = abs(r["weights_l2"] - base["weights_l2"]) / base["weights_l2"]
        loss = abs(r["final_loss"] - base["final_loss"]) / base["final_loss"]
        problems = ([] if l2 <= tolerance and loss <= tolerance else
                    ["weights_l2 %.12g against %.12g one rank's" % (r["weights_l2"], base["weights_l2"])])
        problems += check(flags, r) if check else []
        where = "%s %-32s (-n %d)" % (what, " ".join(flags), ranks)
        if problems:
            fail("%s: %s" % (where, "; ".join(problems)))
        else:
            print("ok: %s: weights_l2 relative difference %.1e, final loss %.1e" % (where, l2, loss))


def bytes_match(r, groups, tolerance=0.0):
    """Every rank's measured bytes per step of `groups` against gpt_train's analytic count."""
    problems = []
    for rank in r["ranks"]:
        for group in groups:
            measured, expected = rank["bytes_sent"][group] / r["steps"], rank["expected_bytes_per_step"][group]
            if abs(measured - expected) > tolerance * expected or (expected == 0) != (measured == 0):
                problems.append("rank %d sent %.0f %s bytes per step, the analytic count is %.0f"
                                % (rank["rank"], measured, group, expected))
    return problems


def groups_match(r):
    """Every rank's bytes in its tensor-, data- and context-parallel groups as counted: the data's
    to 1e-5 (an all-reduce over 3 ranks counts thirds), the context's to 2 % (the positions that
    travel with the ring are not counted)."""
    return (bytes_match(r, ("tensor_parallel",)) + bytes_match(r, ("data_parallel",), 1e-5) +
            bytes_match(r, ("context_parallel",), 0.02))


def activations_match(r):
    """Every rank's measured activations of one block against gpt_train's count from the shape."""
    counted = r["block_activations_counted"]["model"]
    return ["rank %d keeps %d bytes of activations in a block, the count is %.0f"
            % (rank["rank"], rank["peak_bytes"]["block_activations"], counted)
            for rank in r["ranks"] if rank["peak_bytes"]["block_activations"] != counted]


def tensor():
    layouts = [(tp * dp, ["--tp", str(tp), "--dp", str(dp)] + sp)
               for tp in (1, 2, 4) for sp in ([], ["--sp"]) for dp in (1, 2) if tp > 1 or not sp]
    same_model("tensor parallel", layouts, [],
               lambda flags, r: bytes_match(r, ("tensor_parallel", "data_parallel")) +
               activations_match(r))


def context():
    layouts = [(cp, ["--cp", str(cp)] + z) for cp in (2, 4) for z in ([], ["--zigzag"])]
    layouts += [(8, ["--cp", "2", "--tp", "2", "--dp", "2"]),
                (8, ["--cp", "2", "--zigzag", "--tp", "2", "--sp", "--dp", "2"])]
    same_model("context parallel", layouts, [],
               lambda flags, r: groups_match(r) + activations_match(r))


def llama():
    def counted(flags, r):
        if "--pp" in flags:
            return pipeline_check(flags, r)
        return groups_match(r) + activations_match(r)
    grouped = ["--arch", "llama", "--kv_heads", "2"]
    same_model("llama, 2 KV heads", [
        (2, ["--dp", "2"]), (2, ["--tp", "2"]), (4, ["--tp", "2", "--sp", "--dp", "2"]),
        (4, ["--tp", "2", "--sp", "--cp", "2", "--zigzag"]), (2, ["--cp", "2"]), (4, ["--cp", "2", "--zigzag", "--dp", "2"]),
        (4, ["--cp", "4"]), (2, ["--pp", "2", "--microbatches", "2"]),
        (3, ["--pp", "3", "--microbatches", "4"]), (1, ["--recompute", "selective"]),
        (2, ["--dp", "2", "--recompute", "full"]), (2, ["--dp", "2", "--zero", "3"]),
        (2, ["--pp", "2", "--schedule", "interleaved", "--virtual", "2", "--microbatches", "2"]),
        (2, ["--dp", "2", "--bucket_mb", "0.01"]),
    ], grouped, counted, tolerance=1e-10)
    # Fewer key/value heads than tp: each held by tp/kv ranks, its gradient summed over them.
    same_model("llama, KV heads replicated", [
        (4, ["--tp", "4"]), (4, ["--tp", "4", "--sp"]), (8, ["--tp", "4", "--cp", "2", "--zigzag"]),
        (8, ["--tp", "4", "--sp", "--dp", "2", "--zero", "1"]),
    ], grouped, counted, tolerance=1e-10)
    same_model("llama, multi-query", [
        (2, ["--tp", "2"]), (4, ["--tp", "4", "--sp"]), (4, ["--tp", "2", "--sp", "--dp", "2"]),
        (4, ["--tp", "2", "--dp", "2", "--zero", "2"]), (4, ["--tp", "2", "--dp", "2", "--zero", "3"]),
        (4, ["--tp", "2", "--pp", "2", "--microbatches", "2"]),
    ], ["--arch", "llama", "--kv_heads", "1"], counted, tolerance=1e-10)
    same_model("llama, multi-head", [
        (2, ["--tp", "2"]), (4, ["--tp", "2", "--sp", "--dp", "2"]), (4, ["--tp", "4", "--sp"]),
        (4, ["--tp", "2", "--sp", "--cp", "2", "--zigzag"]),
    ], ["--arch", "llama", "--kv_heads", "4"], counted, tolerance=1e-10)
    same_model("llama, mixture of experts", [
        (2, ["--dp", "2", "--ep", "2"]), (4, ["--dp", "4", "--ep", "4"]),
    ], grouped + ["--experts", "4", "--top_k", "2"], lambda flags, r: groups_match(r),
        tolerance=1e-10)
    bf16_runs([(1, []), (4, ["--tp", "2", "--sp", "--dp", "2"]), (4, ["--tp", "4", "--sp"]),
               (4, ["--cp", "2", "--zigzag", "--dp", "2"]), (2, ["--dp", "2", "--zero", "3"])],
              grouped)


def experts():
    def check(flags, r):
        ep = int(flags[flags.index("--ep") + 1])
        h, layers, experts = 32, 2, 4  # TINY's, and the experts of the runs below
        held = layers * experts // ep * (8 * h * h + 5 * h) * 8  # E/ep MLPs per block, in double
        sizes = {rank["peak_bytes"]["expert_parameters"] for rank in r["ranks"]}
        sent = [rank["bytes_sent"]["expert_parallel"] for rank in r["ranks"]]
        problems = [] if sizes == {held} else ["expert bytes per rank %s, E/ep experts are %d"
                                               % (sorted(sizes), held)]
        if ep > 1 and min(sent) == 0:
            problems.append("a rank of an expert-parallel group sent no rows (%s)" % sent)
        return problems + bytes_match(r, ("data_parallel",))
    for k in (1, 2):
        layouts = [(ep, ["--dp", str(ep), "--ep", str(ep)]) for ep in (1, 2, 4)]
        layouts += [(4, ["--dp", "4", "--ep", "2"])]
        same_model("experts, top_k %d" % k, layouts, ["--experts", "4", "--top_k", str(k)], check)


def interleaved_table(rank, p, v, m):
    """Megatron-LM's interleaved 1F1B of pipeline rank `rank` (five_dimensional.hpp's rules),
    as (op, micro-batch, chunk) steps: this test's own oracle."""
    total = m * v

    def step(op, k):
        group, within = divmod(k, p * v)
        chunk = within // p
        return (op, group * p + within % p, v - 1 - chunk if op == "B" else chunk)
    warm_up = min((p - rank - 1) * 2 + (v - 1) * p, total)
    steps = [step("F", k) for k in range(warm_up)]
    for k in range(total - warm_up):
        steps += [step("F", warm_up + k), step("B", k)]
    return steps + [step("B", k) for k in range(total - warm_up, total)]


def first_chunk_in_flight(steps, chunk):
    """The most micro-batches `chunk` holds at once in `steps`: forwards not yet backward."""
    now = most = 0
    for op, _, c in steps:
        if c == chunk:
            now += 1 if op == "F" else -1
            most = max(most, now)
    return most


def pipeline_check(flags, r):
    """A pipelined run's bytes between stages, micro-batches in flight and a block's activations
    against the schedule's counts; each stage's bytes in its groups as counted for its pieces."""
    pp, m = r["layout"]["pp"], r["layout"]["microbatches"]
    v, schedule = r["layout"]["virtual_stages"], r["layout"]["schedule"]
    problems = bytes_match(r, ("pipeline_parallel",)) + groups_match(r)
    for rank in r["ranks"]:
        s = rank["pp_idx"]
        held = (m if schedule == "gpipe" else min(m, pp - s) if schedule == "1f1b"
                else min((pp - s - 1) * 2 + (v - 1) * pp + 1, m * v))
        if rank["microbatches_in_flight"] != held:
            problems.append("rank %d (stage %d) held %d micro-batches at once, %s holds %d"
                            % (rank["rank"], rank["pp_idx"], rank["microbatches_in_flight"],
                               r["layout"]["schedule"], held))
        # Its first chunk's: all of them, or interleaved, those of chunk 0 in its table.
        first = held if schedule != "interleaved" else \
            first_chunk_in_flight(interleaved_table(s, pp, v, m), 0)
        if rank["first_chunk_in_flight"] != first:
            problems.append("rank %d (stage %d): its first chunk held %d micro-batches at once, "
                            "the schedule holds %d" % (rank["rank"], s,
                                                       rank["first_chunk_in_flight"], first))
        # A block's activations: `first` micro-batches' of the rank's share's count.
        layers = r["model"]["layers"]
        blocks = min(rank["pieces"][1] - 1, layers) - max(rank["pieces"][0] - 1, 0)
        counted = r["block_activations_counted"]["model"] * first / m
        measured = rank["peak_bytes"]["block_activations"]
        if blocks > 0 and r["model"]["experts"] == 0 and measured != counted:
            problems.append("rank %d (stage %d) keeps %d bytes of a block's activations, %d "
                            "micro-batches' count is %.0f" % (rank["rank"], rank["pp_idx"],
                                                              measured, first, counted))
    return problems


def pipeline():
    layouts = [(2, ["--pp", "2"]), (2, ["--pp", "2", "--schedule", "gpipe", "--microbatches", "4"]),
               (1, ["--microbatches", "4"]), (3, ["--pp", "3", "--microbatches", "4"]),
               (4, ["--pp", "4", "--microbatches", "8"]),
               (4, ["--pp", "2", "--dp", "2", "--microbatches", "4"]),
               (4, ["--pp", "2", "--tp", "2", "--sp"]),
               (4, ["--pp", "2", "--cp", "2", "--zigzag", "--schedule", "gpipe"]),
               (16, ["--pp", "2", "--tp", "2", "--sp", "--cp", "2", "--dp", "2"])]
    same_model("pipeline", layouts, [], pipeline_check, tolerance=1e-10, batch_size=8)
    # A mixture of experts balances each micro-batch's routing: the same micro-batches on one rank.
    experts = [(4, ["--pp", "2", "--dp", "2", "--ep", "2"]), (2, ["--dp", "2", "--ep", "2"]),
               (4, ["--pp", "4", "--schedule", "gpipe"])]
    same_model("pipeline, experts, 2 micro-batches", experts,
               ["--experts", "4", "--top_k", "2", "--microbatches", "2"], pipeline_check, tolerance=1e-10,
               batch_size=8)
    interleaved = ["--schedule", "interleaved"]
    layouts = [(2, ["--pp", "2", "--microbatches", "4"] + interleaved),
               (2, ["--pp", "2", "--virtual", "4", "--microbatches", "2"] + interleaved),
               (4, ["--pp", "4", "--virtual", "2", "--microbatches", "8"] + interleaved),
               (4, ["--pp", "2", "--dp", "2", "--microbatches", "4"] + interleaved),
               (8, ["--pp", "2", "--tp", "2", "--sp", "--cp", "2", "--zigzag", "--microbatches",
                    "2"] + interleaved)]
    same_model("interleaved", layouts, ["--layers", "6"], pipeline_check, tolerance=1e-10, batch_size=8)
    same_model("interleaved, 6 chunks", [(3, ["--pp", "3", "--microbatches", "3"] + interleaved)],
               ["--layers", "6"], pipeline_check, tolerance=1e-10, batch_size=12)
    same_model("interleaved, experts, 2 micro-batches",
               [(4, ["--pp", "2", "--dp", "2", "--ep", "2"] + interleaved)],
               ["--experts", "4", "--top_k", "2", "--microbatches", "2"], pipeline_check, tolerance=1e-10,
               batch_size=8)
    interleaved_trace()


def memory():
    """--recompute selective and full against none, layout by layout: bit-identical weights and
    losses (and experts' rows); a block keeps what the count says (full: its input alone), less
    than with selective, less than without; the bytes each group sends are the counts (full
    recomputation runs the blocks' forward communication twice); the FLOPs computed again are
    reported, full's above selective's."""
    interleaved = ["--layers", "6", "--schedule", "interleaved", "--microbatches", "4"]
    layouts = [(1, []), (2, ["--tp", "2"]), (4, ["--tp", "2", "--sp", "--dp", "2"]),
               (4, ["--cp", "2", "--zigzag", "--tp", "2", "--sp"]),
               (2, ["--pp", "2", "--microbatches", "4"]), (2, ["--pp", "2"] + interleaved),
               (4, ["--dp", "4", "--ep", "2", "--experts", "4", "--top_k", "2"])]
    for ranks, flags in layouts:
        for dtype in ("double", "float", "bf16") if ranks == 1 else ("double", "bf16"):
            common = TINY + flags + ["--batch_size", "8", "--steps", "3", "--dtype", dtype]
            reports = {mode: report_of(ranks, common + ["--recompute", mode], "recompute")
                       for mode in ("none", "selective", "full")}
            if None in reports.values():
                continue
            base = reports["none"]
            kept = {}
            for mode, r in reports.items():
                where = "--recompute %-9s %s %s (-n %d)" % (mode, " ".join(flags), dtype, ranks)
                problems = []
                for key in ("weights_l2", "final_loss", "val_loss"):
                    if r[key] != base[key]:
                        problems.append("%s %.17g, without recomputation %.17g"
                                        % (key, r[key], base[key]))
                if r["history"][-1]["expert_rows"] != base["history"][-1]["expert_rows"]:
                    problems.append("the experts' rows differ from the run without recomputation")
                problems += groups_match(r)
                pipelined = r["layout"]["pp"] > 1 or r["layout"]["microbatches"] > 1
                problems += pipeline_check(flags, r) if pipelined else \
                    activations_match(r) if r["model"]["experts"] == 0 else []
                again = r["recompute_flops_per_step"]
                if (again > 0) != (mode != "none"):
                    problems.append("%g FLOPs per step computed again" % again)
                kept[mode] = (r["ranks"][0]["peak_bytes"]["block_activations"], again)
                if problems:
                    fail("%s: %s" % (where, "; ".join(problems)))
                else:
                    print("ok: %s: the same weights bit for bit; a block keeps %d bytes; %.3g "
                          "FLOPs per step again" % (where, kept[mode][0], again))
            # (In bf16 the block recomputed is float, the blocks kept bf16: no such identity.)
            problems = [] if dtype == "bf16" else full_recomputation_peak(reports["none"],
                                                                          reports["full"])
            if problems:
                fail("--recompute full %s %s: %s" % (" ".join(flags), dtype, "; ".join(problems)))
            if not (kept["full"][0] < kept["selective"][0] < kept["none"][0]
                    and kept["full"][1] > kept["selective"][1]):
                fail("%s %s: a block keeps %s bytes and computes %s FLOPs again (none, selective, "
                     "full): expected less kept and more computed in that order"
                     % (" ".join(flags), dtype, [kept[m][0] for m in kept], [kept[m][1] for m in kept]))


def full_recomputation_peak(none, full):
    """With full recomputation a rank's activations peak in the backward: every block's input and
    the one block recomputed, whose activations are a block's without recomputation (as Part 13's
    simulator counts them). Against the run without: L - 1 blocks' activations fewer and L inputs
    more. For a dense model off a pipeline (where the blocks' activations are alike)."""
    if none["layout"]["pp"] > 1 or none["layout"]["microbatches"] > 1 or none["model"]["experts"]:
        return []
    layers = none["model"]["layers"]
    problems = []
    for a, b in zip(none["ranks"], full["ranks"]):
        block, block_input = (a["peak_bytes"]["block_activations"],
                              b["peak_bytes"]["block_activations"])
        expected = a["peak_bytes"]["activations"] - (layers - 1) * block + layers * block_input
        if b["peak_bytes"]["activations"] != expected:
            problems.append("rank %d's activations peak at %d bytes, expected %d: %d blocks' "
                            "inputs of %d bytes and one block recomputed (%d bytes)"
                            % (b["rank"], b["peak_bytes"]["activations"], expected, layers,
                               block_input, block))
    return problems


def model_states_match(r):
    """Every rank's parameters, gradients and optimizer states against gpt_train's count."""
    return ["rank %d holds %d bytes of %s, the count is %.0f"
            % (rank["rank"], rank["peak_bytes"][key], key, rank["model_states_counted"][key])
            for rank in r["ranks"] for key in ("parameters", "gradients", "optimizer")
            if rank["peak_bytes"][key] != rank["model_states_counted"][key]]


def zero():
    """--zero 1, 2 and 3 against 0, layout by layout: stage 1 the same weights bit for bit (the
    same all-reduce, the same update of each value), stages 2 and 3 to 1e-12 (a reduce-scatter
    may add in another order); every rank's model states as counted (Adam's states of a shard at
    stage 1, the gradients' shard too at stage 2, the parameters' shards and one piece whole at
    stage 3) and fewer than without; its data-parallel bytes as counted (stage 1 gathers the
    shards after the all-reduce, stage 3 gathers each piece twice and reduce-scatters it once
    per micro-batch)."""
    layouts = [(4, ["--dp", "4"]), (3, ["--dp", "3"]), (4, ["--tp", "2", "--sp", "--dp", "2"]),
               (4, ["--cp", "2", "--dp", "2", "--recompute", "full"]),
               (4, ["--pp", "2", "--dp", "2", "--microbatches", "3"]),
               (4, ["--dp", "4", "--ep", "2", "--experts", "4", "--top_k", "2"])]
    for ranks, flags in layouts:
        common = TINY + flags + ["--batch_size", "12", "--steps", "3", "--dtype", "double"]
        reports = {stage: report_of(ranks, common + ["--zero", stage], "zero" + stage)
                   for stage in ("0", "1", "2", "3")}
        if None in reports.values():
            continue
        base = reports["0"]
        for stage, r in reports.items():
            where = "--zero %s %s (-n %d)" % (stage, " ".join(flags), ranks)
            l2 = abs(r["weights_l2"] - base["weights_l2"]) / base["weights_l2"]
            problems = [] if l2 <= (0 if stage in ("0", "1") else 1e-12) else \
                ["weights_l2 %.17g, at stage 0 %.17g" % (r["weights_l2"], base["weights_l2"])]
            problems += model_states_match(r)
            # (The count of an all-reduce over 3 ranks has thirds.)
            problems += bytes_match(r, ("data_parallel",), 1e-5)
            # (Stage 3's optimizer keeps a copy of the shards, and its parameters a piece whole:
            # fewer than stage 0's, more than stage 2's; but not fewer on a pipeline's stage of
            # two pieces, whose larger one is held whole.)
            for key, sharded_from in (("optimizer", "1"), ("gradients", "2"), ("parameters", "3")):
                if key == "parameters" and r["layout"]["pp"] > 1:
                    continue
                fewer = all(rank["peak_bytes"][key] < first["peak_bytes"][key]
                            for rank, first in zip(r["ranks"], base["ranks"]))
                if (stage >= sharded_from) != fewer:
                    problems.append("%s bytes %s, at stage 0 %s" % (
                        key, [rank["peak_bytes"][key] for rank in r["ranks"]],
                        [rank["peak_bytes"][key] for rank in base["ranks"]]))
            if problems:
                fail("%s: %s" % (where, "; ".join(problems)))
            else:
                states = r["ranks"][0]["peak_bytes"]
                print("ok: %s: weights_l2 relative difference %.1e; rank 0 holds %d + %d + %d bytes "
                      "of parameters, gradients and Adam's states, as counted"
                      % (where, l2, states["parameters"], states["gradients"], states["optimizer"]))


def bf16():
    """--dtype bf16 (Part 16.2), layout by layout: a second run gives the same weights bit for
    bit; the weights are float's to 1 %, not equal, and at ZeRO 1 to 3 those of ZeRO 0; every
    rank's model states as counted (2 + 2 + 12 bytes a value; at ZeRO 3, FSDP's fp32 shards), its
    activations as counted (2 bytes a kept value, 4 a statistic) and fewer than float's; every
    group's bytes as counted (the model and the gradient sum compute in float)."""
    layouts = [(1, []), (2, ["--dp", "2"]), (4, ["--tp", "2", "--sp", "--dp", "2"]),
               (4, ["--cp", "2", "--zigzag", "--dp", "2"]),
               (2, ["--pp", "2", "--microbatches", "4"]),
               (4, ["--dp", "4", "--ep", "2", "--experts", "4", "--top_k", "2"]),
               (2, ["--tp", "2", "--recompute", "full"]),
               (4, ["--dp", "4", "--zero", "1"]), (3, ["--dp", "3", "--zero", "2"]),
               (4, ["--tp", "2", "--sp", "--dp", "2", "--zero", "2"]),
               (1, ["--zero", "3"]), (4, ["--dp", "4", "--zero", "3"]),
               (4, ["--tp", "2", "--sp", "--dp", "2", "--zero", "3", "--recompute", "full"]),
               (4, ["--pp", "2", "--dp", "2", "--microbatches", "3", "--zero", "3"])]
    bf16_runs(layouts)


def bf16_runs(layouts, model=()):
    """bf16()'s checks of each layout (ranks, flags) of the model TINY + model."""
    for ranks, flags in layouts:
        common = TINY + list(model) + flags + ["--batch_size", "12", "--steps", "3"]
        f32 = report_of(ranks, common + ["--dtype", "float"], "float")
        runs = [report_of(ranks, common + ["--dtype", "bf16"], "bf16") for _ in range(2)]
        stage = flags[flags.index("--zero") + 1] if "--zero" in flags else "0"
        whole = runs[0] if stage == "0" else report_of(
            ranks, TINY + list(model) + flags[:flags.index("--zero")] +
            ["--batch_size", "12", "--steps", "3", "--dtype", "bf16"], "bf16_zero0")
        if f32 is None or None in runs or whole is None:
            continue
        r = runs[0]
        where = "--dtype bf16 %s (-n %d)" % (" ".join(list(model) + flags), ranks)
        problems = []
        if runs[1]["weights_l2"] != r["weights_l2"]:
            problems.append("weights_l2 %.17g, then %.17g" % (r["weights_l2"], runs[1]["weights_l2"]))
        # ZeRO: stage 1 sums and steps each value as stage 0 does; stage 2's reduce-scatter may
        # add in another order, which bf16 can round one step apart. Stage 3 is FSDP's scheme:
        # its fp32 shards stepped with their gradients summed in fp32, not rounded to bf16 first
        # (16.2's step); on one rank, where there is no sum, ZeRO 0's bits.
        unsharded = abs(r["weights_l2"] - whole["weights_l2"]) / whole["weights_l2"]
        if unsharded > (0 if stage in ("0", "1") or ranks == 1 else 1e-5):
            problems.append("weights_l2 %.17g, at --zero 0 %.17g"
                            % (r["weights_l2"], whole["weights_l2"]))
        off = abs(r["weights_l2"] - f32["weights_l2"]) / f32["weights_l2"]
        if not 0 < off < 1e-2:
            problems.append("weights_l2 %.17g, float's %.17g: expected within 1 %%, not equal"
                            % (r["weights_l2"], f32["weights_l2"]))
        problems += model_states_match(r)
        problems += groups_match(r)
        pipelined = r["layout"]["pp"] > 1 or r["layout"]["microbatches"] > 1
        problems += pipeline_check(flags, r) if pipelined else \
            activations_match(r) if r["model"]["experts"] == 0 else []
        for rank, float_rank in zip(r["ranks"], f32["ranks"]):
            if rank["peak_bytes"]["activations"] >= float_rank["peak_bytes"]["activations"]:
                problems.append("rank %d keeps %d bytes of activations, float's %d"
                                % (rank["rank"], rank["peak_bytes"]["activations"],
                                   float_rank["peak_bytes"]["activations"]))
        if problems:
            fail("%s: %s" % (where, "; ".join(problems)))
        else:
            states = r["ranks"][0]["peak_bytes"]
            print("ok: %s: the same weights twice, %.1e from float's, %.1e from ZeRO 0's; rank 0 "
                  "holds %d + %d + %d bytes of model states and %d of activations (float: %d), "
                  "as counted" % (where, off, unsharded, states["parameters"], states["gradients"],
                                  states["optimizer"], states["activations"],
                                  f32["ranks"][0]["peak_bytes"]["activations"]))


def traced_events(args):
    """The complete ("X") events of gpt_train's --trace of `args` on 2 ranks; None (a failure
    said) when it does not run."""
    trace = os.path.join(SCRATCH, "trace.json")
    result = run(2, args + ["--trace", trace])
    if result.returncode != 0:
        fail("gpt_train %s (-n 2) exited %d" % (" ".join(args), result.returncode), result)
        return None
    with open(trace) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def interleaved_trace():
    """--trace of an interleaved step: each stage's forward and backward of every micro-batch
    through each of its chunks, once each, named F3.1 and B3.1 (micro-batch 3, chunk 1)."""
    m, v = 4, 2
    events = traced_events(TINY + ["--layers", "6", "--batch_size", "8", "--steps", "1", "--pp",
                                   "2", "--microbatches", str(m), "--schedule", "interleaved"])
    if events is None:
        return
    expected = sorted("%s%d.%d" % (op, mb, c) for op in "FB" for mb in range(m) for c in range(v))
    for rank in (0, 1):
        steps = sorted(e["name"] for e in events
                       if e.get("pid") == rank and re.match(r"[FB][0-9]+\.[0-9]+$", e["name"]))
        if steps != expected:
            fail("the interleaved trace of rank %d holds %s, expected %s" % (rank, steps, expected))
        else:
            print("ok: the interleaved trace of rank %d holds each F and B of %d micro-batches x "
                  "%d chunks once" % (rank, m, v))


def buckets():
    layouts = [(2, ["--dp", "2", "--bucket_mb", "0.002"]), (4, ["--dp", "4", "--bucket_mb", "0.01"]),
               (3, ["--dp", "3", "--bucket_mb", "64"]),
               (4, ["--cp", "2", "--dp", "2", "--bucket_mb", "0.004"]),
               (4, ["--tp", "2", "--dp", "2", "--bucket_mb", "0.004"])]
    same_model("buckets", layouts, [], lambda flags, r: bytes_match(r, ("data_parallel",), 0.02),
               tolerance=1e-10, batch_size=12)
    # In float the buckets still sum in double: twice the data-parallel bytes, as counted.
    r = report_of(2, TINY + ["--dp", "2", "--batch_size", "4", "--steps", "2", "--bucket_mb",
                             "0.002"], "float_buckets")
    if r is not None:
        problems = bytes_match(r, ("data_parallel",), 0.02)
        problems += ["rank %d reports no exposed_sum_seconds" % rank["rank"]
                     for rank in r["ranks"] if not rank.get("exposed_sum_seconds", 0) > 0]
        if problems:
            fail("buckets in float: " + "; ".join(problems))
        else:
            print("ok: buckets in float: the data-parallel bytes of a sum in double, as counted; "
                  "each rank's exposed_sum_seconds reported")
    # In bf16 the buckets sum each rank's bf16 gradients in double and round the sum to bf16:
    # over 2 ranks what the float sum after the backward rounds (one addition, exact in double),
    # over more within an ulp of a step.
    for ranks, flags in ((2, ["--dp", "2"]), (4, ["--cp", "2", "--dp", "2"]),
                         (4, ["--tp", "2", "--dp", "2"])):
        common = TINY + flags + ["--batch_size", "12", "--steps", "3", "--dtype", "bf16"]
        r = report_of(ranks, common + ["--bucket_mb", "0.004"], "bf16_buckets")
        after = report_of(ranks, common, "bf16_after")
        if r is None or after is None:
            continue
        where = "--dtype bf16 --bucket_mb 0.004 %s (-n %d)" % (" ".join(flags), ranks)
        off = abs(r["weights_l2"] - after["weights_l2"]) / after["weights_l2"]
        problems = [] if off <= (0 if ranks == 2 else 1e-5) else \
            ["weights_l2 %.17g, summed after the backward %.17g" % (r["weights_l2"],
                                                                     after["weights_l2"])]
        problems += bytes_match(r, ("data_parallel",), 0.02) + model_states_match(r)
        if problems:
            fail("%s: %s" % (where, "; ".join(problems)))
        else:
            print("ok: %s: %.1e from the sum after the backward; the data-parallel bytes and the "
                  "model states as counted" % (where, off))
    for flags in (["--bucket_mb", "0.002"], []):
        events = traced_events(TINY + ["--dp", "2", "--batch_size", "4", "--steps", "1"] + flags)
        if events is None:
            continue
        backward = [e for e in events if e["name"] == "backward" and e["pid"] == 0]
        sends = [e for e in events if e["name"].startswith("Isend") and e["pid"] == 0]
        inside = [e for e in sends if backward and backward[0]["ts"] <= e["ts"] <=
                  backward[0]["ts"] + backward[0]["dur"]]
        if flags and not inside:
            fail("--bucket_mb: rank 0 made %d Isends, none during its backward" % len(sends))
        elif not flags and sends:
            fail("without --bucket_mb rank 0 made %d Isends" % len(sends))
        else:
            print("ok: %s: rank 0 made %d Isends, %d of them during its backward"
                  % ("with --bucket_mb" if flags else "without --bucket_mb", len(sends), len(inside)))


def expect_error(ranks, args, text, env=None, status=2):
    result = run(ranks, args, env)
    lines = [l for l in result.stderr.splitlines() if l.startswith("gpt_train: ")]
    where = "gpt_train %s (-n %d)" % (" ".join(args), ranks)
    if result.returncode != status:
        fail("%s exited %d, expected %d" % (where, result.returncode, status), result)
    elif text not in result.stderr:
        fail("%s: its message lacks '%s'" % (where, text), result)
    elif len(lines) != 1:
        fail("%s: %d 'gpt_train:' lines, expected 1" % (where, len(lines)), result)
    else:
        print("ok: %s: %s" % (where, lines[0]))


def cli():
    empty = os.path.join(SCRATCH, "empty.txt")
    open(empty, "w").close()
    short = os.path.join(SCRATCH, "short.txt")
    with open(short, "w") as f:
        f.write("In the beginning")
    latin1 = os.path.join(SCRATCH, "latin1.txt")
    with open(latin1, "wb") as f:
        f.write(b"Caf\xe9 au lait, " * 20)
    expect_error(1, ["--bogus"], "unknown option '--bogus'")
    expect_error(1, ["--dp", "two"], "--dp expects a positive integer, got 'two'")
    expect_error(1, ["--layers"], "--layers needs a value")
    expect_error(1, ["--optimizer", "lamb"], "--optimizer expects adam or sgd, got 'lamb'")
    expect_error(1, ["--bucket_mb", "-1"], "--bucket_mb")
    expect_error(2, TINY + ["--pp", "2", "--bucket_mb", "1"], "--bucket_mb with --pp")
    expect_error(2, TINY + ["--tp", "2", "--sp", "--bucket_mb", "1"], "--bucket_mb with --sp")
    expect_error(2, TINY + ["--dp", "2", "--experts", "2", "--bucket_mb", "1"],
                 "--bucket_mb with --experts")
    expect_error(1, ["--dtype", "half"], "--dtype expects bf16, double or float, got 'half'")
    expect_error(1, TINY + ["--dtype", "bf16", "--optimizer", "sgd"],
                 "--dtype bf16 trains with --optimizer adam")
    expect_error(1, ["--lr", "-1"], "--lr expects a positive number, got '-1'")
    expect_error(1, TINY + ["--tp", "3"], "--tp 3 must divide the 4 heads")
    expect_error(1, TINY + ["--hidden", "128", "--heads", "128", "--tp", "128"],
                 "--tp 128 must divide the vocabulary of 64")
    expect_error(1, TINY + ["--tp", "4", "--sp", "--seq", "18"],
                 "--sp: --tp 4 must divide the 18 / 1 positions")
    expect_error(1, TINY + ["--tp", "2", "--experts", "4"], "--tp 2 with --experts")
    expect_error(1, TINY + ["--cp", "2", "--zigzag", "--seq", "18"],
                 "--cp 2 --zigzag cuts each sequence into 4 equal slices, which must divide --seq 18")
    expect_error(1, TINY + ["--cp", "2", "--sample", "10"], "--sample with --cp 2")
    expect_error(1, TINY + ["--ep", "2"], "--ep 2 needs a mixture of experts")
    expect_error(1, TINY + ["--ep", "2", "--experts", "4"], "--ep 2 must divide --dp 1")
    expect_error(1, TINY + ["--ep", "2", "--dp", "2", "--experts", "3"], "--ep 2 must divide the 3 experts")
    expect_error(1, TINY + ["--sp"], "--sp (sequence parallelism) needs tensor parallelism")
    expect_error(1, TINY + ["--zigzag"], "--zigzag (the zigzag layout of ring attention) needs --cp > 1")
    expect_error(1, TINY + ["--top_k", "2"], "--top_k 2 needs a mixture of experts")
    expect_error(1, TINY + ["--experts", "2", "--top_k", "3"], "top_k 3 must be between 1 and the 2 experts")
    expect_error(1, TINY + ["--heads", "3"], "3 heads do not divide the hidden width 32")
    expect_error(1, ["--arch", "bert"], "--arch expects gpt2 or llama, got 'bert'")
    expect_error(1, TINY + ["--arch", "llama", "--kv_heads", "3"],
                 "3 key/value heads must divide the 4 query heads")
    expect_error(1, TINY + ["--kv_heads", "2"],
                 "GPT-2 has one key/value head per query head: grouped-query attention (kv_heads) "
                 "is a Llama's")
    expect_error(1, TINY + ["--arch", "llama", "--hidden", "36", "--heads", "4"],
                 "a Llama's rotary positions turn pairs of a head's columns: d = 9 must be even")
    expect_error(4, TINY + ["--arch", "llama", "--hidden", "48", "--heads", "12", "--kv_heads", "3",
                            "--tp", "4"],
                 "--tp 4 with --kv_heads 3: one must divide the other")
    expect_error(4, TINY + ["--arch", "llama", "--kv_heads", "1", "--tp", "2", "--dp", "2",
                            "--bucket_mb", "1"],
                 "--bucket_mb with fewer --kv_heads than --tp: its gradients are summed over two "
                 "groups of ranks")
    expect_error(2, TINY, "gpt_train: the layout needs tp x cp x dp x pp = 1 x 1 x 1 x 1 = 1 ranks, but mpirun started 2: run it with mpirun -n 1")
    expect_error(2, TINY + ["--tp", "2", "--cp", "2"],
                 "gpt_train: the layout needs tp x cp x dp x pp = 2 x 2 x 1 x 1 = 4 ranks, but mpirun started 2")
    expect_error(2, TINY + ["--pp", "2", "--dp", "2"],
                 "gpt_train: the layout needs tp x cp x dp x pp = 1 x 1 x 2 x 2 = 4 ranks, but mpirun started 2")
    expect_error(1, TINY + ["--pp", "5"],
                 "--pp 5 is more stages than the model has pieces: 4 (the embedding, 2 blocks, the head)")
    expect_error(1, TINY + ["--microbatches", "3", "--batch_size", "8"],
                 "--batch_size 8 must be a multiple of --dp x --microbatches = 1 x 3")
    expect_error(2, TINY + ["--pp", "2", "--sample", "10"], "--sample with --pp 2")
    expect_error(1, ["--schedule", "zigzag"],
                 "--schedule expects 1f1b, gpipe or interleaved, got 'zigzag'")
    expect_error(1, TINY + ["--pp", "2", "--virtual", "2"],
                 "--virtual 2 (model chunks per pipeline rank) needs --schedule interleaved")
    expect_error(1, TINY + ["--schedule", "interleaved"],
                 "--schedule interleaved needs --pp 2 or more")
    expect_error(2, TINY + ["--pp", "2", "--microbatches", "3", "--batch_size", "6", "--schedule",
                            "interleaved"],
                 "--schedule interleaved needs --microbatches (3) to be a multiple of --pp (2)")
    expect_error(2, TINY + ["--pp", "2", "--virtual", "3", "--schedule", "interleaved"],
                 "--pp 2 x --virtual 3 is more chunks than the model has pieces: 4")
    expect_error(1, ["--microbatches", "0"], "--microbatches expects a positive integer, got '0'")
    expect_error(2, TINY + ["--dp", "2", "--batch_size", "5"], "--batch_size 5 must be a multiple of --dp 2")
    expect_error(1, TINY + ["--threads", "0"], "--threads")
    expect_error(2, TINY + ["--dp", "2", "--corpus", "/nonexistent/kjv.txt"],
                 "--corpus /nonexistent/kjv.txt: cannot open this file")
    expect_error(1, ["--corpus", empty], "--corpus %s is empty" % empty)
    expect_error(1, ["--corpus", short, "--seq", "16"],
                 "--corpus %s holds 16 characters, too few for sequences of 16" % short)
    expect_error(1, ["--corpus", latin1], "--corpus %s is not UTF-8 text: byte 0xe9 at offset 3" % latin1)
    expect_error(1, TINY + ["--report", "/nonexistent/dir/report.json"],
                 "--report /nonexistent/dir/report.json: cannot create this file")
    # A run that diverges stops at once, on every rank, saying so (exit 1: not a bad input).
    expect_error(2, TINY + ["--dp", "2", "--batch_size", "4", "--steps", "20", "--optimizer", "sgd",
                            "--lr", "1e6"], "the training diverged; try a smaller --lr", status=1)
    # Without `bible`: a PATH of links to every other program (MPI finds its own through it).
    no_bible = os.path.join(SCRATCH, "bin")
    os.makedirs(no_bible)
    for directory in os.environ["PATH"].split(os.pathsep):
        for name in os.listdir(directory) if os.path.isdir(directory) else []:
            link = os.path.join(no_bible, name)
            if name != "bible" and not os.path.lexists(link):
                os.symlink(os.path.join(directory, name), link)
    expect_error(1, [], "comes from the program `bible`, which is not installed: apt-get install "
                 "bible-kjv, or pass --corpus FILE", env=dict(os.environ, PATH=no_bible))
    plans()
    result = run(1, ["--help"])
    if result.returncode != 0 or "--corpus FILE" not in result.stdout:
        fail("gpt_train --help exited %d or lists no --corpus" % result.returncode, result)
    else:
        print("ok: gpt_train --help")


def plans():
    """--plan FILE: a plan (plan_training --json's) runs as its flags do, each field of it trains
    one rank's weights, flags beside it override it, and every bad plan gets one line naming the
    field."""
    def plan_file(name, text):
        path = os.path.join(SCRATCH, name + ".json")
        with open(path, "w") as f:
            f.write(text)
        return path
    good = plan_file("plan", '{"tp": 2, "cp": 1, "pp": 1, "dp": 1, "ep": 1, "microbatches": 2, '
                     '"zero_stage": 0, "sequence_parallel": true, "recompute": false, '
                     '"schedule": "gpipe"}')
    common = TINY + ["--batch_size", "4", "--steps", "3", "--dtype", "double"]
    by_plan = report_of(2, common + ["--plan", good], "by_plan")
    by_flags = report_of(2, common + ["--tp", "2", "--sp", "--microbatches", "2", "--schedule",
                                      "gpipe"], "by_flags")
    overridden = report_of(2, common + ["--plan", good, "--microbatches", "4", "--schedule", "1f1b"],
                           "overridden")
    if by_plan and by_flags and overridden:
        layouts = [tuple(r["layout"][key] for key in ("tp", "dp", "sp", "microbatches", "schedule"))
                   for r in (by_plan, by_flags, overridden)]
        if by_plan["weights_l2"] != by_flags["weights_l2"] or layouts[0] != layouts[1]:
            fail("--plan %s trains %s, weights_l2 %.17g; its flags %s, %.17g"
                 % (good, layouts[0], by_plan["weights_l2"], layouts[1], by_flags["weights_l2"]))
        elif layouts[2] != (2, 1, True, 4, "1f1b"):
            fail("--plan with --microbatches 4 --schedule 1f1b beside it ran %s" % (layouts[2],))
        else:
            print("ok: --plan runs as its flags (weights_l2 %.17g), and flags beside it override it"
                  % by_plan["weights_l2"])
    # Each field of a plan, alone or with the fields it needs, trains one rank's weights, and the
    # report's layout shows the field was taken (a plan ignored would train one rank's too).
    for extra, fields in (
            ([], [{"tp": 2}, {"tp": 2, "sequence_parallel": True}, {"cp": 2}, {"dp": 2},
                  {"pp": 2, "microbatches": 2}, {"pp": 2, "microbatches": 2, "schedule": "gpipe"},
                  {"dp": 2, "recompute": True}, {"dp": 2, "zero_stage": 2},
                  {"dp": 2, "zero_stage": 3}]),
            (["--experts", "4", "--top_k", "2"], [{"dp": 2, "ep": 2}])):
        expected = {}
        for plan in fields:
            path = plan_file("field-" + "-".join("%s%s" % item for item in plan.items()), json.dumps(plan))
            # The report names the field sp, and the planner's recomputation "full".
            expected[path] = {{"sequence_parallel": "sp"}.get(key, key):
                              "full" if key == "recompute" else value for key, value in plan.items()}

        def took_fields(flags, r):
            want = expected[flags[1]]
            return ([] if all(r["layout"][key] == value for key, value in want.items()) else
                    ["the report's layout %s, not the plan's %s" % (r["layout"], want)])
        same_model("plan field", [(2, ["--plan", path]) for path in expected], extra, took_fields,
                   tolerance=1e-10)
    for name, text, message in (
            ("zero", '{"zero_stage": 4}', 'plan field "zero_stage" must be an integer from 0 to 3'),
            ("count", '{"tp": 0}', 'plan field "tp" must be an integer from 1 to'),
            ("flag", '{"sequence_parallel": 1}', 'plan field "sequence_parallel" must be true or false'),
            ("schedule", '{"schedule": "interleaved"}', 'plan field "schedule" must be "1f1b" or "gpipe"'),
            ("unknown", '{"tp": 2, "zero": 1}', 'the plan has an unknown field "zero"'),
            ("array", '[2]', "the plan is not a JSON object"),
            ("broken", '{"tp": 2,', "the plan is not valid JSON")):
        path = plan_file(name, text)
        expect_error(2, TINY + ["--plan", path], "gpt_train: --plan %s: %s" % (path, message))
    expect_error(2, TINY + ["--plan", os.path.join(SCRATCH, "none.json")], "--plan: cannot read")
    expect_error(2, TINY + ["--plan", plan_file("four", '{"tp": 2, "pp": 2}')],
                 "the layout needs tp x cp x dp x pp = 2 x 1 x 1 x 2 = 4 ranks, but mpirun started 2")


# How new the instructions of OpenBLAS 0.3.21's x86-64 kernels are (src/blas_kernel.cpp's
# instruction_level, for the kernels this test meets).
LEVELS = {"prescott": 1, "sandybridge": 2, "haswell": 3, "zen": 3, "skylakex": 4, "cooperlake": 5}


def blas():
    args = TINY + ["--batch_size", "8", "--steps", "4", "--dtype", "double"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_THREAD_TIMEOUT")}
    chosen_path, named_path = (os.path.join(SCRATCH, name + ".json") for name in ("chosen", "named"))
    one_path = os.path.join(SCRATCH, "one_thread.json")
    chosen = run(1, args + ["--report", chosen_path], env=env)
    named = run(1, args + ["--report", named_path],
                env=dict(env, OPENBLAS_CORETYPE="Prescott", OPENBLAS_THREAD_TIMEOUT="20"))
    one = run(1, args + ["--threads", "1", "--report", one_path], env=env)
    if chosen.returncode != 0 or named.returncode != 0 or one.returncode != 0:
        fail("gpt_train exited %d, %d and %d" % (chosen.returncode, named.returncode,
                                                 one.returncode), chosen)
        return
    with open(chosen_path) as f, open(named_path) as g, open(one_path) as h:
        a, b, c = json.load(f), json.load(g), json.load(h)
    fastest = a["blas"]["fastest"]
    checks = [
        (a["blas"]["library"].startswith("OpenBLAS "), "the BLAS is OpenBLAS: %s" % a["blas"]),
        ("kernels (chosen by" in chosen.stdout, "the kernels named beside the GEMM peak"),
        (not fastest or LEVELS.get(a["blas"]["kernel"].lower()) == LEVELS.get(fastest.lower()),
         "left to itself, it runs the processor's fastest kernels (%s): %s"
         % (fastest, a["blas"])),
        ("Note:" not in chosen.stdout, "no note when the kernels are the fastest"),
        (b["blas"]["kernel"] == "Prescott" and b["blas"]["chosen_by"] == "OPENBLAS_CORETYPE",
         "OPENBLAS_CORETYPE=Prescott is kept: %s" % b["blas"]),
        (a["blas"]["thread_timeout"] == "4", "left to itself, OpenBLAS's idle threads sleep at "
         "once (OPENBLAS_THREAD_TIMEOUT 4): %s" % a["blas"]),
        (b["blas"]["thread_timeout"] == "20", "OPENBLAS_THREAD_TIMEOUT=20 is kept: %s" % b["blas"]),
        (("Note:" in named.stdout and "unset OPENBLAS_CORETYPE" in named.stdout) ==
         (LEVELS.get(fastest.lower(), 0) > 1), "a note with what to do when faster kernels run"),
        (abs(a["weights_l2"] - b["weights_l2"]) <= 1e-12 * b["weights_l2"],
         "the same weights with both kernels: weights_l2 %.17g and %.17g"
         % (a["weights_l2"], b["weights_l2"])),
        (abs(a["weights_l2"] - c["weights_l2"]) <= 1e-12 * c["weights_l2"],
         "the same weights with --threads 1: weights_l2 %.17g" % c["weights_l2"]),
    ]
    for good, what in checks:
        print("%s %s" % ("ok:" if good else "FAIL:", what))
        if not good:
            failures.append(what)


def learns():
    trace = os.path.join(SCRATCH, "trace.json")
    args = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32", "--batch_size", "32",
            "--steps", "250", "--lr", "1e-2", "--sample", "80", "--trace", trace]
    r = report_of(1, args, "learns")
    if r is None:
        return
    ok = r["val_loss"] < r["bigram_entropy"]
    print("%s 250 steps on the King James Bible: validation loss %.4f, bigram entropy %.4f, "
          "%.0f tokens/s" % ("ok:" if ok else "FAIL:", r["val_loss"], r["bigram_entropy"],
                             r["tokens_per_second"]))
    if not ok:
        failures.append("the validation loss did not fall below the bigram entropy")
    checks = [
        (len(r["history"]) == 250 and r["history"][0]["loss"] > r["history"][-1]["loss"],
         "the history holds every step and the loss falls"),
        (len(r["validation"]) == 10, "a validation loss every tenth of the run"),
        (len(r["sample"]) == 80, "a sample of 80 characters"),
        (0 < r["mfu"] < 1, "an MFU between 0 and 1"),
        (all(r["ranks"][0]["peak_bytes"][k] > 0 for k in
             ("parameters", "gradients", "optimizer", "activations", "transient")),
         "every memory category measured"),
    ]
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e.get("name") for e in events if e.get("ph") == "X"}
    checks.append(({"forward", "backward"} <= names, "the trace holds the forward and backward passes"))
    for good, what in checks:
        print("%s %s" % ("ok:" if good else "FAIL:", what))
        if not good:
            failures.append(what)


try:
    {"layouts": layouts, "tensor": tensor, "context": context, "experts": experts,
     "pipeline": pipeline, "buckets": buckets, "memory": memory, "zero": zero, "bf16": bf16,
     "llama": llama, "cli": cli,
     "blas": blas, "learns": learns}[MODE]()
finally:
    shutil.rmtree(SCRATCH, ignore_errors=True)
sys.exit(1 if failures else 0)
