// The backend's ops, each written once, with its contract (docs/design.md, "Backends").
// No include guard, on purpose: a file defines ZT_OP, includes this list, and gets one
// expansion per op. From it come the table's slots (backend.h), each backend's table
// (backend_cpu.c, backend_cuda.c: `.op = cpu_op`), the registry's check that every slot is
// filled (backend.c), the --profile decorator's wrappers (backend_profile.c) and the tests
// that prove those (tests/test_backend.c).
//
//   ZT_OP(returns, name, group, phase, flops, params)
//   returns  the C type, as a code: void, int, double, or ptr (void *) (ZT_OP_RET, backend.h)
//   name     the slot's name; a backend's function for it is <backend>_<name>
//   group    ZT_OPS_ALL: every backend fills it; ZT_OPS_BF16: a backend whose caps.bf16 is 1
//            fills it, one without leaves it NULL (nothing else may be NULL)
//   phase    where --profile counts its time (src/core/profile.h), or ZT_OP_UNTIMED
//   flops    what it must compute, for --profile (0: not counted), from its parameters
//   params   its parameters after the backend, as (type, name) pairs: (int, M)(int, N)
//
// To add an op: write its entry here with its contract (shapes, which arguments may alias,
// what NULL means), then a function <backend>_<name> in every backend (a backend that lacks
// it does not compile), and its test against the CPU in tests/test_kernels.c or
// tests/test_cuda.c. The slot, the check and the profile's wrapper follow from the entry.
//
// The contract, for every op:
// - Pointers are device memory (what alloc returned, plus offsets) unless the entry says
//   host memory; on the CPU they are host pointers. Host code never dereferences a device
//   pointer: it maps it.
// - Outputs first, inputs const, sizes last. Shapes use N = tokens (B*T), C = channels,
//   OC = output channels; buffers are row-major and do not overlap unless the entry says so.
// - A backward ADDS into parameter gradients (accumulation over micro-batches); what it
//   does to activation gradients is said per op.
// - A backend with a stream issues its work there, in order: work may still run when an op
//   returns, except where a result comes back to the host (map with read, sum, sumsq,
//   sumsq_bf16, a copy to the host): those wait for it.
// - A failure of the backend itself (out of device memory, a launch error) is fatal with a
//   message naming it; user input never reaches a backend unchecked.
// The CPU's kernels.h and the CUDA headers say how each backend computes an op (threads,
// tiling, summation order), never a different meaning.
#ifndef ZT_OP
#error "define ZT_OP(returns, name, group, phase, flops, params) before including backend_ops.h"
#endif

// ---- what the products run on ----
// One line on the library and kernels (the run's banner); the same as one JSON object
// without a newline (the log's header line).
ZT_OP(void, describe, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (char *, buf)(size_t, size))
ZT_OP(void, write_json, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (FILE *, f))

// ---- memory ----
// `bytes` of device memory, zero-filled, counted under `cat` by the tagged allocator
// (memory.h). NULL only for bytes == 0. Free with free (NULL accepted).
ZT_OP(ptr, alloc, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (zt_mem_category, cat)(size_t, bytes))
ZT_OP(void, free, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (void *, ptr))
// dst[0..bytes) = byte.
ZT_OP(void, memset, ZT_OPS_ALL, ZT_PHASE_MEMORY, 0, (void *, dst)(int, byte)(size_t, bytes))
// Copies between host and device (kind says which side each pointer is on); dst == src
// copies nothing. Host-to-device and device-to-host copies return once done.
ZT_OP(void, copy, ZT_OPS_ALL, ZT_PHASE_MEMORY, 0,
      (void *, dst)(const void *, src)(size_t, bytes)(zt_copy_kind, kind))
// A host view of device memory [dev, dev + bytes): with `read` it holds the device's values,
// without it zeros. unmap with `write` stores the view back into the device memory, then
// releases the view. On the CPU the view is `dev` itself (no copy). For host code that is
// not in the step: initialization, checkpoints, checks (and a micro-batch's tokens).
ZT_OP(ptr, map, ZT_OPS_ALL, ZT_PHASE_MEMORY, 0, (void *, dev)(size_t, bytes)(int, read))
ZT_OP(void, unmap, ZT_OPS_ALL, ZT_PHASE_MEMORY, 0,
      (void *, dev)(void *, host)(size_t, bytes)(int, write))
// Waits until all issued work is done; a failure in it is fatal (with the kernel's error).
// Called at every step boundary.
ZT_OP(void, sync, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, )
// The queue its work runs on (a cudaStream_t), for a comm backend that orders its
// collectives with the kernels (comm/comm_nccl.h); NULL where work runs as it is issued.
ZT_OP(ptr, stream, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, )
// The device it runs on: returns its index as this process numbers them (after
// CUDA_VISIBLE_DEVICES) and writes to id (size bytes, NUL-terminated, host memory) a name of
// the physical device that is the same in every process and differs between devices (CUDA:
// host name and PCI bus id, what NCCL compares to refuse two ranks on one GPU), so the grid
// can tell which ranks share one. -1 and "" on a backend without a device.
ZT_OP(int, device, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (char *, id)(size_t, size))
// The memory of that device now (the fit check before a run allocates): 1 with *free_b and
// *total_b as the device reports them (CUDA: cudaMemGetInfo) and *held the bytes this backend
// holds there through its allocator (after open: its fixed buffers, caps.fixed_workspace),
// already missing from *free_b but counted by the planner too; 0 (all three 0) on a backend
// without device memory (the CPU: host memory is checked). Host pointers.
ZT_OP(int, memory_info, ZT_OPS_ALL, ZT_OP_UNTIMED, 0,
      (size_t *, free_b)(size_t *, total_b)(size_t *, held))
// Host memory its copies are fastest from and to (pinned on a GPU): `bytes`, zero-filled, for
// the comm staging buffers; NULL only for 0 bytes, out of memory is fatal. Counted under
// `cat` where host memory is the backend's memory (the CPU), not on a GPU (the allocator's
// counts are device memory there). Free with host_free (NULL accepted).
ZT_OP(ptr, host_alloc, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (zt_mem_category, cat)(size_t, bytes))
ZT_OP(void, host_free, ZT_OPS_ALL, ZT_OP_UNTIMED, 0, (void *, ptr))

// ---- the model's kernels ----
// Row-major C = alpha op(A) op(B) + beta C, op(X) = X or X^T (trans_a, trans_b); (M, N)
// result, K inner, BLAS's leading dimensions.
ZT_OP(void, gemm, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * M * N * K,
      (int, trans_a)(int, trans_b)(int, M)(int, N)(int, K)(float, alpha)(const float *, A)
      (int, lda)(const float *, B)(int, ldb)(float, beta)(float *, C)(int, ldc))
// out (N, C) = wte[tokens] + wpe[position]; token n sits at position n % T. wte holds rows
// [vocab_lo, vocab_lo + vocab_rows) of the padded vocabulary; tokens outside that slice
// (another tp rank's) contribute zeros. wpe NULL adds no positions (under tp only one rank
// adds them before the all-reduce). tokens: (N).
ZT_OP(void, encoder_forward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(const int32_t *, tokens)(const float *, wte)(const float *, wpe)
      (int, vocab_lo)(int, vocab_rows)(int, N)(int, T)(int, C))
// dwte (vocab_rows, C) +=, dwpe (T, C) += (NULL to skip); dout (N, C).
ZT_OP(void, encoder_backward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, dwte)(float *, dwpe)(const float *, dout)(const int32_t *, tokens)
      (int, vocab_lo)(int, vocab_rows)(int, N)(int, T)(int, C))
// out (N, C), mean (N), rstd (N) = the LayerNorm of inp (N, C) with w, b (C).
ZT_OP(void, layernorm_forward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(float *, mean)(float *, rstd)(const float *, inp)(const float *, w)
      (const float *, b)(int, N)(int, C))
// res (N, C) = a + b, then layernorm_forward of res into out, mean, rstd: the residual add
// and the LayerNorm that follows it in one pass. res may be a or b; out may alias none of the
// others. The CPU's is bit-identical to add then layernorm_forward; a GPU's may differ as
// its layernorm_forward does.
ZT_OP(void, residual_layernorm_forward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, res)(float *, out)(float *, mean)(float *, rstd)(const float *, a)
      (const float *, b)(const float *, w)(const float *, bias)(int, N)(int, C))
// dinp (N, C) +=; dw, db (C) +=.
ZT_OP(void, layernorm_backward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, dinp)(float *, dw)(float *, db)(const float *, dout)(const float *, inp)
      (const float *, w)(const float *, mean)(const float *, rstd)(int, N)(int, C))
// out (N, OC) = inp (N, C) @ w^T (w: (OC, C)) + bias (OC, NULL for none).
ZT_OP(void, matmul_forward, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, out)(const float *, inp)(const float *, w)(const float *, bias)(int, N)(int, C)
      (int, OC))
// dinp (N, C) = dout @ w, added when accumulate_dinp; dw (OC, C) += dout^T @ inp;
// dbias (OC) += column sums of dout (NULL to skip).
ZT_OP(void, matmul_backward, ZT_OPS_ALL, ZT_PHASE_GEMM, 4.0 * N * C * OC,
      (float *, dinp)(float *, dw)(float *, dbias)(const float *, dout)(const float *, inp)
      (const float *, w)(int, N)(int, C)(int, OC)(int, accumulate_dinp))
// The same for a weight stored (in, out) (row-parallel layers, layout.h): out (N, OC) =
// inp (N, C) @ w (C, OC) + bias; dinp = dout @ w^T; dw (C, OC) += inp^T @ dout.
ZT_OP(void, matmul_in_out_forward, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, out)(const float *, inp)(const float *, w)(const float *, bias)(int, N)(int, C)
      (int, OC))
ZT_OP(void, matmul_in_out_backward, ZT_OPS_ALL, ZT_PHASE_GEMM, 4.0 * N * C * OC,
      (float *, dinp)(float *, dw)(float *, dbias)(const float *, dout)(const float *, inp)
      (const float *, w)(int, N)(int, C)(int, OC)(int, accumulate_dinp))
// The two halves of matmul_backward and matmul_in_out_backward, for a backward split into an
// input-gradient pass and a weight-gradient pass run later (the zero-bubble schedules,
// docs/design.md "Pipeline"): _input writes (or adds to) dinp, _weight adds to dw and dbias,
// each by the calls the combined op makes, so the halves give its values bit for bit (the
// combined op is the two halves, input first).
ZT_OP(void, matmul_backward_input, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, dinp)(const float *, dout)(const float *, w)(int, N)(int, C)(int, OC)
      (int, accumulate_dinp))
ZT_OP(void, matmul_backward_weight, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, dw)(float *, dbias)(const float *, dout)(const float *, inp)(int, N)(int, C)
      (int, OC))
ZT_OP(void, matmul_in_out_backward_input, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, dinp)(const float *, dout)(const float *, w)(int, N)(int, C)(int, OC)
      (int, accumulate_dinp))
ZT_OP(void, matmul_in_out_backward_weight, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, dw)(float *, dbias)(const float *, dout)(const float *, inp)(int, N)(int, C)
      (int, OC))
// out[i] = gelu(inp[i]) (tanh form, gelu_math.h).
ZT_OP(void, gelu_forward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(const float *, inp)(size_t, n))
// pre (N, OC) = matmul_forward(inp, w, bias), out (N, OC) = gelu(pre), both kept (the MLP's
// c_fc; the backward reads pre): the bias and the GELU in one pass on a GPU. The CPU's is
// bit-identical to matmul_forward then gelu_forward. --profile counts it as a product (its
// time is mostly the GEMM's).
ZT_OP(void, matmul_gelu_forward, ZT_OPS_ALL, ZT_PHASE_GEMM, 2.0 * N * C * OC,
      (float *, pre)(float *, out)(const float *, inp)(const float *, w)(const float *, bias)
      (int, N)(int, C)(int, OC))
// dinp = gelu'(inp) * dout (written, not added).
ZT_OP(void, gelu_backward, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, dinp)(const float *, inp)(const float *, dout)(size_t, n))
// out = a + b (out may be a or b).
ZT_OP(void, add, ZT_OPS_ALL, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(const float *, a)(const float *, b)(size_t, n))
// Causal self-attention of NH heads of size hs = C/NH over qkv (B, T, 3C) laid out as
// [q heads | k heads | v heads] per token. out (B, T, C); lse (B, NH, T) is each score row's
// log-sum-exp, kept for the backward, which recomputes the probabilities instead of storing
// (B, NH, T, T) of them. work: zt_backend_attention_workspace(be, T) floats. Flops: the
// products S = QK^T and PV, 2 hs flops per (row, column <= row) pair and head.
ZT_OP(void, attention_forward, ZT_OPS_ALL, ZT_PHASE_ATTENTION,
      2 * 2.0 * B * C * (T * (T + 1.0) / 2.0),
      (float *, out)(float *, lse)(const float *, qkv)(float *, work)(int, B)(int, T)(int, C)
      (int, NH))
// dqkv (B, T, 3C) written (not added). Flops: S recomputed, dP, dQ, dK, dV.
ZT_OP(void, attention_backward, ZT_OPS_ALL, ZT_PHASE_ATTENTION,
      5 * 2.0 * B * C * (T * (T + 1.0) / 2.0),
      (float *, dqkv)(const float *, dout)(const float *, qkv)(const float *, lse)
      (float *, work)(int, B)(int, T)(int, C)(int, NH))
// n_q query rows against a KV cache (generation, src/model/generate.c: a prompt's chunk, or
// one new token). Query i sits at position n_pos - n_q + i and sees the cache up to it: for
// each of NH heads of hs = C/NH, out[i, h] = softmax(q[i, h] . k[j, h] / sqrt(hs) over j <=
// that position) @ v[.., h]. q: n_q rows 3C apart (the q third of a qkv buffer's rows); out
// (n_q, C); k, v (n_pos, C), the cache's positions 0..n_pos-1, the chunk's own rows
// included. work: NH * n_q * n_pos floats. The rows are the same softmax as
// attention_forward's, so a cached decode matches the forward over the whole prefix to
// rounding. Every backend has it (the decoder relies on it; the check refuses a NULL).
ZT_OP(void, attention_decode, ZT_OPS_ALL, ZT_PHASE_ATTENTION, 4.0 * n_q * n_pos * C,
      (float *, out)(const float *, q)(const float *, k)(const float *, v)(float *, work)
      (int, n_q)(int, n_pos)(int, C)(int, NH))
// Cross entropy over rows of logits (n, ld) holding columns [vocab_lo, vocab_lo + ld) of the
// padded vocabulary, of which the first n_valid are real tokens (the rest padding, never
// given probability). Three passes; between them the tp ranks of a split vocabulary take
// the max of row_max and the sums of sumexp and target_logit (src/model/vocab_loss.c), so
// each pass sees the whole row's numbers. targets: (n).
// row_max (n): max of the row's real columns (-inf when there are none); target_logit (n):
// the target's logit when this slice holds it, else 0.
ZT_OP(void, ce_slice_stats, ZT_OPS_ALL, ZT_PHASE_LOSS, 0,
      (float *, row_max)(float *, target_logit)(const float *, logits)
      (const int32_t *, targets)(int, n)(int, n_valid)(int, vocab_lo)(int, ld))
// sumexp (n) = sum over the real columns of expf(x - row_max).
ZT_OP(void, ce_slice_sumexp, ZT_OPS_ALL, ZT_PHASE_LOSS, 0,
      (float *, sumexp)(const float *, logits)(const float *, row_max)(int, n)(int, n_valid)
      (int, ld))
// losses (n) = lse - target_logit, lse = row_max + log(sumexp); dlogits (n, ld) = scale *
// (softmax - onehot) on the real columns, 0 on the padding. dlogits may alias logits.
ZT_OP(void, ce_slice_finish, ZT_OPS_ALL, ZT_PHASE_LOSS, 0,
      (float *, dlogits)(float *, losses)(const float *, logits)(const int32_t *, targets)
      (const float *, row_max)(const float *, sumexp)(const float *, target_logit)
      (float, scale)(int, n)(int, n_valid)(int, vocab_lo)(int, ld))

// ---- reductions ----
// Sum of x[0..n) in double, back on the host. Its callers sum a micro-batch's per-token
// losses: the order is fixed, so the result does not change from run to run.
ZT_OP(double, sum, ZT_OPS_ALL, ZT_PHASE_GRAD_NORM, 0, (const float *, x)(size_t, n))
// *acc += sum of x[0..n) in double, as `sum`, with acc one double of the backend's memory:
// nothing comes back, so a GPU need not wait (the training loss stays on the device until
// the step's end, when one copy reads it).
ZT_OP(void, sum_into, ZT_OPS_ALL, ZT_PHASE_GRAD_NORM, 0,
      (double *, acc)(const float *, x)(size_t, n))
// out[0] += sum of x[i]^2 over the finite x[i] (in double), out[1] += count of the
// non-finite ones; out: 2 doubles of host memory.
ZT_OP(void, sumsq, ZT_OPS_ALL, ZT_PHASE_GRAD_NORM, 0,
      (double *, out)(const float *, x)(size_t, n))

// ---- optimizer kernels (optim/) ----
// AdamW on n elements: p, m, v updated from g (adamw_math.h) with weight decay wd; h is host
// memory.
ZT_OP(void, adamw, ZT_OPS_ALL, ZT_PHASE_OPTIMIZER, 0,
      (float *, p)(float *, m)(float *, v)(const float *, g)(size_t, n)(float, wd)
      (const zt_adamw_hparams *, h))
// 8-bit AdamW on n elements in blocks of `block` values (optim/adamw8bit.h; block <=
// ZT_Q8_MAX_BLOCK): per block, dequantize qm/qv with absmax_m/absmax_v[j], update,
// requantize with the block's new absmax (max |value| after the update, so nothing is
// clipped). map_m, map_v: the 256-entry code maps, host memory; h host memory.
ZT_OP(void, adamw8bit, ZT_OPS_ALL, ZT_PHASE_OPTIMIZER, 0,
      (float *, p)(const float *, g)(uint8_t *, qm)(uint8_t *, qv)(float *, absmax_m)
      (float *, absmax_v)(size_t, n)(int, block)(const float *, map_m)(const float *, map_v)
      (float, wd)(const zt_adamw_hparams *, h))

// ---- bf16 mixed precision (docs/design.md, "bf16") ----
// Parameters and their gradients are bf16; activations fp32 or bf16 as each entry says
// (docs/design.md, "bf16", which tensor has which type). Each op is its fp32
// counterpart's arithmetic on the widened (exact) bf16 values. An op that adds into a bf16
// gradient starts its fp32 sums from the widened gradient and rounds each element once per
// call (round to nearest even, bf16_math.h).
//
// C (M, N) = alpha op(A) op(B) + beta C, row-major with gemm's arguments, A, B and C each
// fp32 or bf16 (at, bt, ct). The products have bf16 operands: an fp32 A or B is rounded to
// bf16 first (what a tensor core or a bf16 dot product computes); the sums are fp32. A bf16 C
// is widened for beta and rounded once at the end. work: the caller's scratch of
// caps.gemm_mixed_workspace bytes (any M, N, K: the backend tiles).
ZT_OP(void, gemm_mixed, ZT_OPS_BF16, ZT_PHASE_GEMM, 2.0 * M * N * K,
      (int, trans_a)(int, trans_b)(int, M)(int, N)(int, K)(float, alpha)(const void *, A)
      (zt_dtype, at)(int, lda)(const void *, B)(zt_dtype, bt)(int, ldb)(float, beta)
      (void *, C)(zt_dtype, ct)(int, ldc)(void *, work))
// A product and the element-wise pass after it, which a GPU runs in the product's epilogue
// (cuBLASLt's BIAS and DGELU) and the CPU's oneDNN path for BIAS as the matmul primitive's
// own bias: C (M, N) = op(A) op(B), row-major as gemm_mixed's with alpha 1, A fp32 or bf16
// (at), B bf16, C contiguous (ldc = N) and written, then
//   ZT_EPILOGUE_BIAS:  + vec (N values, every row): C fp32 or bf16 (ct), the fp32 sum of
//                      product and bias rounded once (bias_broadcast_bf16, then gemm_mixed
//                      onto it with beta 1; an fp32 C: gemm_mixed, then bias_forward_bf16);
//   ZT_EPILOGUE_DGELU: times gelu'(aux), aux (M, N) bf16 the GELU's input: C bf16, the fp32
//                      product times gelu' rounded once (gemm_mixed into wide, then
//                      gelu_backward_bf16).
// Those ops are its definition and a backend's unfused form (zt_gemm_epilogue_unfused); a
// fused one gives the same values within its own summation order and gelu'. vec, aux NULL
// where the epilogue does not read them; wide: M N floats of the caller's scratch for the
// unfused DGELU (NULL for BIAS). work as gemm_mixed's. Returns 1 where the backend ran it
// fused, 0 where it ran the unfused ops (the model does not care; a test does).
ZT_OP(int, gemm_epilogue_bf16, ZT_OPS_BF16, ZT_PHASE_GEMM, 2.0 * M * N * K,
      (zt_epilogue, ep)(int, trans_a)(int, trans_b)(int, M)(int, N)(int, K)(const void *, A)
      (zt_dtype, at)(int, lda)(const zt_bf16 *, B)(int, ldb)(void *, C)(zt_dtype, ct)
      (const zt_bf16 *, vec)(const zt_bf16 *, aux)(float *, wide)(void *, work))
// One line on what gemm_mixed's products run on (a bf16 run's banner), e.g. the CPU's
// "bf16 GEMM: oneDNN ..." or "bf16 GEMM: fp32 fallback ...": its speed depends on it.
ZT_OP(void, describe_gemm_mixed, ZT_OPS_BF16, ZT_OP_UNTIMED, 0, (char *, buf)(size_t, size))
// out (N, OC) += bias (OC).
ZT_OP(void, bias_forward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(const zt_bf16 *, bias)(int, N)(int, OC))
// dbias (OC) += column sums of dout (N, OC), dout fp32 or bf16 (dout_dt; widened, exact).
ZT_OP(void, bias_backward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, dbias)(const void *, dout)(zt_dtype, dout_dt)(int, N)(int, OC))
// encoder_forward / encoder_backward with bf16 wte, wpe and their gradients; the backward
// adds each row's contributions in token order, as the fp32 one, and rounds once.
ZT_OP(void, encoder_forward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(const int32_t *, tokens)(const zt_bf16 *, wte)(const zt_bf16 *, wpe)
      (int, vocab_lo)(int, vocab_rows)(int, N)(int, T)(int, C))
ZT_OP(void, encoder_backward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, dwte)(zt_bf16 *, dwpe)(const float *, dout)(const int32_t *, tokens)
      (int, vocab_lo)(int, vocab_rows)(int, N)(int, T)(int, C))
// layernorm_forward with bf16 weight and bias; out is fp32 or bf16 (out_dt: the row computed
// in fp32, rounded once).
ZT_OP(void, layernorm_forward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (void *, out)(zt_dtype, out_dt)(float *, mean)(float *, rstd)(const float *, inp)
      (const zt_bf16 *, w)(const zt_bf16 *, b)(int, N)(int, C))
// The residual stream in bf16 (docs/design.md, "bf16"). out[i] = a[i] + b[i], a bf16 (the
// stream, widened: exact), b fp32 (a projection's output summed over tp): the fp32 sum rounded
// once; out may alias a.
ZT_OP(void, add_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, out)(const zt_bf16 *, a)(const float *, b)(size_t, n))
// layernorm_forward_bf16 of a bf16 inp (widened, exact): the same row arithmetic.
ZT_OP(void, layernorm_forward_bf16in, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (void *, out)(zt_dtype, out_dt)(float *, mean)(float *, rstd)(const zt_bf16 *, inp)
      (const zt_bf16 *, w)(const zt_bf16 *, b)(int, N)(int, C))
// add_bf16 of a and b into res, then layernorm_forward_bf16in of res: the same values as the
// two ops (the CPU's bit for bit), in one pass where the backend fuses them.
ZT_OP(void, residual_layernorm_forward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, res)(void *, out)(zt_dtype, out_dt)(float *, mean)(float *, rstd)
      (const zt_bf16 *, a)(const float *, b)(const zt_bf16 *, w)(const zt_bf16 *, bias)
      (int, N)(int, C))
// encoder_forward_bf16 with a bf16 out: the fp32 sum rounded once.
ZT_OP(void, encoder_forward_bf16out, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, out)(const int32_t *, tokens)(const zt_bf16 *, wte)(const zt_bf16 *, wpe)
      (int, vocab_lo)(int, vocab_rows)(int, N)(int, T)(int, C))
// layernorm_backward_bf16 of a bf16 inp (widened, exact): the same arithmetic.
ZT_OP(void, layernorm_backward_bf16in, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (void *, dinp)(zt_dtype, dinp_dt)(zt_bf16 *, dw)(zt_bf16 *, db)(const float *, dout)
      (const zt_bf16 *, inp)(const zt_bf16 *, w)(const float *, mean)(const float *, rstd)
      (int, N)(int, C))
// out (N, OC): every row = bias (OC), exact: a product into a bf16 out then adds onto it
// with beta = 1 (gemm_mixed), so product and bias are summed in fp32 and rounded once.
ZT_OP(void, bias_broadcast_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, out)(const zt_bf16 *, bias)(int, N)(int, OC))
// gelu_forward on bf16 inp (widened, exact), out rounded to bf16.
ZT_OP(void, gelu_forward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, out)(const zt_bf16 *, inp)(size_t, n))
// gelu_backward on bf16 inp (widened, exact): dinp = gelu'(inp) * dout, written (not added),
// fp32 or bf16 (dinp_dt: the fp32 value rounded once); an fp32 dinp may be dout.
ZT_OP(void, gelu_backward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (void *, dinp)(zt_dtype, dinp_dt)(const zt_bf16 *, inp)(const float *, dout)(size_t, n))
// ce_slice_stats, ce_slice_sumexp, ce_slice_finish over bf16 logits (widened, exact): the
// fp32 ops' arithmetic on those values, the statistics and losses fp32; dlogits (bf16, may
// alias logits) is the fp32 gradient rounded once.
ZT_OP(void, ce_slice_stats_bf16, ZT_OPS_BF16, ZT_PHASE_LOSS, 0,
      (float *, row_max)(float *, target_logit)(const zt_bf16 *, logits)
      (const int32_t *, targets)(int, n)(int, n_valid)(int, vocab_lo)(int, ld))
ZT_OP(void, ce_slice_sumexp_bf16, ZT_OPS_BF16, ZT_PHASE_LOSS, 0,
      (float *, sumexp)(const zt_bf16 *, logits)(const float *, row_max)(int, n)(int, n_valid)
      (int, ld))
ZT_OP(void, ce_slice_finish_bf16, ZT_OPS_BF16, ZT_PHASE_LOSS, 0,
      (zt_bf16 *, dlogits)(float *, losses)(const zt_bf16 *, logits)(const int32_t *, targets)
      (const float *, row_max)(const float *, sumexp)(const float *, target_logit)
      (float, scale)(int, n)(int, n_valid)(int, vocab_lo)(int, ld))
// layernorm_backward with bf16 w, dw, db.
ZT_OP(void, layernorm_backward_bf16, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (float *, dinp)(zt_bf16 *, dw)(zt_bf16 *, db)(const float *, dout)(const float *, inp)
      (const zt_bf16 *, w)(const float *, mean)(const float *, rstd)(int, N)(int, C))
// sumsq over bf16 values (the gradient's norm), back on the host: out[0] += sum of the
// finite x[i]^2 in double, out[1] += count of the non-finite ones.
ZT_OP(void, sumsq_bf16, ZT_OPS_BF16, ZT_PHASE_GRAD_NORM, 0,
      (double *, out)(const zt_bf16 *, x)(size_t, n))
// AdamW on n elements with fp32 master weights: master, m, v updated from the bf16 gradient
// g exactly as adamw updates p (adamw_math.h), then p = master rounded to bf16.
ZT_OP(void, adamw_bf16, ZT_OPS_BF16, ZT_PHASE_OPTIMIZER, 0,
      (float *, master)(zt_bf16 *, p)(float *, m)(float *, v)(const zt_bf16 *, g)(size_t, n)
      (float, wd)(const zt_adamw_hparams *, h))
// adamw8bit with fp32 master weights and a bf16 gradient, p = master rounded to bf16.
ZT_OP(void, adamw8bit_bf16, ZT_OPS_BF16, ZT_PHASE_OPTIMIZER, 0,
      (float *, master)(zt_bf16 *, p)(const zt_bf16 *, g)(uint8_t *, qm)(uint8_t *, qv)
      (float *, absmax_m)(float *, absmax_v)(size_t, n)(int, block)(const float *, map_m)
      (const float *, map_v)(float, wd)(const zt_adamw_hparams *, h))
// attention_forward on bf16 qkv (widened, exact): out (B, T, C) fp32 or bf16 (out_dt: the fp32
// result rounded once), lse fp32. attention_backward on bf16 qkv with dout and dqkv each fp32
// or bf16 (dout_dt, dqkv_dt; a bf16 dqkv is the fp32 gradient rounded once), written. work as
// theirs; wide: the caller's scratch of B T C (3 + the count of bf16 values among out, or
// among dout and dqkv with dqkv counting 3) floats, which holds the widened operands and the
// fp32 results before their rounding (the CPU widens one (batch, head) pair at a time into its
// own part of it; docs/design.md "bf16").
// out: the forward's output of the same qkv rounded to bf16 (attention_forward_bf16 with
// out_dt bf16, as the model stores it); a fused backward takes D = rowsum(dO o out) from it
// (FlashAttention-2's), the others do not read it.
ZT_OP(void, attention_forward_bf16, ZT_OPS_BF16, ZT_PHASE_ATTENTION,
      2 * 2.0 * B * C * (T * (T + 1.0) / 2.0),
      (void *, out)(zt_dtype, out_dt)(float *, lse)(const zt_bf16 *, qkv)(float *, work)
      (float *, wide)(int, B)(int, T)(int, C)(int, NH))
ZT_OP(void, attention_backward_bf16, ZT_OPS_BF16, ZT_PHASE_ATTENTION,
      5 * 2.0 * B * C * (T * (T + 1.0) / 2.0),
      (void *, dqkv)(zt_dtype, dqkv_dt)(const void *, dout)(zt_dtype, dout_dt)
      (const zt_bf16 *, out)(const zt_bf16 *, qkv)(const float *, lse)(float *, work)
      (float *, wide)(int, B)(int, T)(int, C)(int, NH))
// out[i] = x[i] rounded to bf16 (nearest even) / widened to fp32 (exact).
ZT_OP(void, bf16_from_fp32, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (zt_bf16 *, out)(const float *, x)(size_t, n))
ZT_OP(void, bf16_to_fp32, ZT_OPS_BF16, ZT_PHASE_ELEMENTWISE, 0,
      (float *, out)(const zt_bf16 *, x)(size_t, n))
