// .npy reading for the ONNX Runtime tools (ort_bench.mjs, ort_eval.mjs): float32 / float64 / int64 / int32,
// C order.
import fs from 'node:fs';

export function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not an .npy file`);
  const major = b[6];
  const hlen = major >= 2 ? b.readUInt32LE(8) : b.readUInt16LE(8);
  const hoff = major >= 2 ? 12 : 10;
  const header = b.toString('latin1', hoff, hoff + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran order unsupported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter((s) => s.length).map(Number);
  const raw = b.subarray(hoff + hlen);
  const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length);
  const ctor = { '<f4': Float32Array, '<f8': Float64Array, '<i8': BigInt64Array, '<i4': Int32Array }[descr];
  if (!ctor) throw new Error(`${file}: dtype ${descr} unsupported`);
  return { shape, data: new ctor(ab), descr };
}
