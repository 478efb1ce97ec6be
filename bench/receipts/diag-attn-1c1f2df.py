# scratch diagnostic (device only, not committed): leave parts of attention-split's partial pass out
# modes: base | noqk (scores not computed: one use per K load) | nopv (V products out: one use per V load) | none
import sys, subprocess
mode = sys.argv[1]
p = 'src/kernels/ops/attention-split.wgsl.jinja'
src = subprocess.run(['git', 'show', 'HEAD:' + p], capture_output=True, text=True, check=True).stdout
qk = "    a{{ j }} += dot(widen(kx{{ v }})[{{ e }}], q_sh[{{ j }}u * (D / 4u) + qv + {{ (v * P if KSH else v) * (VW // 4) + e }}u]);"
pv = "      o{{ j }}[{{ e }}] += w{{ j }} * widen(vx{{ r }})[{{ e }}];"
assert qk in src and pv in src
if mode in ('noqk', 'none'):
    src = src.replace(qk, "{% if e == 0 %}    a{{ j }} += f32(kx{{ v }}.x & 1u) * q_sh[{{ j }}u].x;{% endif %}")
if mode in ('nopv', 'none'):
    src = src.replace(pv, "{% if e == 0 %}      o{{ j }}[0].x += w{{ j }} * f32(vx{{ r }}.x & 1u);{% endif %}")
open(p, 'w').write(src)
subprocess.run(['node', '--import', 'tsx', 'scripts/gen-sources.ts'], check=True)
