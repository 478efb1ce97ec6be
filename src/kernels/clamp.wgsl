// clamp.wgsl: clamp every element into [min, max], in place.
//
//   data[i] = min(max(data[i], min), max)        for i < size   (min <= max; NaN elements are not defined)
//
// Entry point `main` (variant clamp.default), workgroup_size(256, 1, 1). One invocation updates one element per
// grid-stride step (i = gid.x, gid.x + num_workgroups.x * 256, ...), so any dispatch width covers any size.
// Dispatch: [min(ceil(size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  data      storage, read_write f32 [size] (updated in place)
//
// Uniforms (the registry's `clamp` base uniforms):
//   size: u32 @0, _pad0: u32 @4, min: f32 @8, max: f32 @12

struct Uniforms {
  size: u32,
  _pad0: u32,
  min: f32,
  max: f32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read_write> data: array<f32>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  for (var i = gid.x; i < u.size; i += stride) {
    data[i] = min(max(data[i], u.min), u.max);
  }
}
