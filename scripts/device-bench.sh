#!/usr/bin/env bash
# One device call's worth of issue-9 measurements on the GPU machine, each step under its own time limit so one slow
# step cannot take the call's receipts with it. Run through the device tool from the repo root, carrying a `.device`
# packed with tsx (bash ../shared/gpu/prepare-device.sh tsx [vitest] [onnxruntime-node]: vitest for a GPU lane in the same call):
#   source .device/enter.sh && bash scripts/device-bench.sh [step ...]   (receipts name .device/commit: device-slim.sh out)
# Steps (default: attention gemv gemm decode torch): attention gemv gemv-table gemv-q4k gemm gemm-sweep decode decode-gemv decode-rope decode-mlp decode-attnq8 prefetch mlp glu-waves q6k-down mixed-handoff decode-wginit dispatch floor probe-glu q80 formats context short down-rows glu-groups qkv-rows qkv-teams qkv-lanes teams head head-pick head-pick-items attn-oproj attn-oproj-kernels footprint collapse targets rows-reduce rows-retune rows-exact decode-8b-q4k q6-wide q6-head f16-prefill glu-pass norm-pass gemv-layout
# patch-ab qmoe-f32 qmoe torch ort embed moe fixtures.
# Receipts and logs go to $OUT.
# Every figure in one step's receipt comes from one run; compare variants within a step, not across calls.
set -uo pipefail
OUT=${OUT:-out/device-bench}
mkdir -p "$OUT"
unset WEBGPU_DAWN_ARGS # the runtime sets Dawn's options itself (timestamp quantization off, NVIDIA f16)
export TESSERA_COMMIT=${TESSERA_COMMIT:-$(cat .device/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(attention gemv gemm decode torch)

run() { # name seconds command...
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s)"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "   rc=$?"
  grep -vE "warning: use of deprecated|^\s*\^|subgroupMatrix(Load|Store|MultiplyAccumulate)|Compilation log|^\s*$" "$OUT/$name.log" | tail -n 40
}

# bench/decode.ts on the 8B in Q4_K (PRESETS for other models, QUANT for another format, DECODE_ARGS for more options) once per point
# "name:TESSERA_TUNABLES", in the order given (list alternations to compare: one run moves a few percent from the next);
# receipts $OUT/<step>-<name>.json; PREFILL='' leaves out the prefill runs
# TESSERA_TUNABLES JSON setting tunable $1 to $2 in each contract named after them (default: the four rows-mode GEMV
# contracts linear_fused, linear_glu_q8, linear_q8, linear_rope_kv)
same_tunable() { # tunable value [contract ...]
  local t=$1 v=$2 c sep='' out='{'
  shift 2
  [ $# -gt 0 ] || set -- linear_fused linear_glu_q8 linear_q8 linear_rope_kv
  for c in "$@"; do out+="$sep\"$c\":{\"$t\":\"$v\"}"; sep=,; done
  echo "$out}"
}

decode_points() { # step point... (each point a run of bench/decode.ts under its tunables; LIMIT seconds each, 120)
  local step=$1 p
  shift
  for p in "$@"; do
    # shellcheck disable=SC2086 # DECODE_ARGS: several options
    TESSERA_TUNABLES=${p#*:} run "$step-${p%%:*}" "${LIMIT:-120}" node --import tsx bench/decode.ts --presets "${PRESETS:-llama-8b}" --quant "${QUANT:-q4k}" ${DECODE_ARGS:-} --prefill "${PREFILL-512}" --tokens 128 --out "$OUT/$step-${p%%:*}.json"
  done
}

for s in "${steps[@]}"; do
  case $s in
    # Q8_0, Q6_K and Q4_K weights repacked at load (quants apart from scales) against the GGUF layouts, one GEMV structure
    # (bench/gemv-layout.ts), then the production `linear` in the three formats at the same shapes in the same call
    gemv-layout)
      run gemv-layout 400 node --import tsx bench/gemv-layout.ts --out "$OUT/gemv-layout.json"
      run gemv-layout-linear 200 node --import tsx bench/kernels.ts --formats q8_0,q6_k,q4_k --m 1 --shapes 4096x14336,14336x4096 --reps 10 --out "$OUT/kernels-gemv-layout-linear.json" ;;
    # flash-decoding vs the registry kernel at 1k/8k/32k keys; prefill attention, default vs prefill_flash
    attention) run attention 150 node --import tsx bench/kernels.ts --formats '' --attention --attention-prefill 512,2048 --out "$OUT/kernels-attention.json" ;;
    # decode GEMVs (M = 1): contract choice, the int8-activation Q4_K GEMV beside it, and the work-split sweep
    gemv) run gemv 300 node --import tsx bench/kernels.ts --formats q4_k,float16,q6_k,q8_0 --m 1 --sweep --reps 20 --out "$OUT/kernels-gemv.json" ;;
    # the GEMV target's table: `linear` at M = 1 at 4096x14336, 14336x4096 and 128256x4096 in every weight format, no sweep
    gemv-table) run gemv-table 240 node --import tsx bench/kernels.ts --formats q4_k,q6_k,q8_0,float16 --m 1 --shapes 4096x14336,14336x4096,128256x4096 --reps 10 --out "$OUT/kernels-gemv-table.json" ;;
    # the 8B decode GEMV shapes in Q4_K: the default (fused int8), every work split of the quant-pass and fused GEMVs,
    # and the fused one's gemvRunSums / gemvPipeline (GEMV_SHAPES=NxK,... for fewer shapes)
    gemv-q4k) run gemv-q4k 400 node --import tsx bench/kernels.ts --formats q4_k --m 1 --shapes ${GEMV_SHAPES:-4096x4096,6144x4096,28672x4096,4096x14336,128256x4096} --sweep --reps 10 --out "$OUT/kernels-gemv-q4k.json" ;;
    # prefill GEMMs: contract choice vs the subgroup-matrix GEMM at 64 and 128 tiles
    gemm) run gemm 300 node --import tsx bench/kernels.ts --formats q4_k,float16 --m 16,128,512,2048 --shapes 4096x4096,14336x4096,4096x14336,128256x4096 --reps 10 --out "$OUT/kernels-gemm.json" ;;
    # the subgroup-matrix GEMM over its staging tunables (sgmatK, sgmatPad, sgmatPrefetch, sgmatWg) at the 8B prefill shapes
    # (GEMM_FORMATS=float16 for the f16 weights alone: the 400 s ran out after two Q4_K shapes at 084ce54)
    gemm-sweep) run gemm-sweep 400 node --import tsx bench/kernels.ts --formats ${GEMM_FORMATS:-q4_k,float16} --m 512,2048 --shapes 4096x4096,14336x4096,4096x14336 --gemm-sweep --reps 5 --out "$OUT/kernels-gemm-sweep.json" ;;
    # models: defaults, then (DECODE_TUNABLES='{"linear":{...}}') the same under tunables still behind flags
    decode)
      run decode 300 node --import tsx bench/decode.ts --presets ${DECODE_PRESETS:-llama-1b-128k,llama-8b} --quant ${DECODE_QUANTS:-q4k,f16} --prefill 512,2048 --tokens 128 --out "$OUT/decode.json"
      if [ -n "${DECODE_TUNABLES:-}" ]; then
        TESSERA_TUNABLES=$DECODE_TUNABLES run decode-tunables 300 node --import tsx bench/decode.ts --presets ${DECODE_PRESETS:-llama-1b-128k,llama-8b} --quant ${DECODE_QUANTS:-q4k,f16} --prefill 512,2048 --tokens 128 --out "$OUT/decode-tunables.json"
      fi ;;
    # the fused int8 decode GEMV's tunables (gemvRunSums, gemvPipeline; both on by default since 9b9afce), alternated
    # with them off twice (one run moves a few percent from the next)
    decode-gemv)
      o='{"gemvRunSums":"off","gemvPipeline":"off"}'
      off="{\"linear\":$o,\"linear_fused\":$o}"
      decode_points decode-gemv defaults:'{}' off:"$off" defaults2:'{}' off2:"$off" ;;
    # rope and the KV-cache write in the q|k|v GEMV's epilogue (linear_rope_kv, tunable ropeKvFuse, on since bb0f1f7
    # at unroll 1) alternated with it off, and at unroll 2 (8B only)
    decode-rope)
      off='{"linear_rope_kv":{"ropeKvFuse":"off"}}'
      u2='{"linear_rope_kv":{"gemvUnroll":2}}'
      decode_points decode-rope defaults:'{}' off:"$off" unroll2:"$u2" defaults2:'{}' off2:"$off" unroll2b:"$u2" ;;
    # attention reading o_proj's weight into the L2 in workgroups of its own (weightPrefetch), alternated with the
    # defaults, then at 64 and 256 of those workgroups
    prefetch)
      on='{"attention":{"weightPrefetch":"on"}}'
      PREFILL='' decode_points prefetch defaults:'{}' on:"$on" defaults2:'{}' on2:"$on" \
        g64:'{"attention":{"weightPrefetch":"on","prefetchGroups":64}}' g256:'{"attention":{"weightPrefetch":"on","prefetchGroups":256}}' ;;
    # one token's MLP at the 8B shapes: linear_fused twice vs linear_glu_q8 + linear_q8 (int8 activations handed
    # between the GEMVs), then work splits of the new ops
    mlp) run mlp 200 node --import tsx bench/kernels.ts --formats '' --mlp --reps 20 --out "$OUT/kernels-mlp.json" ;;
    # does the decoder's gate|up (gluR: q8h_glu16_rows, 32 rows a workgroup) lose time to a last partial wave of
    # workgroups? Its time over intermediate sizes I (2I / 32 workgroups): steps where the workgroup count passes a
    # multiple of what the GPU holds at once, a straight line where it does not (GLU_SIZES to choose them)
    glu-waves)
      for I in ${GLU_SIZES:-8192 9216 10240 11264 12288 13312 14336 15360 16384}; do
        run glu-waves-$I 60 node --import tsx bench/kernels.ts --formats '' --mlp --mlp-shape 4096x$I --mlp-points '{"glu":[],"q8":[]}' --mlp-chains '{"gu":["gluR"]}' --reps 20 --out "$OUT/kernels-glu-waves-$I.json"
      done ;;
    # a Q6_K layer's down GEMV (linear_q8 q6k_rows, 16 rows a workgroup at 17a82fb, 4 since) at 8 and 32 rows (q6RowBlock), alternated with the default,
    # on the 8B Q4_K_M with every layer's v_proj and down_proj in Q6_K (a Q6_K layer cost 26 us more than a Q4_K one
    # at fba109a for 3.5 us more bytes; the v_proj's 64 workgroups were one cause: linear_rope_kv q6RowBlock 4 since e7d98f6)
    q6k-down)
      r8='{"linear_q8":{"q6RowBlock":8}}'; r32='{"linear_q8":{"q6RowBlock":32}}'
      QUANT=q4k_m DECODE_ARGS='--q6k-layers all' PREFILL='' decode_points q6k-down defaults:'{}' rb8:"$r8" rb32:"$r32" defaults2:'{}' rb8b:"$r8" rb32b:"$r32" ;;
    # why the norm handoff in Q4_K_M's Q4_K-down layers (handoffMixedQkv "runs") lost 4.6% at 2f09eb7 while the same
    # kernels gain in the Q4_K model: the Q4_K_M model with no Q6_K layer (mixedQkv 0: the handoff by default) with the
    # handoff turned off, then llama.cpp's mix with "runs" against off, each alternated
    mixed-handoff)
      off='{"linear_glu_q8":{"normHandoff":"off"}}'; runs='{"linear_glu_q8":{"handoffMixedQkv":"runs"}}'
      QUANT=q4k_m DECODE_ARGS='--q6k-layers none' PREFILL='' decode_points mixed-handoff-none defaults:'{}' off:"$off" defaults2:'{}' off2:"$off"
      QUANT=q4k_m PREFILL='' decode_points mixed-handoff-mix defaults:'{}' runs:"$runs" defaults2:'{}' runs2:"$runs" ;;
    # gate|up on the handoff (q8h_glu16_rows: the 8B's 896 tiles of 32 rows, 1.7 waves) in fewer workgroups that walk
    # the tiles in turn (linear_glu_q8 glu16Groups: 448 in one wave of two tiles each, 299 of three, 528 a wave of 4 a
    # SM), alternated with one workgroup a tile
    glu-groups)
      g448='{"linear_glu_q8":{"glu16Groups":448}}'; g299='{"linear_glu_q8":{"glu16Groups":299}}'; g528='{"linear_glu_q8":{"glu16Groups":528}}'
      PREFILL='' decode_points glu-groups defaults:'{}' g448:"$g448" g299:"$g299" g528:"$g528" defaults2:'{}' g448b:"$g448" g299b:"$g299" g528b:"$g528" ;;
    # q|k|v with rope (linear_rope_kv; by default q8a_norm_rope_fused, 384 workgroups for the 8B, 10.1 us a call for 3.1
    # us of weights at the ceiling) in rows mode (16 rows in 4 teams; 8 rows in 2 teams: 768 workgroups) and on the norm
    # handoff from the down GEMV (q8h_rope_rows, 16 and 8 rows), alternated with the defaults; each last measured
    # dozens of commits ago (rows mode at 208b1fc / a7a1dfc: 445.6 vs 446.2 tok/s; the handoff at 92adb8a: 490.5
    # vs 498.1)
    qkv-rows)
      r16='{"linear_rope_kv":{"gemvRowBlock":16,"gemvTeams":4}}'; r8='{"linear_rope_kv":{"gemvRowBlock":8,"gemvTeams":2}}'
      h16='{"linear_rope_kv":{"normHandoff":"on"}}'; h8='{"linear_rope_kv":{"normHandoff":"on","handoffRowBlock":8}}'
      PREFILL='' decode_points qkv-rows defaults:'{}' r16:"$r16" r8:"$r8" h16:"$h16" h8:"$h8" defaults2:'{}' r16b:"$r16" r8b:"$r8" h16b:"$h16" h8b:"$h8" ;;
    # q|k|v with rope in rows mode (the default since 518a4c9: 16 rows in 4 teams of 128 lanes at the 8B's K) against
    # 32 rows in 8 teams (1024 lanes, 192 workgroups), 16 rows in 2 teams (2 items a team) and 32 rows in 4 teams
    qkv-teams)
      r32t8='{"linear_rope_kv":{"gemvRowBlock":32,"gemvTeams":8}}'; r16t2='{"linear_rope_kv":{"gemvRowBlock":16,"gemvTeams":2}}'
      r32t4='{"linear_rope_kv":{"gemvRowBlock":32,"gemvTeams":4}}'
      PREFILL='' decode_points qkv-teams defaults:'{}' r32t8:"$r32t8" r16t2:"$r16t2" r32t4:"$r32t4" defaults2:'{}' r32t8b:"$r32t8" r16t2b:"$r16t2" r32t4b:"$r32t4" ;;
    # q|k|v rows mode in fewer lanes: 16 rows in 2 teams (256 lanes at K = 4096), in 1 team, and 8 rows in 1 team
    qkv-lanes)
      r16t2='{"linear_rope_kv":{"gemvRowBlock":16,"gemvTeams":2}}'; r16t1='{"linear_rope_kv":{"gemvRowBlock":16,"gemvTeams":1}}'
      r8t1='{"linear_rope_kv":{"gemvRowBlock":8,"gemvTeams":1}}'
      PREFILL='' decode_points qkv-lanes r16t2:"$r16t2" r16t1:"$r16t1" r8t1:"$r8t1" r16t2b:"$r16t2" r16t1b:"$r16t1" r8t1b:"$r8t1" ;;
    # teams of lanes in the other rows-mode GEMVs of the 8B layer, after q|k|v gained from 4 teams to 2 (1a9c6cc): o_proj
    # (linear_fused q8a_plain_rows, 16 rows in 4 teams by default) in 2 teams, and gate|up on the handoff
    # (linear_glu_q8 q8h_glu16_rows, 32 rows in 2 teams by default) in 4 and in 1, alternated with the defaults
    teams)
      o2='{"linear_fused":{"gemvTeams":2}}'; g4='{"linear_glu_q8":{"glu16Teams":4}}'; g1='{"linear_glu_q8":{"glu16Teams":1}}'
      PREFILL='' decode_points teams defaults:'{}' o2:"$o2" g4:"$g4" g1:"$g1" defaults2:'{}' o2b:"$o2" g4b:"$g4" g1b:"$g1" ;;
    # q|k|v with rope and the decode attention linked into one dispatch (linear_rope_kv attnChain: attention in the
    # GEMV's 256 lanes, its cache loads before the wait on the GEMV's counter), alternated with the defaults
    qkv-chain)
      on='{"linear_rope_kv":{"attnChain":"on"}}'
      PREFILL='' decode_points qkv-chain defaults:'{}' on:"$on" defaults2:'{}' on2:"$on" ;;
    # the same link with attention's V loads after its scores (splitLanesV late: the K row's registers are free by
    # then), against that attention unlinked and the defaults (at b5616e0 the link lost 331 vs 521 tok/s)
    # attention in the GEMV's last 32 workgroups to finish (attnChain tail), its V loads early or late, against the
    # defaults and that attention unlinked
    qkv-chain-tail)
      tail='{"linear_rope_kv":{"attnChain":"tail"}}'; tlate='{"linear_rope_kv":{"attnChain":"tail"},"attention":{"splitLanesV":"late"}}'
      late='{"attention":{"splitLanesV":"late"}}'
      PREFILL='' decode_points qkv-chain-tail defaults:'{}' tail:"$tail" tlate:"$tlate" late:"$late" defaults2:'{}' tail2:"$tail" tlate2:"$tlate" late2:"$late" ;;
    qkv-chain-late)
      late='{"attention":{"splitLanesV":"late"}}'; on='{"linear_rope_kv":{"attnChain":"on"},"attention":{"splitLanesV":"late"}}'
      PREFILL='' decode_points qkv-chain-late defaults:'{}' late:"$late" on:"$on" defaults2:'{}' late2:"$late" on2:"$on" ;;
    # greedy sampling in one workgroup's pass (sample argmaxOne: greedy_one) against partials + reduce, 8B and 1B Q4_K
    argmax-one)
      on='{"sample":{"argmaxOne":"on"}}'
      PRESETS=llama-1b-128k,llama-8b PREFILL='' decode_points argmax-one defaults:'{}' on:"$on" defaults2:'{}' on2:"$on" ;;
    # linear_fused headArgmax (the LM head picks the greedy token: each workgroup's best into the state, the last
    # workgroup to finish joins them; no sample op) against the sample op's partials + reduce, 1B and 8B Q4_K
    head-pick)
      on='{"linear_fused":{"headArgmax":"on"}}'
      PRESETS=${PRESETS:-llama-1b-128k,llama-8b} PREFILL='' decode_points head-pick defaults:'{}' on:"$on" defaults2:'{}' on2:"$on" ;;
    # the same on the 8B with the head's items a workgroup at 64 (501 workgroups: half the tickets) beside 32
    head-pick-items)
      on='{"linear_fused":{"headArgmax":"on"}}'; i64='{"linear_fused":{"headArgmax":"on","gemvItems":64}}'
      PREFILL='' decode_points head-pick-items defaults:'{}' on:"$on" i64:"$i64" defaults2:'{}' on2:"$on" i64b:"$i64" ;;
    # attention_oproj (tunable attnOproj: decode attention on a short cache and o_proj with its norm handoff as one
    # dispatch, o_proj split over head pairs, the last workgroup of each row block adding the shares) against the
    # defaults, the 8B Q4_K; and with 2 o_proj rows a lane (512 rows a workgroup: half the workgroups repeat a pair's attention)
    attn-oproj)
      on='{"attention_oproj":{"attnOproj":"on"}}'; r2='{"attention_oproj":{"attnOproj":"on","oprojRowsPerLane":2}}'
      PREFILL='' decode_points attn-oproj defaults:'{}' on:"$on" r2:"$r2" defaults2:'{}' on2:"$on" r2b:"$r2" ;;
    # the 8B Q4_K at 32 and at 8 layers (llama-8b-l8), at the defaults and with gate|up at 64 rows a workgroup
    # (glu16RowBlock 64: 448 workgroups, one wave, fast alone and 25% slower in the 32-layer step at 25d74a4): does
    # a layer's time, or that slowdown, follow how much memory the step walks?
    footprint)
      g64='{"linear_glu_q8":{"glu16RowBlock":64}}'
      for L in llama-8b llama-8b-l8 llama-8b llama-8b-l8; do
        PRESETS=$L PREFILL='' decode_points "footprint-$L" defaults:'{}' g64:"$g64"
      done ;;
    # the rows-mode collapse in a layer's chain (kernels back to back in one pass): the five kernels at the defaults and
    # with gate|up at 64 rows (which collapses: 84 vs 64 us at 9f5129e), then the default chain with a sixth distinct
    # pipeline (o_proj without the handoff) and with a sixth dispatch of a pipeline already in it (down twice): if the
    # pipelines' code outgrowing an instruction cache is the cause, the first collapses and the second does not; and
    # the 64-row chain with that o_proj in attention's place (does it take attention, or any fifth pipeline?)
    collapse) run collapse 200 node --import tsx bench/kernels.ts --formats '' --mlp --mlp-points '{"glu":[],"q8":[]}' --mlp-chains '{"layer":["qkv","att","oN","gluR","downR"],"layerG64":["qkv","att","oN",["gluR",{"glu16RowBlock":64}],"downR"],"layer6":["qkv","att","oN","gluR","downR","o"],"layer6same":["qkv","att","oN","gluR","downR","downR"],"oG64":["qkv","o","oN",["gluR",{"glu16RowBlock":64}],"downR"]}' --reps 20 --out "$OUT/kernels-collapse.json" ;;
    # the rows GEMVs' subgroup sums reduce-scattered (tunable rowsReduce scatter: 6 shuffles for 4 rows instead of 20)
    # against subgroupAdd: a layer's chain with each kernel both ways, then the 8B and 1B Q4_K decode alternated
    rows-reduce)
      run rows-reduce-kernels 200 node --import tsx bench/kernels.ts --formats '' --mlp --mlp-points '{"glu":[],"q8":[]}' --mlp-chains '{"layer":["qkv","att","oN","gluR","downR"],"layerS":[["qkv",{"rowsReduce":"scatter"}],"att",["oN",{"rowsReduce":"scatter"}],["gluR",{"rowsReduce":"scatter"}],["downR",{"rowsReduce":"scatter"}]],"layer2":["qkv","att","oN","gluR","downR"],"layerS2":[["qkv",{"rowsReduce":"scatter"}],"att",["oN",{"rowsReduce":"scatter"}],["gluR",{"rowsReduce":"scatter"}],["downR",{"rowsReduce":"scatter"}]]}' --reps 20 --out "$OUT/kernels-rows-reduce.json"
      sc=$(same_tunable rowsReduce scatter linear linear_fused linear_glu_q8 linear_q8 linear_rope_kv)
      PREFILL='' decode_points rows-reduce defaults:'{}' scatter:"$sc" defaults2:'{}' scatter2:"$sc"
      PRESETS=llama-1b-128k PREFILL='' decode_points rows-reduce-1b defaults:'{}' scatter:"$sc" defaults2:'{}' scatter2:"$sc" ;;
    # the rows GEMVs' work splits measured again with the leaner slot math (tuned before it): gate|up in 1 and 4 teams,
    # down at 8 and 32 rows a workgroup, q|k|v in 1 team; 8B Q4_K alternated with the defaults
    rows-retune)
      PREFILL='' decode_points rows-retune defaults:'{}' g1:'{"linear_glu_q8":{"glu16Teams":1}}' g4:'{"linear_glu_q8":{"glu16Teams":4}}' \
        d8:'{"linear_q8":{"gemvRowBlock":8}}' d32:'{"linear_q8":{"gemvRowBlock":32}}' q1:'{"linear_rope_kv":{"gemvTeams":1}}' defaults2:'{}' ;;
    # rows mode with the slots indexed exactly (rowsExact on, the default: no clamp and no select where a team's lanes hold
    # the row's slots exactly, every 8B shape) against clamped and selected (off); 8B Q4_K alternated
    rows-exact)
      off=$(same_tunable rowsExact off)
      PREFILL='' decode_points rows-exact exact:'{}' off:"$off" exact2:'{}' off2:"$off" exact3:'{}' off3:"$off" ;;
    # Q6_K in wide slots (tunable q6Wide: 64 values a lane, 19 words) against 32-value slots: the linear GEMV table's
    # Q6_K rows and the 8B Q4_K_M decode (its LM head and half its down_proj layers Q6_K), alternated
    q6-wide)
      run q6-wide-off 240 node --import tsx bench/kernels.ts --formats q6_k --m 1 --shapes 4096x14336,14336x4096,128256x4096 --reps 10 --out "$OUT/kernels-q6-off.json"
      run q6-wide-on 240 node --import tsx bench/kernels.ts --formats q6_k --m 1 --shapes 4096x14336,14336x4096,128256x4096 --reps 10 --linear-tunables '{"q6Wide":"on"}' --out "$OUT/kernels-q6-on.json"
      w=$(same_tunable q6Wide on linear linear_fused linear_q8)
      QUANT=q4k_m PREFILL='' decode_points q6-wide defaults:'{}' wide:"$w" defaults2:'{}' wide2:"$w" ;;
    # f16 weights in gemm-sgmat's 256-invocation configuration without prefetch (linear sgmatF16Wide, the default)
    # against the Q4_K rule, the 8B f16 prefill at PREFILL tokens (512 by default), alternated
    f16-prefill)
      off='{"linear":{"sgmatF16Wide":"off"}}'
      QUANT=f16 decode_points f16-prefill new:'{}' old:"$off" new2:'{}' old2:"$off" ;;
    # linear_fused gluPass auto (the f16 down_proj's act(gate) * up in a pass of its own, not in the prologue of each
    # one-column item) against off, the 8B f16 decode, alternated
    glu-pass)
      off='{"linear_fused":{"gluPass":"off"}}'
      QUANT=f16 PREFILL='' decode_points glu-pass new:'{}' off:"$off" new2:'{}' off2:"$off" ;;
    # linear_fused normPass auto (the default since it was measured: rmsnorm(x) * gamma in a pass of its own before the
    # f16 gate|up, q|k|v and head GEMVs) against off, the 8B and 1B f16 decode, alternated
    norm-pass)
      off='{"linear_fused":{"normPass":"off"}}'
      PRESETS=${PRESETS:-llama-8b,llama-1b-128k} QUANT=f16 PREFILL='' decode_points norm-pass new:'{}' off:"$off" new2:'{}' off2:"$off" ;;
    # the Q4_K_M 8B's Q6_K LM head in 32 rows of one team (linear_fused q6RowBlock 0, the default since 61482a3) against
    # the 16 rows in 2 teams before (q6RowBlock 16), alternated
    q6-head) QUANT=q4k_m PREFILL='' decode_points q6-head new:'{}' old:'{"linear_fused":{"q6RowBlock":16}}' new2:'{}' old2:'{"linear_fused":{"q6RowBlock":16}}' ;;
    # the 8B Q4_K decode at the defaults, twice (the issue's >= 50% target; the ceiling measured in the same runs)
    decode-8b-q4k) PREFILL='' decode_points decode-8b-q4k defaults:'{}' defaults2:'{}' ;;
    # attention_oproj alone against attention + o_proj (with the handoff) back to back in one pass, at 1 and 2 rows a
    # lane (bench/kernels.ts --mlp-chains; the 8B shapes, kv_len 144 of a 256-position f16 cache)
    attn-oproj-kernels) run attn-oproj-kernels 200 node --import tsx bench/kernels.ts --formats '' --mlp --mlp-points '{"glu":[],"q8":[]}' --mlp-chains '{"apart":["att","oN"],"fused":["aop"],"fused2":[["aop",{"oprojRowsPerLane":2}]]}' --reps 20 --out "$OUT/kernels-attn-oproj.json" ;;
    # linear_fused gemvFuseQuant auto (the LM head's rmsnorm in a quant pass, then the GEMV in one item of 4 rows a
    # workgroup of 32 lanes) against the fused head ("on", the default before), Llama-3.2-1B and 3.1-8B Q4_K
    head-split)
      old='{"linear_fused":{"gemvFuseQuant":"on"}}'
      PRESETS=llama-1b-128k,llama-8b PREFILL='' decode_points head-split new:'{}' old:"$old" new2:'{}' old2:"$old" ;;
    # the LM head's items a workgroup (linear_fused gemvItems: 32 items of 4 rows by default at N >= 16384, 1002
    # workgroups for the 8B's 128256 rows; the head is the only fused-prologue GEMV of the 8B Q4_K step) at 16 and 64
    head-items)
      i16='{"linear_fused":{"gemvItems":16}}'; i64='{"linear_fused":{"gemvItems":64}}'
      PREFILL='' decode_points head-items defaults:'{}' i16:"$i16" i64:"$i64" defaults2:'{}' i16b:"$i16" i64b:"$i64" ;;
    # the LM head (linear_fused q8a_norm_fused: 128 rows a workgroup, 1002 workgroups for the 8B's 128256 rows; ~85 us
    # for 65 us of weights at the ceiling) in rows mode (headRowBlock rows in headTeams teams), alternated with the
    # defaults (at 1895379 every point lost: headRowBlock stays off)
    head)
      h64t4='{"linear_fused":{"headRowBlock":64,"headTeams":4}}'; h32t4='{"linear_fused":{"headRowBlock":32,"headTeams":4}}'
      h128t8='{"linear_fused":{"headRowBlock":128,"headTeams":8}}'; h64t8='{"linear_fused":{"headRowBlock":64,"headTeams":8}}'
      PREFILL='' decode_points head defaults:'{}' h64t4:"$h64t4" h32t4:"$h32t4" h128t8:"$h128t8" h64t8:"$h64t8" defaults2:'{}' h64t4b:"$h64t4" h32t4b:"$h32t4" h128t8b:"$h128t8" h64t8b:"$h64t8" ;;
    # the Q4_K down GEMV on gate|up's runs (linear_q8 q8h_rows: 16 rows a workgroup, 256 workgroups of 448 lanes for
    # the 8B's 4096 rows) at 8 and 12 rows, alternated with the default: the Q6_K down GEMV gained 8% at 8 rows
    # instead of 16 in the decode (17a82fb) where the kernel alone had not told (83e64e6)
    down-rows)
      r8='{"linear_q8":{"gemvRowBlock":8}}'; r12='{"linear_q8":{"gemvRowBlock":12}}'
      PREFILL='' decode_points down-rows defaults:'{}' rb8:"$r8" rb12:"$r12" defaults2:'{}' rb8b:"$r8" rb12b:"$r12" ;;
    # the decoder's int8 MLP (tunable mlpQ8, on by default since 578f8a0) alternated with it off (8B)
    decode-mlp)
      off='{"linear_glu_q8":{"mlpQ8":"off"}}'
      decode_points decode-mlp defaults:'{}' off:"$off" defaults2:'{}' off2:"$off" ;;
    # attention's combine pass writing int8 activations for o_proj (tunable attnQ8) alternated with the defaults (8B)
    decode-attnq8)
      on='{"attention":{"attnQ8":"on"}}'
      decode_points decode-attnq8 defaults:'{}' on:"$on" defaults2:'{}' on2:"$on" ;;
    # Dawn's disable_workgroup_init (no zero-fill of workgroup memory at every workgroup's start; ONNX Runtime and
    # llama.cpp set it; in FAST_DAWN_ARGS since the nineteenth session): the decode-path tests under it first, then the
    # 8B decode alternated with the same options without it
    decode-wginit)
      # the runtime's own GPU options (FAST_DAWN_ARGS, with it), and the same with disable_workgroup_init taken out
      wginit=$(node --import tsx -e "import('./src/gpu/device.ts').then((m) => console.log(m.FAST_DAWN_ARGS.join(' ')))")
      fast=$(echo "$wginit" | sed 's/,disable_workgroup_init//')
      TESSERA_DAWN_ARGS="$wginit" run decode-wginit-tests 200 node node_modules/vitest/vitest.mjs run test/kernels-gemv-q8a.test.ts \
        test/kernels-attention-split.test.ts test/kernels-linear-fused.test.ts test/decoder-fused.test.ts test/program.test.ts -t '^(?!.*(shipped model|models/default)).*$'
      for t in defaults wginit defaults2 wginit2; do
        if [ "${t%2}" = wginit ]; then args=$wginit; else args=$fast; fi
        TESSERA_DAWN_ARGS="$args" run decode-$t 120 node --import tsx bench/decode.ts --presets llama-8b,llama-1b-128k --quant q4k --prefill 512 --tokens 128 --out "$OUT/decode-$t.json"
      done ;;
    # QMoE's float32 grouped GEMM over its register tiles (tunables groupThreads, groupRegM/N, groupTileK; default 8, 4,
    # 4, 16 = 32 x 32 tiles; sgmatF16Compute off, else float32 activations take the f16 subgroup-matrix variant), without
    # ORT (any .device pack)
    qmoe-f32)
      f='"sgmatF16Compute":false'
      for t in t32:"{$f}" t64:"{\"groupThreads\":16,$f}" t64r8:"{\"groupThreads\":8,\"groupRegM\":8,\"groupRegN\":8,$f}" t128:"{\"groupThreads\":16,\"groupRegM\":8,\"groupRegN\":8,\"groupTileK\":8,$f}"; do
        n=${t%%:*}; j=${t#*:}
        run qmoe-f32-$n 120 node --import tsx bench/qmoe.ts --no-ort --upload mapped --cases gptoss20b-experts-t128,gptoss20b-experts-t1024 --tunables "$j" --out "$OUT/qmoe-f32-$n.json"
      done ;;
    # QMoE vs ORT (the .device-ort pack): the defaults (float32 activations; the f16 subgroup-matrix variant wherever
    # grouped tiles are chosen, from 64 tokens for gpt-oss-20b, on devices that have it), float32 compute throughout, and
    # float16 activations on both sides; the inputs fed through mapped staging buffers
    qmoe)
      run qmoe-vs-ort 200 node --import tsx bench/qmoe.ts --upload mapped --out "$OUT/qmoe.json"
      run qmoe-vs-ort-f32 200 node --import tsx bench/qmoe.ts --upload mapped --tunables '{"sgmatF16Compute":false}' --out "$OUT/qmoe-f32.json"
      # the same precision on both sides: float16 activations, router logits and output
      run qmoe-vs-ort-dtype-f16 200 node --import tsx bench/qmoe.ts --upload mapped --dtype float16 --out "$OUT/qmoe-dtype-f16.json" ;;
    # what a dispatch costs beside its bytes: tiny and weight-sized dispatches, dependent and independent
    dispatch) run dispatch 120 node --import tsx bench/dispatch.ts --out "$OUT/dispatch.json" ;;
    # what the native CUDA stack reaches at the same shapes (torch: reads, cuBLAS f16 and tinygemm int4 GEMVs, SDPA decode
    # attention and its kernels), then ours: dispatch probes, decode attention, the f16 / Q4_K GEMVs at M = 1
    floor)
      run floor-torch 200 python3 -W ignore bench/torch_floor.py --out "$OUT/floor-torch.json"
      run floor-dispatch 120 node --import tsx bench/dispatch.ts --out "$OUT/floor-dispatch.json"
      run floor-attention 110 node --import tsx bench/kernels.ts --formats '' --attention --attention-prefill '' --reps 20 --out "$OUT/floor-attention.json"
      run floor-gemv 150 node --import tsx bench/kernels.ts --formats float16,q4_k --m 1 --shapes 4096x4096,2048x8192,8192x2048,4096x14336,14336x4096,128256x4096 --reps 10 --out "$OUT/floor-gemv.json" ;;
    # the gate|up GEMV alone on the 8B model's own buffers, copies and synthetic blocks, then paired with down_proj,
    # subgroup items vs rows mode (faster alone, slower in the decode at the eighth session)
    probe-glu) run probe-glu 150 node --import tsx bench/decode.ts --presets llama-8b --quant q4k --prefill '' --probe-glu '[{},{"gemvRowBlock":128,"gemvTeams":4},{"gemvRowBlock":64,"gemvTeams":2}]' --out "$OUT/probe-glu.json" ;;
    # Q8_0 and Q6_K decode GEMVs at the 8B shapes: the f32-activation subgroup GEMV (the default) and the int8-activation
    # rows-mode GEMV (linear_fused, tunables gemvQ80Int8 / gemvQ6KInt8) at a few row blocks; then the 8B decode on Q8_0
    # weights with it, alternated with the default (bench/decode.ts --quant q8_0: 8.5 GB of random weights)
    q80)
      run q80 250 node --import tsx bench/kernels.ts --formats q8_0,q6_k --m 1 --shapes 4096x14336,14336x4096,4096x4096,6144x4096,128256x4096 --reps 10 --out "$OUT/kernels-q80.json"
      on='{"linear_fused":{"gemvQ80Int8":"on"}}'
      for t in defaults:'{}' rows:"$on" defaults2:'{}' rows2:"$on"; do
        TESSERA_TUNABLES=${t#*:} run q80-decode-${t%%:*} 150 node --import tsx bench/decode.ts --presets llama-8b --quant q8_0 --prefill '' --tokens 128 --out "$OUT/q80-decode-${t%%:*}.json"
      done ;;
    # one-pass attention on short caches (decode_short, the session's prefix program) against flash-decoding's two
    # passes (shortKeys 0): the kernel at 144 and 256 keys, then the 8B Q4_K decode (16-token prompt: the timed steps
    # sit at positions 16 to 143), alternated twice
    short)
      run short-attention 120 node --import tsx bench/kernels.ts --formats '' --attention --attention-ctx 144,256 --attention-prefill '' --reps 200 --split-tunables '[{},{"shortKeys":0},{},{"shortKeys":0}]' --out "$OUT/kernels-attention-short.json"
      off='{"attention":{"shortKeys":0}}'
      for t in defaults:'{}' off:"$off" defaults2:'{}' off2:"$off"; do
        TESSERA_TUNABLES=${t#*:} run short-decode-${t%%:*} 150 node --import tsx bench/decode.ts --presets llama-8b --quant q4k --prefill '' --tokens 128 --out "$OUT/short-decode-${t%%:*}.json"
      done ;;
    # the carried tree against itself with the change in $AB_PATCH taken out (`git diff` of the change under test,
    # written into the tree before the call; reversed with patch -R for the "old" runs), alternated twice: bench/decode.ts
    # for AB_PRESETS (llama-8b) in AB_QUANTS (q4k); receipts $OUT/ab-{new,old,new2,old2}.json
    patch-ab)
      [ -f "${AB_PATCH:-}" ] || { echo "patch-ab: AB_PATCH names no file"; continue; }
      for t in new old new2 old2; do
        [ "${t%2}" = old ] && patch -s -p1 -R < "$AB_PATCH"
        run ab-$t 150 node --import tsx bench/decode.ts --presets ${AB_PRESETS:-llama-8b} --quant ${AB_QUANTS:-q4k} --prefill '' --tokens 128 --out "$OUT/ab-$t.json"
        [ "${t%2}" = old ] && patch -s -p1 < "$AB_PATCH"
      done ;;
    # every weight format's decode in one receipt: 1B and 8B shapes, Q4_K, the Q4_K_M mix, Q8_0, f16 (random weights)
    formats) run formats 520 node --import tsx bench/decode.ts --presets llama-1b-128k,llama-8b --quant q4k,q4k_m,q8_0,f16 --prefill '' --tokens 128 --out "$OUT/decode-formats.json" ;;
    # the 8B Q4_K decode after longer prompts (attention's share grows with the keys it reads)
    context)
      for c in 1024 4096; do run context-$c 150 node --import tsx bench/decode.ts --presets llama-8b --quant q4k --prefill '' --context $c --tokens 128 --out "$OUT/decode-context-$c.json"; done ;;
    # every model target of issue 9 from one call: Tessera's decode and prefill (1B and 8B, Q4_K and f16), then the
    # PyTorch peer eager and compiled (static cache) on the same shapes; about 500 s with the start
    targets)
      run targets-decode 300 node --import tsx bench/decode.ts --presets llama-1b-128k,llama-8b --quant q4k,f16 --prefill 512,2048 --tokens 128 --out "$OUT/targets-decode.json"
      run targets-torch 280 python3 bench/torch_decode.py --compiled --presets llama-1b-128k,llama-8b --prefill 512,2048 --tokens 128 --out "$OUT/targets-torch.json" ;;
    torch) run torch 200 python3 bench/torch_decode.py --presets llama-1b-128k,llama-8b --prefill 512,2048 --tokens 128 --out "$OUT/torch.json" ;;
    # encoders (issue 14): BERT-base shapes at sequence 128, batch 1 and 64, with the PyTorch peer
    embed)
      run embed 200 node --import tsx bench/embed.ts --out "$OUT/embed.json"
      run torch-embed 120 python3 bench/torch_embed.py --out "$OUT/torch-embed.json" ;;
    # MoE models (issue 12): gpt-oss-20b (MXFP4 experts) and Qwen3-30B-A3B (Q4_K experts) shapes, random weights;
    # PyTorch eager bf16 on the gpt-oss shapes as the anchor
    moe)
      run moe 330 node --import tsx bench/decode.ts --presets gpt-oss-20b,qwen3-30b-a3b --quant q4k --prefill 512 --tokens 64 --bw-bytes 1073741824 --out "$OUT/decode-moe.json"
      # a workgroup per expert output row (moe tunable moeRows), behind its tunable until measured here
      TESSERA_TUNABLES='{"moe":{"moeRows":"workgroup"}}' \
        run moe-workgroup 330 node --import tsx bench/decode.ts --presets gpt-oss-20b,qwen3-30b-a3b --quant q4k --prefill 512 --tokens 64 --bw-bytes 1073741824 --out "$OUT/decode-moe-workgroup.json"
      run torch-moe 240 python3 bench/torch_decode.py --presets gpt-oss-20b --prefill 512 --tokens 32 --out "$OUT/torch-moe.json" ;;
    # transformers goldens (CPU, float32) for the MoE and encoder tests: test/fixtures/hf/<name> under $OUT/hf
    fixtures)
      OMP_NUM_THREADS=4 run goldens-moe 400 python3 scripts/goldens-moe.py --out "$OUT/hf"
      OMP_NUM_THREADS=4 run encoder-fixtures 300 python3 scripts/fixtures/make_encoder_fixtures.py --out "$OUT/hf" ;;
    ort) run ort 300 node --import tsx bench/kernels.ts --formats q4_k --m 1,16,128,512 --ort --reps 10 --out "$OUT/kernels-ort.json" ;;
    *) echo "unknown step $s (attention gemv gemv-q4k gemm gemm-sweep decode decode-gemv decode-rope decode-mlp decode-attnq8 prefetch mlp glu-waves q6k-down mixed-handoff decode-wginit dispatch floor probe-glu q80 formats context short qmoe-f32 qmoe torch ort embed moe fixtures)" >&2 ;;
  esac
done
