/** max |got - want| / max |want| (the relative error the kernel and model tests bound). */
export function maxRelErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let err = 0;
  let max = 0;
  for (let i = 0; i < want.length; i++) {
    err = Math.max(err, Math.abs(got[i]! - want[i]!));
    max = Math.max(max, Math.abs(want[i]!));
  }
  if (max === 0) throw new Error('maxRelErr: the reference is all zeros');
  return err / max;
}
