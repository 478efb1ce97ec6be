// Generated from src/kernels/templates/topk.wgsl.jinja ({"inT":"f16","outT":"f16","subgroups":true,"entries":[{"name":"softmax_topk","variant":"topk.gptoss_router_topk","wg":256,"mode":2}],"maxwg":256}) by scripts/gen-sources.ts; do not edit.
// gptoss_router_topk.wgsl: top-k per row of f16 input, f16 values, subgroup reductions.
// Generated from the one topk template: every topk variant shares these semantics.
//
//   Row r is input[r * size .. r * size + size - 1]; rows = the workgroups dispatched (one workgroup per row,
//   r = workgroup_id.x; the registry's topk uniforms carry no row count, so the dispatch [rows, 1, 1] gives it).
//   Order: x before y when x > y, or x == y and x's index is lower (ties go to the lower index, so the result is
//   deterministic); inputs must not hold NaN. For j < k (k <= size):
//     indices[r * k + j] = column of the j-th element of row r in that order
//   values[r * k + j], by entry point:
//     softmax_topk: softmax over the k selected, exp(x_j - x_0) / sum_{j' < k} exp(x_j' - x_0) (GPT-OSS routing weights).
// Selection compares the input values themselves (f16, widened exactly to f32); softmax math is f32, each value rounded to f16 once.
// f16 tensors are u32 words holding two f16 each (element e is the low half of word e / 2 when e is even, the high
// half when odd), read with unpack2x16float; a value is written into its half of a word with atomicAnd /
// atomicOr (rows may share a word when k is odd), so no `enable f16` is needed.
//
// Entry point `softmax_topk` (variant topk.gptoss_router_topk), workgroup_size(256, 1, 1).
// One workgroup computes one row: k rounds, each a workgroup reduction (subgroupMax / subgroupMin inside a subgroup, then
// workgroup memory across subgroups: correct for any subgroup size) of the best element after the previous pick; the
// first invocation writes the results. Dispatch: [rows, 1, 1] (rows <= maxComputeWorkgroupsPerDimension).
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f16 [rows, size] as u32 words
//   2  values    storage, read_write f16 [rows, k] as atomic u32 words (written)
//   3  indices   storage, read_write u32 [rows, k] (written)
//
// Uniforms (the registry's `topk` base uniforms, 16 bytes): size: u32 @0, k: u32 @4
enable subgroups;
struct Uniforms {
  size: u32,
  k: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> values: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> indices: array<u32>;

const MAX_WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;

var<workgroup> red_v: array<f32, MAX_WG>;
var<workgroup> red_i: array<u32, MAX_WG>;

// Element e of the input as f32.
fn input_at(e: u32) -> f32 {
  let v = unpack2x16float(input[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

const F16_MAX: f32 = 65504.0;

// values[e] = f16(x), leaving the other half of its word alone.
fn write_value(e: u32, x: f32) {
  let shift = (e & 1u) * 16u;
  let bits = pack2x16float(vec2<f32>(clamp(x, -F16_MAX, F16_MAX), 0.0)) & 0xffffu;
  atomicAnd(&values[e >> 1u], ~(0xffffu << shift));
  atomicOr(&values[e >> 1u], bits << shift);
}
// (va, ia) before (vb, ib) in the selection order.
fn before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return ib == NONE || (ia != NONE && (va > vb || (va == vb && ia < ib)));
}

// The best (value, index) over the workgroup's candidates (index NONE: no candidate); n = workgroup size.
// Starts with a barrier so it may be called repeatedly; workgroup-uniform control flow only.
fn reduce_best(li: u32, n: u32, v: f32, i: u32, sl: u32) -> vec2<u32> {
  workgroupBarrier();
  // the subgroup's best: its max value (lanes without a candidate offer -inf), then the lowest index holding it
  var inf_bits = 0xff800000u;
  let neg_inf = bitcast<f32>(inf_bits);
  let sv = subgroupMax(select(neg_inf, v, i != NONE));
  let si = subgroupMin(select(NONE, i, i != NONE && v == sv));
  red_v[li] = sv;
  red_i[li] = si;
  for (var s = n / 2u; s > 0u; s = s / 2u) {
    workgroupBarrier();
    if (li < s && before(red_v[li + s], red_i[li + s], red_v[li], red_i[li])) {
      red_v[li] = red_v[li + s];
      red_i[li] = red_i[li + s];
    }
  }
  workgroupBarrier();
  return vec2<u32>(bitcast<u32>(red_v[0]), red_i[0]);
}

// max (op 0) or sum (op 1) of v over the workgroup; n = workgroup size.
fn reduce_f32(li: u32, n: u32, v: f32, op: u32) -> f32 {
  workgroupBarrier();
  red_v[li] = v;
  for (var s = n / 2u; s > 0u; s = s / 2u) {
    workgroupBarrier();
    if (li < s) {
      red_v[li] = select(max(red_v[li], red_v[li + s]), red_v[li] + red_v[li + s], op == 1u);
    }
  }
  workgroupBarrier();
  return red_v[0];
}

// Row r on a workgroup of n invocations; mode 0: values as read, 1: softmax over the row, 2: softmax over the k picked.
fn topk_row(r: u32, li: u32, n: u32, mode: u32, sl: u32) {
  let size = u.size;
  let k = min(u.k, size);
  let base = r * size;
  var rowmax = 0.0;
  var rowsum = 1.0;
  if (mode == 1u) {
    var m = -3.0e38;
    for (var c = li; c < size; c += n) {
      m = max(m, input_at(base + c));
    }
    rowmax = reduce_f32(li, n, m, 0u);
    var s = 0.0;
    for (var c = li; c < size; c += n) {
      s += exp(input_at(base + c) - rowmax);
    }
    rowsum = reduce_f32(li, n, s, 1u);
  }
  var pv = 0.0;
  var pi = NONE;
  var first = 0.0;
  var ksum = 0.0;
  for (var j = 0u; j < k; j++) {
    // the best element after the previous pick (pv, pi)
    var bv = 0.0;
    var bi = NONE;
    for (var c = li; c < size; c += n) {
      let x = input_at(base + c);
      if ((pi == NONE || x < pv || (x == pv && c > pi)) && before(x, c, bv, bi)) {
        bv = x;
        bi = c;
      }
    }
    let best = reduce_best(li, n, bv, bi, sl);
    pv = bitcast<f32>(best.x);
    pi = best.y;
    if (j == 0u) {
      first = pv;
    }
    if (li == 0u) {
      indices[r * u.k + j] = pi;
      if (mode == 0u) {
        write_value(r * u.k + j, pv);
      } else if (mode == 1u) {
        write_value(r * u.k + j, exp(pv - rowmax) / rowsum);
      } else {
        ksum += exp(pv - first);
      }
    }
  }
  if (mode == 2u && li == 0u) {
    for (var j = 0u; j < k; j++) {
      let x = input_at(base + indices[r * u.k + j]);
      write_value(r * u.k + j, exp(x - first) / ksum);
    }
  }
}
@compute @workgroup_size(256, 1, 1)
fn softmax_topk(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_invocation_id) sl: u32) {
  topk_row(wg.x, li, 256u, 2u, sl);
}
