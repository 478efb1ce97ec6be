// Generated from src/kernels/templates/fused_ffn.wgsl.jinja ({"w":"u32","packed":true,"entries":[{"name":"main","variant":"fused_ffn.f16_batched","fmt":"f16w","lanes":64,"rows":4}]}) by scripts/gen-sources.ts; do not edit.
// fused_ffn_f16w_f32a_batched.wgsl: fused gate/up projection + gated activation (the first half of a SwiGLU / GeGLU FFN), float weights.
//
//   out[m, j] = alpha * act(sum_k x[m, k] * Wg[j, k]) * (sum_k x[m, k] * Wu[j, k])
//   x: f32 [M, hidden_size], Wg, Wu: [intermediate_size, hidden_size] row-major, out: f32 [M, intermediate_size],
//   act = silu (activation 0) or tanh-approximated gelu (activation 1).
//
// Weights are bound as array<u32>; accumulation is f32. Any M, hidden_size, intermediate_size.
//
// Entry points (workgroup_size(256, 1, 1); no subgroup operations, so any subgroup size is fine):
//   main (fused_ffn.f16_batched): weights f16, two per 32-bit word (unpack2x16float); 64 invocations per output (4 per workgroup), 4 rows of x per workgroup.
// A workgroup stages its rows of x in workgroup memory, 256 values at a time (As[k] = x[m0 .. m0+3, k0 + k], rows
// past M or past the entry's rows as zeros); lane l of an output sums k = l, l + lanes, ... of the chunk for the gate
// and up rows (consecutive lanes read consecutive weights: coalesced), each weight applied to every staged row. A
// tree in workgroup memory adds the lanes; lane 0 applies the activation and writes.
//
// Dispatch: tile t = workgroup_id.x + workgroup_id.y * num_workgroups.x (outputs (256 / lanes) t ..), rows
// m0 = workgroup_id.z * rows. With T = ceil(intermediate_size / (256 / lanes)): [min(T, 65535), ceil(T / 65535),
// ceil(M / rows)].
//
// Bindings (group 0):
//   0  uniforms      uniform             Uniforms (below)
//   1  input         storage, read       f32 [M, hidden_size]
//   2  gate_weights  storage, read       [intermediate_size, hidden_size] as array<u32>
//   3  up_weights    storage, read       same layout
//   4  output        storage, read_write f32 [M, intermediate_size] (written)
//
// Uniforms (the registry's `fused_ffn` base uniforms):
//   M: u32 @0, hidden_size: u32 @4, intermediate_size: u32 @8, alpha: f32 @12, activation: u32 @16

struct Uniforms {
  M: u32,
  hidden_size: u32,
  intermediate_size: u32,
  alpha: f32,
  activation: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> gate_weights: array<u32>;
@group(0) @binding(3) var<storage, read> up_weights: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;
const CHUNK: u32 = 256u; // values of x per row staged per pass
const FMT_PLAIN: u32 = 0u; // element e of the bound array
const FMT_F16W: u32 = 1u;  // f16 pairs in 32-bit words

var<workgroup> As: array<vec4<f32>, 256>;
var<workgroup> red: array<vec4<f32>, 512>; // [0, 256): gate partial sums, [256, 512): up

// Gate (x) and up (y) weight at element index e, read as `fmt` says.
fn weights_at(e: u32, fmt: u32) -> vec2<f32> {
  if (fmt == FMT_F16W) {
    let g = unpack2x16float((gate_weights[e >> 1u]));
    let v = unpack2x16float((up_weights[e >> 1u]));
    return select(vec2<f32>(g.x, v.x), vec2<f32>(g.y, v.y), (e & 1u) == 1u);
  }
  return vec2<f32>(bitcast<f32>(gate_weights[e]), bitcast<f32>(up_weights[e]));
}

fn silu(x: f32) -> f32 {
  return x / (1.0 + exp(-x));
}

// 0.5 * x * (1 + tanh(z)) computed as x / (1 + exp(-2z)): no tanh, so no inf / inf = NaN for large |x| (exp
// overflows to +inf for very negative x: x / inf = -0, the limit).
fn gelu_tanh(x: f32) -> f32 {
  let c = 0.7978845608028654; // sqrt(2 / pi)
  return x / (1.0 + exp(-2.0 * c * (x + 0.044715 * x * x * x)));
}

// The whole computation for one workgroup (workgroup-uniform control flow: barriers inside).
fn ffn(tile: u32, z: u32, li: u32, fmt: u32, lanes: u32, rows: u32) {
  let H = u.hidden_size;
  let I = u.intermediate_size;
  let per_wg = WG / lanes;
  let j = tile * per_wg + li / lanes;
  let lane = li % lanes;
  let m0 = z * rows;
  var g = vec4<f32>(0.0); // gate sums of the 4 staged rows
  var v = vec4<f32>(0.0); // up sums
  for (var k0 = 0u; k0 < H; k0 += CHUNK) {
    let len = min(CHUNK, H - k0);
    workgroupBarrier();
    var a = vec4<f32>(0.0);
    if (li < len) {
      for (var r = 0u; r < rows; r++) {
        if (m0 + r < u.M) {
          a[r] = input[(m0 + r) * H + k0 + li];
        }
      }
    }
    As[li] = a;
    workgroupBarrier();
    if (j < I) {
      for (var k = lane; k < len; k += lanes) {
        let w = weights_at(j * H + k0 + k, fmt);
        g = fma(As[k], vec4<f32>(w.x), g);
        v = fma(As[k], vec4<f32>(w.y), v);
      }
    }
  }
  red[li] = g;
  red[WG + li] = v;
  workgroupBarrier();
  for (var s = lanes / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      red[li] += red[li + s];
      red[WG + li] += red[WG + li + s];
    }
    workgroupBarrier();
  }
  if (lane == 0u && j < I) {
    for (var r = 0u; r < rows; r++) {
      let m = m0 + r;
      if (m < u.M) {
        let gs = red[li][r];
        var act = silu(gs);
        if (u.activation != 0u) {
          act = gelu_tanh(gs);
        }
        output[m * I + j] = u.alpha * act * red[WG + li][r];
      }
    }
  }
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  ffn(wid.x + wid.y * nwg.x, wid.z, li, FMT_F16W, 64u, 4u);
}
