// expert-group-slots.wgsl (QMoE.GroupStage, variant quant_grouped_sgmat_f16_routed): groups a chunk's routes by expert, in tiles.
//
// One workgroup of 256 invocations for the whole chunk. A slot s < params.tokenCount * k (k = 4)
// is route s % k of chunk token s / k; its expert is route_expert[params.tokenOffset * k + s] (E = 32).
//   slot_list = the chunk's slots ordered by expert (counting sort; the order inside one expert is not fixed,
//               and does not need to be: every slot's result is computed independently)
//   tile_meta[0] = number of tiles n; tile i < n: tile_meta[1 + 3i] = expert, [2 + 3i] = first index into slot_list,
//               [3 + 3i] = slot count (1..32). n <= ceil(slots / 32) + E = the dispatch's tile count.
// Workgroup memory: 2 * E u32 counters (256 bytes).
// Dispatch: [1, 1, 1].
//
// Bindings (group 0):
//   0  route_expert  storage, read        u32 [T, k]
//   1  slot_list     storage, read_write  u32 [>= chunk tokens * k] (written)
//   2  tile_meta     storage, read_write  u32 [1 + 3 * 48] (written)
//   3  params        uniform             Params (below)
// Workgroup size: (256, 1, 1).

struct Params {
  tokenOffset: u32,
  tokenCount: u32,
}

const K: u32 = 4u;
const E: u32 = 32u;
const TILE_M: u32 = 32u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> route_expert: array<u32>;
@group(0) @binding(1) var<storage, read_write> slot_list: array<u32>;
@group(0) @binding(2) var<storage, read_write> tile_meta: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> counts: array<atomic<u32>, E>;
var<workgroup> cursor: array<atomic<u32>, E>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(local_invocation_index) tid: u32) {
  let slots = params.tokenCount * K;
  let base = params.tokenOffset * K;
  for (var e = tid; e < E; e += WG) {
    atomicStore(&counts[e], 0u);
  }
  workgroupBarrier();
  for (var s = tid; s < slots; s += WG) {
    atomicAdd(&counts[route_expert[base + s]], 1u);
  }
  workgroupBarrier();
  if (tid == 0u) {
    var start = 0u;
    var tiles = 0u;
    for (var e = 0u; e < E; e++) {
      let c = atomicLoad(&counts[e]);
      atomicStore(&cursor[e], start);
      for (var first = 0u; first < c; first += TILE_M) {
        tile_meta[1u + 3u * tiles] = e;
        tile_meta[2u + 3u * tiles] = start + first;
        tile_meta[3u + 3u * tiles] = min(TILE_M, c - first);
        tiles++;
      }
      start += c;
    }
    tile_meta[0] = tiles;
  }
  workgroupBarrier();
  for (var s = tid; s < slots; s += WG) {
    let e = route_expert[base + s];
    slot_list[atomicAdd(&cursor[e], 1u)] = s;
  }
}
