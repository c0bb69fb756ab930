# Assignment 3's self-tests (Parts 10-13): the reference and the starter, and each part's honest
# mistakes, each costing its own function only (wrong_moe_counts_guessed under three seeds:
# other_seeds), named in the feedback. How they are registered: selftests.cmake.

# The reference gets full marks, and the leaderboard its mean MFU over Part 13's cases; the
# starter none.
dtk_grade_selftest(assignment3_solutions ASSIGNMENT 3
                   EXPECT 10=full 11=full 12=full 13=full
                   EXPECT_OUTPUT "Seed 7" "Leaderboard +Part 13: mean MFU +0\\.6162")
dtk_grade_selftest(assignment3_starter ASSIGNMENT 3 BASE starter
                   EXPECT 10=zero 11=zero 12=zero 13=zero
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::qkv_columns"
                                 "not implemented yet: NotImplemented: dtk::sp_reduce_scatter"
                                 "not implemented yet: NotImplemented: dtk::ring_attention_backward"
                                 "not implemented yet: NotImplemented: dtk::moe_dispatch"
                                 "not implemented yet: NotImplemented: dtk::plan_training"
                                 "Leaderboard +Part 13: mean MFU +0\\.0000")

# Part 10 (issue 21).
dtk_grade_mistake(wrong_qkv_contiguous_block ASSIGNMENT 3 COSTS qkv_columns=half
                  EXPECT_OUTPUT "a contiguous block of the fused \\[Q \\| K \\| V\\] columns")
dtk_grade_mistake(wrong_embedding_unmasked ASSIGNMENT 3 COSTS vocab_parallel_embedding=half
                  EXPECT_OUTPUT "no mask: .* every token is counted on every rank")
# Without the max only the item of logits of ±10⁴ is lost (its results are inf and NaN).
dtk_grade_mistake(wrong_cross_entropy_no_max ASSIGNMENT 3 COSTS vocab_parallel_cross_entropy=minor
                  EXPECT_OUTPUT "Wrong on p=2 double rows=6 local_vocab=9 large")
dtk_grade_mistake(wrong_cross_entropy_target_everywhere ASSIGNMENT 3
                  COSTS vocab_parallel_cross_entropy=half
                  EXPECT_OUTPUT "the target's logit taken on every rank")
# Gathering the logits gives the right values but loses the items that count the bytes.
dtk_grade_mistake(wrong_cross_entropy_gathers_logits ASSIGNMENT 3
                  COSTS vocab_parallel_cross_entropy=minor
                  EXPECT_OUTPUT "bytes sent beyond the [0-9]+ that Allgathers of 4 N values send")
dtk_grade_mistake(wrong_sp_all_gather_no_interleave ASSIGNMENT 3 COSTS sp_all_gather=half
                  EXPECT_OUTPUT "the batch not interleaved")
dtk_grade_mistake(forbidden_sp_all_gather_sendrecv ASSIGNMENT 3 COSTS sp_all_gather=zero
                  EXPECT_OUTPUT "dtk::sp_all_gather gets no points" "Communicator::Sendrecv")
# From an outside catalogue (issue 31). (log s + m) − t loses float's precision at logits of
# ±10⁴, which only a float case of them shows; a function that never throws
# std::invalid_argument loses the bad-argument item of its function.
dtk_grade_mistake(wrong_cross_entropy_loss_order ASSIGNMENT 3
                  COSTS vocab_parallel_cross_entropy=minor
                  EXPECT_OUTPUT "Wrong on [^;]*float rows=[0-9]+ local_vocab=[0-9]+ large")
dtk_grade_mistake(wrong_attention_heads_no_refusal ASSIGNMENT 3 COSTS attention_heads=minor)

# Part 11: the ring functions are checked on the grader's own positions, so a wrong
# cp_positions costs 11.1 alone; a merge weighted by count also costs the forward that merges
# with it (its feedback says so), as a wrong zero_shard_range costs ZeRO-1. A deadlock on 1 MB
# blocks costs those cases only; a collective inside costs that function.
dtk_grade_mistake(wrong_cp_zigzag_swapped ASSIGNMENT 3 COSTS cp_positions=half
                  EXPECT_OUTPUT "the two chunks swapped")
dtk_grade_mistake(wrong_merge_no_max_shift ASSIGNMENT 3 COSTS merge_attention=half
                  EXPECT_OUTPUT "the merge without the max shift")
dtk_grade_mistake(wrong_merge_count_weighted ASSIGNMENT 3
                  COSTS merge_attention=half ring_attention_forward=half
                  EXPECT_OUTPUT "the two sides weighted equally" "merged with equal weights")
dtk_grade_mistake(wrong_cp_local_causal_mask ASSIGNMENT 3 COSTS ring_attention_forward=half
                  EXPECT_OUTPUT "the causal mask by local index")
dtk_grade_mistake(wrong_cp_dkv_not_home ASSIGNMENT 3 COSTS ring_attention_backward=half
                  EXPECT_OUTPUT "their last hop home left out")
dtk_grade_mistake(deadlock_cp_ring_blocking_sends ASSIGNMENT 3 COSTS ring_attention_forward=minor
                  EXPECT_OUTPUT "Wrong on p=2 float batch=16 heads=4 d=512 s=8"
                                "probably a deadlock")
dtk_grade_mistake(forbidden_cp_allgather ASSIGNMENT 3 COSTS ring_attention_forward=zero
                  EXPECT_OUTPUT "Communicator::Allgather")
# From an outside catalogue (issue 31): a zig-zag length that cp_size divides and 2 · cp_size
# does not (12 on 4 ranks) must be refused too.
dtk_grade_mistake(wrong_cp_zigzag_length_unchecked ASSIGNMENT 3 COSTS cp_positions=minor
                  EXPECT_OUTPUT "cp_positions\\(12, 4, [0-9]+, true\\)")

# Part 12.
dtk_grade_mistake(wrong_moe_grouped_by_source ASSIGNMENT 3 COSTS moe_dispatch=half
                  EXPECT_OUTPUT "the rows grouped by source rank first")
dtk_grade_mistake(wrong_moe_counts_guessed ASSIGNMENT 3 COSTS moe_dispatch=half ${other_seeds}
                  EXPECT_OUTPUT "exchange the counts first")
dtk_grade_mistake(wrong_moe_broadcast ASSIGNMENT 3 COSTS moe_dispatch=minor
                  EXPECT_OUTPUT "bytes sent beyond each row sent once")
dtk_grade_mistake(wrong_moe_owner_round_robin ASSIGNMENT 3 COSTS moe_dispatch=half
                  EXPECT_OUTPUT "the experts dealt round-robin")
dtk_grade_mistake(wrong_moe_gates_ignored ASSIGNMENT 3 COSTS moe_combine=half
                  EXPECT_OUTPUT "the gates ignored")
dtk_grade_mistake(wrong_moe_gates_twice ASSIGNMENT 3 COSTS moe_combine=half
                  EXPECT_OUTPUT "each gate applied twice")
# A correct alternative from an outside catalogue (issue 31) costs nothing: one count per rank
# exchanged, each row's expert id sent with it (expert_parallel.hpp allows it), so a rank
# without tokens moves fewer bytes than the reference's count exchange.
dtk_grade_mistake(alternative_moe_rank_counts ASSIGNMENT 3 COSTS moe_dispatch=full)

# Part 13 (scored by tiers of MFU against the kit's search): a planner that ignores memory gets
# 0 where the fastest plan does not fit, a naive one (data parallelism only) low tiers, a good
# one without context parallelism partial tiers. Plans do not depend on the seed: one seed each.
dtk_grade_mistake(planner_ignores_memory ASSIGNMENT 3 COSTS plan_training=half
                  EXPECT_OUTPUT "mfu 0\\.0000, 0\\.000 of the reference's"
                                "invalid: needs [0-9.]+ GB on the")
dtk_grade_mistake(planner_data_parallel_only ASSIGNMENT 3 COSTS plan_training=half
                  EXPECT_OUTPUT "your plan tp=1 cp=1 pp=1 dp=8 ")
dtk_grade_mistake(planner_no_context_parallel ASSIGNMENT 3 COSTS plan_training=minor
                  EXPECT_OUTPUT "0\\.25 of this case's points")
# A planner without expert parallelism (an outside catalogue's, issue 31) loses the cases where
# it is what lets a small batch of long sequences spread over many GPUs (the patch names some).
dtk_grade_mistake(planner_no_expert_parallel ASSIGNMENT 3 COSTS plan_training=minor)

# --parts grades the parts asked for and leaves the others out of the run, the table and the
# totals.
dtk_grade_selftest(assignment3_starter_part12 ASSIGNMENT 3 BASE starter PARTS 12
                   EXPECT 12=zero 10=absent 11=absent 13=absent
                   EXPECT_OUTPUT "Graded: Part 12 only \\(--parts\\)"
                                 "not implemented yet: NotImplemented: dtk::moe_dispatch")
