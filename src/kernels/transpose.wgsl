// transpose.wgsl: transpose of a row-major matrix.
//
//   output[c*rows + r] = input[r*cols + c]        for r < rows, c < cols     (input [rows, cols] -> output [cols, rows])
//
// Entry point `main` (variant transpose.default), workgroup_size(256, 1, 1). One invocation writes one output
// element per grid-stride step (o = gid.x, gid.x + num_workgroups.x * 256, ... < rows * cols; c = o / rows,
// r = o % rows): writes are contiguous, reads strided. Any dispatch width covers any size.
// Dispatch: [min(ceil(rows * cols / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [rows, cols]
//   2  output    storage, read_write f32 [cols, rows] (written; may not alias input)
//
// Uniforms (the registry's `transpose` base uniforms):
//   rows: u32 @0, cols: u32 @4, _pad0: u32 @8, _pad1: u32 @12

struct Uniforms {
  rows: u32,
  cols: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let total = u.rows * u.cols;
  let stride = nwg.x * WG;
  for (var o = gid.x; o < total; o += stride) {
    let c = o / u.rows;
    let r = o - c * u.rows;
    output[o] = input[r * u.cols + c];
  }
}
