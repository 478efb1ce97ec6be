// Generated from src/kernels/templates/gather_split.wgsl.jinja ({"variant":"gather_split8.f16_vec4_f32_out","sections":8,"outT":"f32","entry":"gather_vec4_f32_out","wg":64}) by scripts/gen-sources.ts; do not edit.
// gather_split8_f16_vec4_f32_out.wgsl: embedding row lookup from an f16 table split by rows over 8 buffers (to stay under
// maxStorageBufferBindingSize), four columns per invocation, f32 output.
// Generated from the one gather_split template (gather_split4 and gather_split8 variants); the unsplit lookup is
// gather.wgsl.jinja.
//
//   id = indices[index_offset + t]
//   section k (k < 8) holds table rows start_k .. start_k + section{k}_rows - 1, start_k = sum of the earlier
//   sections' rows; row r of section k starts at element r * input_hidden_size of embeddings{k}
//   output[t, h] = embeddings{k}[(id - start_k) * input_hidden_size + hidden_offset + h]   (k: the section holding id)
//   id >= vocab_size, or id past the last section, writes 0.
// for t < num_tokens, h < hidden_size. Output is packed [num_tokens, hidden_size].
// vec4: the contract runs this only where hidden_size, input_hidden_size and hidden_offset are multiples of 4.
// The tables are read as u32 words holding two f16 each (element e is the low half of word e/2 when e is even, the
// high half when odd) with unpack2x16float, so no
// `enable f16` is needed (the registry still lists shader-f16).
//
// Entry point `gather_vec4_f32_out` (variant gather_split8.f16_vec4_f32_out), workgroup_size(64, 1, 1).
// One invocation computes four consecutive output elements per grid-stride step: groups q = gid.x, gid.x + stride,
// ... < num_tokens * hidden_size / 4 with stride = num_workgroups.x * 64.
// Dispatch: [min(ceil(num_tokens * hidden_size / 4 / 64), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms     uniform             Uniforms (below)
//   1  indices      storage, read       u32 [index_offset + num_tokens]
//   2  embeddings0  storage, read       f16 [section0_rows, input_hidden_size] as u32 words
//   3  embeddings1  storage, read       f16 [section1_rows, input_hidden_size] as u32 words
//   4  embeddings2  storage, read       f16 [section2_rows, input_hidden_size] as u32 words
//   5  embeddings3  storage, read       f16 [section3_rows, input_hidden_size] as u32 words
//   6  embeddings4  storage, read       f16 [section4_rows, input_hidden_size] as u32 words
//   7  embeddings5  storage, read       f16 [section5_rows, input_hidden_size] as u32 words
//   8  embeddings6  storage, read       f16 [section6_rows, input_hidden_size] as u32 words
//   9  embeddings7  storage, read       f16 [section7_rows, input_hidden_size] as u32 words
//   10 output       storage, read_write f32 [num_tokens, hidden_size] (written)
//
// Uniforms (the registry's `gather_split8` base uniforms, 64 bytes):
//   num_tokens: u32 @0, hidden_size: u32 @4, vocab_size: u32 @8, index_offset: u32 @12, input_hidden_size: u32 @16,
//   hidden_offset: u32 @20, section0_rows: u32 @24, section1_rows: u32 @28, section2_rows: u32 @32, section3_rows: u32 @36, section4_rows: u32 @40, section5_rows: u32 @44, section6_rows: u32 @48, section7_rows: u32 @52, _pad0, _pad1

struct Uniforms {
  num_tokens: u32,
  hidden_size: u32,
  vocab_size: u32,
  index_offset: u32,
  input_hidden_size: u32,
  hidden_offset: u32,
  section0_rows: u32,
  section1_rows: u32,
  section2_rows: u32,
  section3_rows: u32,
  section4_rows: u32,
  section5_rows: u32,
  section6_rows: u32,
  section7_rows: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read> embeddings0: array<u32>;
@group(0) @binding(3) var<storage, read> embeddings1: array<u32>;
@group(0) @binding(4) var<storage, read> embeddings2: array<u32>;
@group(0) @binding(5) var<storage, read> embeddings3: array<u32>;
@group(0) @binding(6) var<storage, read> embeddings4: array<u32>;
@group(0) @binding(7) var<storage, read> embeddings5: array<u32>;
@group(0) @binding(8) var<storage, read> embeddings6: array<u32>;
@group(0) @binding(9) var<storage, read> embeddings7: array<u32>;
@group(0) @binding(10) var<storage, read_write> output: array<vec4<f32>>;

const WG: u32 = 64u;
// Elements e .. e + 3 (e a multiple of 4) of section k's table as f32.
fn section_at4(k: u32, e: u32) -> vec4<f32> {
  let w = e >> 1u;
  switch k {
    case 0u: {
      return vec4<f32>(unpack2x16float(embeddings0[w]), unpack2x16float(embeddings0[w + 1u]));
    }
    case 1u: {
      return vec4<f32>(unpack2x16float(embeddings1[w]), unpack2x16float(embeddings1[w + 1u]));
    }
    case 2u: {
      return vec4<f32>(unpack2x16float(embeddings2[w]), unpack2x16float(embeddings2[w + 1u]));
    }
    case 3u: {
      return vec4<f32>(unpack2x16float(embeddings3[w]), unpack2x16float(embeddings3[w + 1u]));
    }
    case 4u: {
      return vec4<f32>(unpack2x16float(embeddings4[w]), unpack2x16float(embeddings4[w + 1u]));
    }
    case 5u: {
      return vec4<f32>(unpack2x16float(embeddings5[w]), unpack2x16float(embeddings5[w + 1u]));
    }
    case 6u: {
      return vec4<f32>(unpack2x16float(embeddings6[w]), unpack2x16float(embeddings6[w + 1u]));
    }
    case 7u: {
      return vec4<f32>(unpack2x16float(embeddings7[w]), unpack2x16float(embeddings7[w + 1u]));
    }
    default: {
      return vec4<f32>(0.0);
    }
  }
}

@compute @workgroup_size(64, 1, 1)
fn gather_vec4_f32_out(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let rows = array<u32, 8>(u.section0_rows, u.section1_rows, u.section2_rows, u.section3_rows, u.section4_rows, u.section5_rows, u.section6_rows, u.section7_rows);
  let H4 = u.hidden_size / 4u;
  let total = u.num_tokens * H4;
  let stride = nwg.x * WG;
  for (var q = gid.x; q < total; q += stride) {
    let t = q / H4;
    let h = 4u * (q - t * H4);
    let id = indices[u.index_offset + t];
    var v = vec4<f32>(0.0);
    if (id < u.vocab_size) {
      var start = 0u;
      for (var k = 0u; k < 8u; k++) {
        if (id < start + rows[k]) {
          v = section_at4(k, (id - start) * u.input_hidden_size + u.hidden_offset + h);
          break;
        }
        start += rows[k];
      }
    }
    output[q] = v;
  }
}